#!/usr/bin/env bash
# The NTM priority-sort task (Graves, Wayne & Danihelka 2014, sec. 4.5): 20 vectors of 8 bits
# with a priority each; the 16 of highest priority are to be emitted in order. Learning curves of
# the NTM beside the LSTM baseline (Fig. 16), the test table, and the memory use of one sequence
# (Fig. 17), for every seed. As Graves et al., the NTM has several heads (5 read, 3 write) and a
# lower learning rate (3e-5).
#
# Usage: experiments/ntm-priority-sort/run.sh [BUILD_DIR]
# Environment (defaults in brackets): SEEDS ["1 2 3"], SEQUENCES [100000 per model], EPOCH_SIZE
# [1000], THREADS [1], REUSE [0], BASELINE_LAYERS [3].
# Results: results/ntm-priority-sort/ — train.h5, test_sort.h5, ntm_sS.h5, lstm_sS.h5, table.md,
# curves.png, run.h5, weights.png.
set -euo pipefail
. "$(cd "$(dirname "$0")" && pwd)/../lib/ntm.sh"
SEQUENCES=${SEQUENCES:-100000}
OUT=$ROOT/results/ntm-priority-sort
mkdir -p "$OUT"
ntm_check_tools ntm-priority-sort
start=$SECONDS

echo "== data: priority sort, 20 vectors of 8 bits in, the 16 of highest priority out"
"$BIN/attn-data" priority-sort --n 100000 --valid-n 500 --test-n 500 --seed 1 --out "$OUT/train.h5" --quiet
"$BIN/attn-data" priority-sort --n 1 --valid-n 1 --test-n 100 --seed 400 --out "$OUT/test_sort.h5" --quiet
ntm_experiment priority-sort "Priority sort" "sort" --read-heads 5 --write-heads 3 --lr 3e-5
echo "ntm-priority-sort: $((SECONDS - start)) s wall time"
