# Shared by experiments/ntm-*/run.sh (sourced, not run): training an NTM and its LSTM baseline
# per seed on one task, evaluating them on longer sequences, the learning-curve and weighting
# pictures, and the tables. Each run.sh sets the task's options and calls these.
#
# Environment (defaults in brackets): SEEDS ["1 2 3"], SEQUENCES [training sequences per model],
# EPOCH_SIZE [1000], THREADS [1], PYTHON [/usr/bin/python3, with h5py, for the tables],
# BASELINE_LAYERS [3] (Graves et al. 2014 use 3-layer LSTM baselines), TRAIN_OPTIONS [""; more
# attn-ntm train options for every model, e.g. "--curriculum"], FF_OPTIONS [each task's Graves
# Table 1 feed-forward NTM; "" trains none].

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=$(cd "${1:-$ROOT/build}" && pwd)
BIN=$BUILD/apps
SEEDS=${SEEDS:-1 2 3}
EPOCH_SIZE=${EPOCH_SIZE:-1000}
THREADS=${THREADS:-1}
PYTHON=${PYTHON:-/usr/bin/python3}
BASELINE_LAYERS=${BASELINE_LAYERS:-3}
export OMP_WAIT_POLICY=PASSIVE

ntm_check_tools() {
  for tool in attn-data attn-ntm attn-plot; do
    [ -x "$BIN/$tool" ] || { echo "$1: $BIN/$tool is missing; build first (make -f Makefile.scripts build)" >&2; exit 1; }
  done
  "$PYTHON" -c 'import h5py' 2>/dev/null || { echo "$1: $PYTHON cannot import h5py (make -f Makefile.scripts deps)" >&2; exit 1; }
}

# ntm_train NAME SEED MODEL_OPTIONS...: trains $OUT/NAME.h5 on $OUT/train.h5 for $SEQUENCES
# sequences (a model file that already holds them is kept: REUSE runs).
ntm_train() {
  local name=$1 seed=$2
  shift 2
  local model=$OUT/$name.h5
  if [ -f "$model" ] && [ "${REUSE:-0}" = 1 ]; then echo "$name: kept (REUSE=1)"; return; fi
  rm -f "$OUT/$name".step*.h5
  "$BIN/attn-ntm" train --data "$OUT/train.h5" --model "$model" --epochs $((SEQUENCES / EPOCH_SIZE)) \
    --epoch-size "$EPOCH_SIZE" --seed "$seed" --threads "$THREADS" --quiet ${TRAIN_OPTIONS:-} "$@" | tee "$OUT/$name.log"
}

# ntm_eval MODEL TEST_FILE: "bit_error_rate bit_errors_per_sequence bits_per_sequence".
ntm_eval() {
  "$BIN/attn-ntm" eval --model "$1" --data "$2" --threads "$THREADS" --quiet |
    sed -n 's/.*cost \([0-9.e+-]*\) bits per sequence, \([0-9.e+-]*\) bit errors per sequence, bit error rate \([0-9.e+-]*\),.*/\3 \2 \1/p'
}

# ntm_curves TITLE PICTURE MODEL...: valid cost against sequences seen, one line per model.
ntm_curves() {
  local title=$1 picture=$2
  shift 2
  local args=()
  for m in "$@"; do
    args+=(--series "$m::/metrics/trained_sequences:/metrics/valid_loss" --label "$(basename "$m" .h5)")
  done
  "$BIN/attn-plot" curve "${args[@]}" --log-y --x-title "sequences seen" --y-title "cost per sequence (bits)" \
    --title "$title" --out "$picture" --quiet
}

# ntm_first_below MODEL BITS: the sequences seen when the validation cost first fell below BITS
# ("-" if never).
ntm_first_below() {
  "$PYTHON" - "$1" "$2" <<'PY'
import sys, h5py, numpy as np
f = h5py.File(sys.argv[1], "r")
seen, cost = f["/metrics/trained_sequences"][()], f["/metrics/valid_loss"][()]
below = np.nonzero(cost < float(sys.argv[2]))[0]
print(int(seen[below[0]]) if len(below) else "-")
PY
}

# ntm_median VALUE...: the median of numbers ("-", never, sorts last); empty for no values.
ntm_median() {
  printf '%s\n' "$@" | sed 's/^-$/inf/' | sort -g | awk '{ v[NR] = $1 } END {
    if (NR == 0) exit
    m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
    if (m == "inf" || m == "+inf" || m >= 1e300) print "-"; else printf "%.6g\n", m }'
}

# ntm_experiment TASK TITLE TEST_NAMES MODEL_OPTIONS...: trains, for every seed on $OUT/train.h5,
# the NTM with a feed-forward controller in Graves et al.'s Table 1 settings for the task
# ($FF_OPTIONS; none when empty), the NTM with an LSTM controller (MODEL_OPTIONS) and its LSTM
# baseline of the same parameter count; writes the generalisation table ($OUT/table.md: bit errors
# in % and per sequence on $OUT/test_<name>.h5 for every name, every seed and the median of the
# seeds), the learning curves ($OUT/curves.png) and the memory use of the first seed's NTMs on the
# first sequence of $OUT/test_$WEIGHTS_TEST.h5 (the first test set by default; weights.png for the
# feed-forward NTM, weights_lstm_controller.png for the other). THRESHOLD [1]: the "to X bits"
# column, the sequences seen when the validation cost first fell below X bits per sequence.
ntm_experiment() {
  local task=$1 title=$2 tests=$3
  shift 3
  local threshold=${THRESHOLD:-1} s name kind kinds="ntm lstm"
  [ -n "${FF_OPTIONS:-}" ] && kinds="ntm_ff $kinds"
  for s in $SEEDS; do
    if [ -n "${FF_OPTIONS:-}" ]; then
      echo "== seed $s: NTM, feed-forward controller: $FF_OPTIONS"
      # shellcheck disable=SC2086 # FF_OPTIONS is a list of options
      ntm_train "ntm_ff_s$s" "$s" $FF_OPTIONS
    fi
    echo "== seed $s: NTM, LSTM controller $*"
    ntm_train "ntm_s$s" "$s" "$@"
    echo "== seed $s: LSTM baseline ($BASELINE_LAYERS layers, the LSTM-controller NTM's parameter count)"
    ntm_train "lstm_s$s" "$s" "$@" --baseline lstm --baseline-layers "$BASELINE_LAYERS"
  done
  echo "== generalisation"
  {
    echo "$title: bit errors in % of the output bits / per sequence, 100 test sequences each; $SEQUENCES"
    echo "training sequences per model. 'to $threshold bit': sequences seen when the validation cost first fell"
    echo "below $threshold bits per sequence ('-': never). ntm_ff: feed-forward controller ($FF_OPTIONS);"
    echo "ntm: LSTM controller; lstm: the LSTM baseline. Median: of the seeds, column by column."
    echo
    local header="| model | to $threshold bit |" rule="|---|---|"
    for name in $tests; do header="$header $name |"; rule="$rule---|"; done
    echo "$header"
    echo "$rule"
    local row rate per first k
    for kind in $kinds; do
      local firsts=() rates=() pers=()
      for s in $SEEDS; do
        first=$(ntm_first_below "$OUT/${kind}_s$s.h5" "$threshold")
        firsts+=("$first")
        row="| $kind seed $s | $first |"
        k=0
        for name in $tests; do
          read -r rate per _ <<<"$(ntm_eval "$OUT/${kind}_s$s.h5" "$OUT/test_$name.h5")"
          rates[$k]="${rates[$k]:-} $rate"
          pers[$k]="${pers[$k]:-} $per"
          row="$row $(awk -v r="$rate" -v p="$per" 'BEGIN { printf "%.3g%% / %.3g", 100 * r, p }') |"
          k=$((k + 1))
        done
        echo "$row"
      done
      row="| **$kind median** | $(ntm_median "${firsts[@]}") |"
      for ((k = 0; k < ${#rates[@]}; k++)); do
        # shellcheck disable=SC2086 # lists of numbers
        row="$row $(awk -v r="$(ntm_median ${rates[$k]})" -v p="$(ntm_median ${pers[$k]})" \
          'BEGIN { printf "%.3g%% / %.3g", 100 * r, p }') |"
      done
      echo "$row"
    done
  } | tee "$OUT/table.md"
  local models=()
  for s in $SEEDS; do for kind in $kinds; do models+=("$OUT/${kind}_s$s.h5"); done; done
  ntm_curves "$task: validation cost, NTM and LSTM" "$OUT/curves.png" "${models[@]}"
  local first=${SEEDS%% *} test1=${WEIGHTS_TEST:-${tests%% *}} picture
  for kind in ntm_ff ntm; do
    [ -f "$OUT/${kind}_s$first.h5" ] && [ -f "$OUT/test_$test1.h5" ] || continue
    picture=$OUT/weights.png
    [ "$kind" = ntm ] && [ -n "${FF_OPTIONS:-}" ] && picture=$OUT/weights_lstm_controller.png
    "$BIN/attn-ntm" run --model "$OUT/${kind}_s$first.h5" --data "$OUT/test_$test1.h5" --out "$OUT/run_$kind.h5" --quiet
    "$BIN/attn-plot" weights "$OUT/run_$kind.h5" --index 0 --inputs /inputs --outputs /outputs --write /write_weights \
      --read /read_weights --title "$task ($test1): $kind seed $first" --out "$picture" --quiet
  done
  echo "curves: $OUT/curves.png; memory use: $OUT/weights*.png"
}
