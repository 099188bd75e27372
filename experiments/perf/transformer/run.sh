#!/usr/bin/env bash
# Transformer T-small, attnlab vs PyTorch side by side (issue 3, "Speed"): training target
# tokens/s and greedy-decoding tokens/s at 1 and 2 threads, with the ratio to PyTorch's best and
# attnlab's fraction of the sgemm-bound limit. See README.md in this folder.
# Usage: experiments/perf/transformer/run.sh [BUILD_DIR]
# Environment: PYTHON  interpreter with torch (default /usr/bin/python3)
#              ROUNDS  repetitions of the whole comparison (default 3; the table shows the median)
#              STEPS   timed repetitions per measurement, median taken (default 5)
#              THREADS thread counts (default "1 2")
#              NOMMAP, WAIT_IDLE: see ../common.sh
# Writes results/perf/transformer/raw.txt (every line) and table.txt.
set -euo pipefail

BUILD=${1:-build}
PYTHON=${PYTHON:-/usr/bin/python3}
ROUNDS=${ROUNDS:-3}
STEPS=${STEPS:-5}
THREADS=${THREADS:-1 2}
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../common.sh"
EXE=$BUILD/bench/perf_transformer
OUT=results/perf/transformer
mkdir -p "$OUT"

if [ ! -x "$EXE" ]; then
  echo "perf/transformer: $EXE not found; build with benchmarks (make -f Makefile.scripts build)" >&2
  exit 1
fi
if ! "$PYTHON" -c 'import torch' 2>/dev/null; then
  echo "perf/transformer: $PYTHON cannot import torch (make -f Makefile.scripts perf-deps)" >&2
  exit 1
fi

raw=$OUT/raw.txt
start_load=$(load)
{
  echo "# $(date -u +%FT%TZ) $(uname -n), load average at start: $start_load"
  echo "# rounds $ROUNDS, steps $STEPS, threads $THREADS"
} >"$raw"
echo "perf/transformer: $ROUNDS round(s), load average $start_load" >&2
# PyTorch's OpenMP threads would otherwise spin while waiting (DESIGN.md, performance rules).
torch_run() { OMP_WAIT_POLICY=PASSIVE "$PYTHON" "$HERE/torch_transformer.py" --steps "$STEPS" "$@"; }
torch_nommap() {
  [ "$NOMMAP" = 1 ] || return 0
  GLIBC_TUNABLES=$NOMMAP_TUNABLES torch_run --label torch-nommap "$@"
}
for round in $(seq "$ROUNDS"); do
  for n in $THREADS; do
    echo "perf/transformer: round $round, $n thread(s), load $(load)" >&2
    for mode in train decode; do
      wait_idle
      "$EXE" --mode $mode --threads "$n" --steps "$STEPS" | tee -a "$raw"
      torch_run --mode $mode --threads "$n" | tee -a "$raw"
      torch_nommap --mode $mode --threads "$n" | tee -a "$raw"
    done
    torch_run --mode decode-rerun --threads "$n" --steps 3 --warmup 1 | tee -a "$raw"
  done
done
end_load=$(load)
echo "# load average at end: $end_load" >>"$raw"

"$PYTHON" "$HERE/../table.py" "$raw" --title "Transformer T-small" --ref PyTorch=torch \
  --ref nommap=torch-nommap --ref rerun=torch-rerun | tee "$OUT/table.txt"
echo "load average at start and end: $start_load / $end_load" | tee -a "$OUT/table.txt"
