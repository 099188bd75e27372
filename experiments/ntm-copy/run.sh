#!/usr/bin/env bash
# The NTM copy task (Graves, Wayne & Danihelka 2014, sec. 4.1): NTM and LSTM baseline learning
# curves (Fig. 3), generalisation to longer sequences (Figs. 4-5) as a table of bit errors, and
# the memory use of one length-80 sequence (Fig. 6), for every seed.
# Chains: attn-data copy -> attn-ntm train (NTM, and --baseline lstm) -> attn-ntm eval on longer
# sequences -> attn-ntm run -> attn-plot weights, attn-plot curve.
#
# Usage: experiments/ntm-copy/run.sh [BUILD_DIR]
# Environment (defaults in brackets): SEEDS ["1 2 3"], SEQUENCES [50000 per model], LENGTHS
# ["10 20 30 50 80 120"], EPOCH_SIZE [1000], THREADS [1], REUSE [0; 1 keeps trained models],
# BASELINE_LAYERS [3].
# Results: results/ntm-copy/ — train.h5, test_L.h5, ntm_sS.h5 and lstm_sS.h5 (with their learning
# curves in /metrics), curves.png, run80.h5 and weights80.png, table.md; the summary to stdout.
set -euo pipefail
. "$(cd "$(dirname "$0")" && pwd)/../lib/ntm.sh"
SEQUENCES=${SEQUENCES:-50000}
LENGTHS=${LENGTHS:-10 20 30 50 80 120}
OUT=$ROOT/results/ntm-copy
mkdir -p "$OUT"
ntm_check_tools ntm-copy
start=$SECONDS

echo "== data: copy, 8 bits, lengths 1-20 for training; 100 test sequences of each length in: $LENGTHS"
"$BIN/attn-data" copy --width 8 --min-len 1 --max-len 20 --n 100000 --valid-n 500 --test-n 500 --seed 1 \
  --out "$OUT/train.h5" --quiet
for L in $LENGTHS; do
  "$BIN/attn-data" copy --width 8 --min-len "$L" --max-len "$L" --n 1 --valid-n 1 --test-n 100 --seed $((100 + L)) \
    --out "$OUT/test_$L.h5" --quiet
done

for s in $SEEDS; do
  echo "== seed $s: NTM (LSTM controller 100, memory 128 x 20, 1 read + 1 write head), RMSProp (Graves)"
  ntm_train "ntm_s$s" "$s"
  echo "== seed $s: LSTM baseline ($BASELINE_LAYERS layers, the NTM's parameter count)"
  ntm_train "lstm_s$s" "$s" --baseline lstm --baseline-layers "$BASELINE_LAYERS"
done

echo "== generalisation"
{
  echo "Copy: bit errors in % of the output bits (100 test sequences per length); trained on lengths 1-20,"
  echo "$SEQUENCES sequences per model. 'to 0.05 bits': sequences seen when the validation cost first fell"
  echo "below 0.05 bits per sequence."
  echo
  header="| model | to 0.05 bits |"
  rule="|---|---|"
  for L in $LENGTHS; do header="$header length $L |"; rule="$rule---|"; done
  echo "$header"
  echo "$rule"
  for kind in ntm lstm; do
    for s in $SEEDS; do
      row="| $kind seed $s | $(ntm_first_below "$OUT/${kind}_s$s.h5" 0.05) |"
      for L in $LENGTHS; do
        read -r rate _ _ <<<"$(ntm_eval "$OUT/${kind}_s$s.h5" "$OUT/test_$L.h5")"
        row="$row $(awk -v r="$rate" 'BEGIN { printf "%.3g", 100 * r }') |"
      done
      echo "$row"
    done
  done
} | tee "$OUT/table.md"

models=()
for s in $SEEDS; do models+=("$OUT/ntm_s$s.h5" "$OUT/lstm_s$s.h5"); done
ntm_curves "copy: validation cost, NTM and LSTM" "$OUT/curves.png" "${models[@]}"
first=${SEEDS%% *}
if [ -f "$OUT/test_80.h5" ]; then
  "$BIN/attn-ntm" run --model "$OUT/ntm_s$first.h5" --data "$OUT/test_80.h5" --out "$OUT/run80.h5" --quiet
  "$BIN/attn-plot" weights "$OUT/run80.h5" --index 0 --inputs /inputs --outputs /outputs --write /write_weights \
    --read /read_weights --title "copy, length 80: NTM seed $first" --out "$OUT/weights80.png" --quiet
fi
echo "curves: $OUT/curves.png; memory use at length 80: $OUT/weights80.png"
echo "ntm-copy: $((SECONDS - start)) s wall time"
