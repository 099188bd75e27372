#!/usr/bin/env bash
# RNN encoder-decoder with additive attention (issue 4, "Speed"), attnlab vs PyTorch side by
# side: training target tokens/s at 1 and 2 threads, with the ratio to PyTorch's best and
# attnlab's fraction of the sgemm-bound limit. See README.md in this folder.
# Usage: experiments/perf/seq2seq/run.sh [BUILD_DIR]
# Environment: PYTHON  interpreter with torch (default /usr/bin/python3)
#              ROUNDS  repetitions of the whole comparison (default 3; the table shows the median)
#              STEPS   timed steps per measurement, median taken (default 5)
#              THREADS thread counts (default "1 2")
#              NOMMAP, WAIT_IDLE: see ../common.sh
# Writes results/perf/seq2seq/raw.txt (every line) and table.txt.
set -euo pipefail

BUILD=${1:-build}
PYTHON=${PYTHON:-/usr/bin/python3}
ROUNDS=${ROUNDS:-3}
STEPS=${STEPS:-5}
THREADS=${THREADS:-1 2}
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../common.sh"
EXE=$BUILD/bench/perf_seq2seq
OUT=results/perf/seq2seq
mkdir -p "$OUT"

if [ ! -x "$EXE" ]; then
  echo "perf/seq2seq: $EXE not found; build with benchmarks (make -f Makefile.scripts build)" >&2
  exit 1
fi
if ! "$PYTHON" -c 'import torch' 2>/dev/null; then
  echo "perf/seq2seq: $PYTHON cannot import torch (make -f Makefile.scripts perf-deps)" >&2
  exit 1
fi

raw=$OUT/raw.txt
start_load=$(load)
{
  echo "# $(date -u +%FT%TZ) $(uname -n), load average at start: $start_load"
  echo "# rounds $ROUNDS, steps $STEPS, threads $THREADS"
} >"$raw"
echo "perf/seq2seq: $ROUNDS round(s), load average $start_load" >&2
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
