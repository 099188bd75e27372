#!/usr/bin/env bash
# Data-parallel training of the Transformer T-small (issue 18): one process of 2 threads against
# 2 ranks of 1 thread (mpirun) on this machine, with the gradient exchange overlapped with the
# backward and after it, the exchange's time and bytes per step, and the estimate at 8, 64 and
# 512 ranks. See README.md in this folder.
# Usage: experiments/perf/mpi/run.sh [BUILD_DIR]
# Environment: ROUNDS (3), STEPS (5), WAIT_IDLE (0), BLAS_CORE: see ../common.sh; PYTHON for the table.
# Writes results/perf/mpi/raw.txt (every line) and table.txt.
set -euo pipefail

BUILD=${1:-build}
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../common.sh"
EXE=$BUILD/bench/perf_mpi
if [ ! -x "$EXE" ]; then
  echo "perf/mpi: $EXE not found; build with MPI and benchmarks (make -f Makefile.scripts build)" >&2
  exit 1
fi
command -v mpirun >/dev/null || { echo "perf/mpi: mpirun not found (make -f Makefile.scripts deps)" >&2; exit 1; }
OUT=results/perf/mpi
mkdir -p "$OUT"
raw=$OUT/raw.txt
start_load=$(load)
{
  echo "# perf/mpi $(date -Iseconds) on $(hostname), $(nproc) CPUs, $(mpirun --version | head -n 1)"
  echo "# load average at start: $start_load; ROUNDS=$ROUNDS STEPS=$STEPS"
} >"$raw"
# Open MPI refuses to start as root unless told; containers often run as root.
as_root=()
[ "$(id -u)" = 0 ] && as_root=(--allow-run-as-root)
# OpenMP threads that spin while waiting would take the other rank's core (DESIGN.md).
export OMP_WAIT_POLICY=PASSIVE
for round in $(seq "$ROUNDS"); do
  echo "perf/mpi: round $round, load $(load)" >&2
  wait_idle
  echo "config=1x2 $("$EXE" --threads 2 --steps "$STEPS")" | tee -a "$raw"
  wait_idle
  echo "config=2x1 $(mpirun "${as_root[@]}" -np 2 --bind-to core -x OMP_WAIT_POLICY "$EXE" --threads 1 --steps "$STEPS")" |
    tee -a "$raw"
  wait_idle   # every bucket after the backward: what the overlap hides
  echo "config=2x1-after $(mpirun "${as_root[@]}" -np 2 --bind-to core -x OMP_WAIT_POLICY "$EXE" --threads 1 \
    --steps "$STEPS" --overlap 0)" | tee -a "$raw"
  wait_idle   # one rank's compute on a whole batch of 64: the per-rank step of the estimate
  echo "config=1x1 $("$EXE" --threads 1 --steps "$STEPS")" | tee -a "$raw"
done
end_load=$(load)
echo "# load average at end: $end_load" >>"$raw"
"$PYTHON" "$HERE/scaling.py" "$raw" | tee "$OUT/table.txt"
echo "load average at start and end: $start_load / $end_load" | tee -a "$OUT/table.txt"
