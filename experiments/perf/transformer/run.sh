#!/usr/bin/env bash
# Transformer T-small, attnlab vs PyTorch side by side (issue 3, "Speed"): training target
# tokens/s and greedy-decoding tokens/s at 1 and 2 threads, with the ratio to PyTorch's best and
# attnlab's fraction of the sgemm-bound limit. See README.md in this folder.
# Usage: experiments/perf/transformer/run.sh [BUILD_DIR]
# Environment: PYTHON, ROUNDS, STEPS, THREADS, NOMMAP, WAIT_IDLE, BLAS_CORE: see ../common.sh
# Writes results/perf/transformer/raw.txt (every line) and table.txt.
set -euo pipefail

BUILD=${1:-build}
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../common.sh"
EXE=$BUILD/bench/perf_transformer
perf_start transformer "$EXE"
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
