#!/usr/bin/env bash
# CMLM T-small (the non-autoregressive Transformer), attnlab vs PyTorch side by side (issue 45,
# "Speed"): training tokens/s and mask-predict decoding at T = 4 and 10 iterations, at 1 and 2
# threads, with the ratio to PyTorch's best and attnlab's fraction of the sgemm-bound limit. First,
# once, the same-model check: attnlab's parameters loaded into the PyTorch twin give the same
# objective and the same mask-predict tokens. See README.md in this folder.
# Usage: experiments/perf/nat/run.sh [BUILD_DIR]
# Environment: PYTHON, ROUNDS, STEPS, THREADS, NOMMAP, WAIT_IDLE, BLAS_CORE: see ../common.sh;
#              ITERATIONS (default "4 10"), LENGTH_BEAM (default 1)
# Writes results/perf/nat/raw.txt (every line), model.h5 (the check's model) and table.txt.
set -euo pipefail

BUILD=${1:-build}
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../common.sh"
ITERATIONS=${ITERATIONS:-4 10}
LENGTH_BEAM=${LENGTH_BEAM:-1}
EXE=$BUILD/bench/perf_transformer
perf_start nat "$EXE"
echo "# iterations $ITERATIONS, length beam $LENGTH_BEAM" >>"$raw"

# The same model on both sides, before anything is timed (fails the run if not).
"$EXE" --arch cmlm --export "$OUT/model.h5" | sed 's/^/# /' | tee -a "$raw"
"$PYTHON" "$HERE/torch_nat.py" --check "$OUT/model.h5" | sed 's/^/# /' | tee -a "$raw"

# PyTorch's OpenMP threads would otherwise spin while waiting (docs/ARCHITECTURE.md, "Benchmarks").
torch_run() { OMP_WAIT_POLICY=PASSIVE "$PYTHON" "$HERE/torch_nat.py" --steps "$STEPS" "$@"; }
torch_nommap() {
  [ "$NOMMAP" = 1 ] || return 0
  GLIBC_TUNABLES=$NOMMAP_TUNABLES torch_run --label torch-nommap "$@"
}
both() {
  wait_idle
  "$EXE" --arch cmlm --threads "$n" --steps "$STEPS" "$@" | tee -a "$raw"
  torch_run --threads "$n" "$@" | tee -a "$raw"
  torch_nommap --threads "$n" "$@" | tee -a "$raw"
}
for round in $(seq "$ROUNDS"); do
  for n in $THREADS; do
    echo "perf/nat: round $round, $n thread(s), load $(load)" >&2
    both --mode train
    for t in $ITERATIONS; do
      both --mode decode --iterations "$t" --length-beam "$LENGTH_BEAM"
    done
  done
done
end_load=$(load)
echo "# load average at end: $end_load" >>"$raw"

"$PYTHON" "$HERE/../table.py" "$raw" --title "CMLM T-small" --ref PyTorch=torch --ref nommap=torch-nommap |
  tee "$OUT/table.txt"
echo "load average at start and end: $start_load / $end_load" | tee -a "$OUT/table.txt"
