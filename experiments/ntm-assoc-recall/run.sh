#!/usr/bin/env bash
# The NTM associative-recall task (Graves, Wayne & Danihelka 2014, sec. 4.3): learning curves of
# the NTM beside the LSTM baseline (Fig. 10), generalisation from the 2-6 items trained on to up to
# 12 (Fig. 11) as a table of bit errors, and the memory use of one query (Fig. 12), for every seed.
# Items are 3 vectors of 6 bits.
#
# Usage: experiments/ntm-assoc-recall/run.sh [BUILD_DIR]
# Environment (defaults in brackets): SEEDS ["1 2 3"], SEQUENCES [100000 per model], EPOCH_SIZE
# [1000], THREADS [1], REUSE [0], BASELINE_LAYERS [3], FF_OPTIONS [Graves' Table 1 for the task:
# a feed-forward controller of 256 units, 4 read and 4 write heads].
# Results: results/ntm-assoc-recall/ — train.h5, test_<k>items.h5, ntm_ff_sS.h5, ntm_sS.h5, lstm_sS.h5,
# table.md, curves.png, run_*.h5, weights.png (feed-forward NTM), weights_lstm_controller.png.
set -euo pipefail
. "$(cd "$(dirname "$0")" && pwd)/../lib/ntm.sh"
SEQUENCES=${SEQUENCES:-100000}
FF_OPTIONS=${FF_OPTIONS-"--controller ff --controller-size 256 --read-heads 4 --write-heads 4"}
OUT=$ROOT/results/ntm-assoc-recall
mkdir -p "$OUT"
ntm_check_tools ntm-assoc-recall
start=$SECONDS

echo "== data: associative recall, items of 3 x 6 bits, 2-6 items for training"
"$BIN/attn-data" assoc-recall --min-items 2 --max-items 6 --n 100000 --valid-n 500 --test-n 500 --seed 1 \
  --out "$OUT/train.h5" --quiet
tests="6items 8items 10items 12items"
for t in $tests; do
  k=${t%items}
  "$BIN/attn-data" assoc-recall --min-items "$k" --max-items "$k" --n 1 --valid-n 1 --test-n 100 --seed $((300 + k)) \
    --out "$OUT/test_$t.h5" --quiet
done
ntm_experiment assoc-recall "Associative recall" "$tests"
echo "ntm-assoc-recall: $((SECONDS - start)) s wall time"
