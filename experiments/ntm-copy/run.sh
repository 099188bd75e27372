#!/usr/bin/env bash
# The NTM copy task (Graves, Wayne & Danihelka 2014, sec. 4.1): learning curves of the NTM with a
# feed-forward and with an LSTM controller beside the LSTM baseline (Fig. 3), generalisation to
# longer sequences (Figs. 4-5) as a table of bit errors, and the memory use of one length-80
# sequence (Fig. 6), for every seed.
# Chains: attn-data copy -> attn-ntm train (NTMs, and --baseline lstm) -> attn-ntm eval on longer
# sequences -> attn-ntm run -> attn-plot weights, attn-plot curve.
#
# Usage: experiments/ntm-copy/run.sh [BUILD_DIR]
# Environment (defaults in brackets): SEEDS ["1 2 3"], SEQUENCES [50000 per model], LENGTHS
# ["10 20 30 50 80 120"; 80 among them for the picture], EPOCH_SIZE [1000], THREADS [1], REUSE [0;
# 1 keeps trained models], BASELINE_LAYERS [3], FF_OPTIONS [Graves' Table 1: a feed-forward
# controller of 100 units, one read and one write head; a memory of 256 rows].
# Results: results/ntm-copy/ — train.h5, test_L.h5, ntm_ff_sS.h5, ntm_sS.h5 and lstm_sS.h5 (with
# their learning curves in /metrics), curves.png, run_*.h5, weights.png (feed-forward NTM) and
# weights_lstm_controller.png, table.md; the summary to stdout.
set -euo pipefail
. "$(cd "$(dirname "$0")" && pwd)/../lib/ntm.sh"
SEQUENCES=${SEQUENCES:-50000}
LENGTHS=${LENGTHS:-10 20 30 50 80 120}
# Graves' feed-forward NTM for copy (Table 1: 100 units, one read and one write head) with a
# memory of 256 rows instead of 128: tested to length 120, a 128-row memory leaves 8 rows, and
# the write head parks at the memory's far end during the output phase (README.md, "Why 256
# rows"), overwriting the end of a 120-long sequence before it is read.
FF_OPTIONS=${FF_OPTIONS-"--controller ff --controller-size 100 --memory 256,20"}
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

THRESHOLD=0.05 WEIGHTS_TEST=80 ntm_experiment copy "Copy, trained on lengths 1-20; columns: test length" "$LENGTHS"
echo "ntm-copy: $((SECONDS - start)) s wall time"
