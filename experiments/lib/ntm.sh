# Shared by experiments/ntm-*/run.sh (sourced, not run): training an NTM and its LSTM baseline
# per seed on one task, evaluating them on longer sequences, the learning-curve and weighting
# pictures, and the tables. Each run.sh sets the task's options and calls these.
#
# Environment (defaults in brackets): SEEDS ["1 2 3"], SEQUENCES [training sequences per model],
# EPOCH_SIZE [1000], THREADS [1], PYTHON [/usr/bin/python3, with h5py, for the tables],
# BASELINE_LAYERS [3] (Graves et al. 2014 use 3-layer LSTM baselines), TRAIN_OPTIONS [""; more
# attn-ntm train options for every model, e.g. "--curriculum"].

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

# ntm_experiment TASK TITLE TEST_NAMES MODEL_OPTIONS...: trains the NTM and its LSTM baseline for
# every seed on $OUT/train.h5, writes the generalisation table ($OUT/table.md: bit errors in % and
# per sequence on $OUT/test_<name>.h5 for every name), the learning curves ($OUT/curves.png) and
# the memory use of the first test set's first sequence ($OUT/weights.png).
ntm_experiment() {
  local task=$1 title=$2 tests=$3
  shift 3
  local s name
  for s in $SEEDS; do
    echo "== seed $s: NTM $*"
    ntm_train "ntm_s$s" "$s" "$@"
    echo "== seed $s: LSTM baseline ($BASELINE_LAYERS layers, the NTM's parameter count)"
    ntm_train "lstm_s$s" "$s" "$@" --baseline lstm --baseline-layers "$BASELINE_LAYERS"
  done
  echo "== generalisation"
  {
    echo "$title: bit errors in % of the output bits / per sequence, 100 test sequences each; $SEQUENCES"
    echo "training sequences per model. 'to 1 bit': sequences seen when the validation cost first fell below"
    echo "1 bit per sequence ('-': never)."
    echo
    local header="| model | to 1 bit |" rule="|---|---|"
    for name in $tests; do header="$header $name |"; rule="$rule---|"; done
    echo "$header"
    echo "$rule"
    local kind row rate per
    for kind in ntm lstm; do
      for s in $SEEDS; do
        row="| $kind seed $s | $(ntm_first_below "$OUT/${kind}_s$s.h5" 1) |"
        for name in $tests; do
          read -r rate per _ <<<"$(ntm_eval "$OUT/${kind}_s$s.h5" "$OUT/test_$name.h5")"
          row="$row $(awk -v r="$rate" -v p="$per" 'BEGIN { printf "%.3g%% / %.3g", 100 * r, p }') |"
        done
        echo "$row"
      done
    done
  } | tee "$OUT/table.md"
  local models=()
  for s in $SEEDS; do models+=("$OUT/ntm_s$s.h5" "$OUT/lstm_s$s.h5"); done
  ntm_curves "$task: validation cost, NTM and LSTM" "$OUT/curves.png" "${models[@]}"
  local first=${SEEDS%% *} test1=${tests%% *}
  "$BIN/attn-ntm" run --model "$OUT/ntm_s$first.h5" --data "$OUT/test_$test1.h5" --out "$OUT/run.h5" --quiet
  "$BIN/attn-plot" weights "$OUT/run.h5" --index 0 --inputs /inputs --outputs /outputs --write /write_weights \
    --read /read_weights --title "$task ($test1): NTM seed $first" --out "$OUT/weights.png" --quiet
  echo "curves: $OUT/curves.png; memory use: $OUT/weights.png"
}
