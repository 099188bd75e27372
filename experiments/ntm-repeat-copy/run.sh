#!/usr/bin/env bash
# The NTM repeat-copy task (Graves, Wayne & Danihelka 2014, sec. 4.2): learning curves of the NTM
# beside the LSTM baseline (Fig. 7), generalisation to longer sequences and more repeats than
# trained on (Fig. 8) as a table of bit errors, and the memory use of one sequence (Fig. 9), for
# every seed. Trained on 8-bit sequences of length 1-10 repeated 1-10 times.
#
# Usage: experiments/ntm-repeat-copy/run.sh [BUILD_DIR]
# Environment (defaults in brackets): SEEDS ["1 2 3"], SEQUENCES [100000 per model], EPOCH_SIZE
# [1000], THREADS [1], REUSE [0], BASELINE_LAYERS [3], FF_OPTIONS [Graves' Table 1 for the task:
# a feed-forward controller of 100 units, one read and one write head].
# Results: results/ntm-repeat-copy/ — train.h5, test_*.h5, ntm_ff_sS.h5, ntm_sS.h5, lstm_sS.h5, table.md,
# curves.png, run_*.h5, weights.png (feed-forward NTM), weights_lstm_controller.png.
set -euo pipefail
. "$(cd "$(dirname "$0")" && pwd)/../lib/ntm.sh"
SEQUENCES=${SEQUENCES:-100000}
FF_OPTIONS=${FF_OPTIONS-"--controller ff --controller-size 100"}
OUT=$ROOT/results/ntm-repeat-copy
mkdir -p "$OUT"
ntm_check_tools ntm-repeat-copy
start=$SECONDS

echo "== data: repeat copy, 8 bits, length 1-10, 1-10 repeats (count normalised over 1-10)"
"$BIN/attn-data" repeat-copy --min-len 1 --max-len 10 --min-repeat 1 --max-repeat 10 --n 50000 --valid-n 500 \
  --test-n 500 --seed 1 --out "$OUT/train.h5" --quiet
# Test sets "L<length>c<repeats>": in the training range, more repeats, longer sequences.
tests="L10c10 L10c15 L10c20 L15c10 L20c10"
for t in $tests; do
  len=${t#L}; len=${len%c*}; rep=${t#*c}
  "$BIN/attn-data" repeat-copy --min-len "$len" --max-len "$len" --min-repeat "$rep" --max-repeat "$rep" \
    --norm-repeat 10 --n 1 --valid-n 1 --test-n 100 --seed $((200 + len * 31 + rep)) --out "$OUT/test_$t.h5" --quiet
done
ntm_experiment repeat-copy "Repeat copy" "$tests"
echo "ntm-repeat-copy: $((SECONDS - start)) s wall time"
