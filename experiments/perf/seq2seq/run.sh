#!/usr/bin/env bash
# RNN encoder-decoder with additive attention (issue 4, "Speed"), attnlab vs PyTorch side by
# side: training target tokens/s at 1 and 2 threads, with the ratio to PyTorch's best and
# attnlab's fraction of the sgemm-bound limit. See README.md in this folder.
# Usage: experiments/perf/seq2seq/run.sh [BUILD_DIR]
# Environment: PYTHON, ROUNDS, STEPS, THREADS, NOMMAP, WAIT_IDLE, BLAS_CORE: see ../common.sh
# Writes results/perf/seq2seq/raw.txt (every line) and table.txt.
set -euo pipefail

BUILD=${1:-build}
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../common.sh"
EXE=$BUILD/bench/perf_seq2seq
perf_start seq2seq "$EXE"
torch_run() { OMP_WAIT_POLICY=PASSIVE "$PYTHON" "$HERE/torch_seq2seq.py" --steps "$STEPS" "$@"; }
torch_nommap() {   # torch_nommap IMPL ARGS...
  [ "$NOMMAP" = 1 ] || return 0
  GLIBC_TUNABLES=$NOMMAP_TUNABLES torch_run --label "$1-nommap" --impl "$@"
}
for round in $(seq "$ROUNDS"); do
  for n in $THREADS; do
    echo "perf/seq2seq: round $round, $n thread(s), load $(load)" >&2
    wait_idle
    "$EXE" --threads "$n" --steps "$STEPS" | tee -a "$raw"
    torch_run --impl torch --threads "$n" | tee -a "$raw"
    torch_nommap torch --threads "$n" | tee -a "$raw"
    torch_run --impl torch-tutor --threads "$n" | tee -a "$raw"
    torch_nommap torch-tutor --threads "$n" | tee -a "$raw"
  done
done
end_load=$(load)
echo "# load average at end: $end_load" >>"$raw"

"$PYTHON" "$HERE/../table.py" "$raw" --title "Seq2seq GRU + additive attention" \
  --ref PyTorch=torch,torch-tutor --ref nommap=torch-nommap,torch-tutor-nommap | tee "$OUT/table.txt"
echo "load average at start and end: $start_load / $end_load" | tee -a "$OUT/table.txt"
