# Shared by experiments/perf/*/run.sh (sourced, not run).
#
# Environment: PYTHON     interpreter with torch (default /usr/bin/python3)
#              ROUNDS     repetitions of the whole comparison (default 3; tables show the median)
#              STEPS      timed repetitions per measurement, median taken (default 5)
#              THREADS    thread counts (default "1 2")
#              NOMMAP     1 (default): also run PyTorch as "torch-nommap", with glibc's malloc
#                         told never to hand large blocks back to the system (see
#                         transformer/README.md); 0 skips it
#              WAIT_IDLE  seconds to wait at most, before each measurement, for the machine to
#                         be idle (other processes below 10% of the CPUs over 3 s); default 0
#              BLAS_CORE  the OpenBLAS kernels both sides run (attnlab's products, and PyTorch's
#                         through the same libopenblas): "detect" (default) unsets
#                         OPENBLAS_CORETYPE, so that OpenBLAS picks the kernels for this CPU as it
#                         does on a machine nobody configured; "env" keeps the environment's
#                         OPENBLAS_CORETYPE; any other value (Haswell, SkylakeX, ...) is set as it.
#                         A forced older core can halve sgemm's rate (on an AVX-512 machine forced
#                         to Haswell's AVX2 kernels, say) while oneDNN, which PyTorch's
#                         convolutions use, picks its own. raw.txt records what OpenBLAS runs.

PYTHON=${PYTHON:-/usr/bin/python3}
ROUNDS=${ROUNDS:-3}
STEPS=${STEPS:-5}
THREADS=${THREADS:-1 2}
NOMMAP=${NOMMAP:-1}
WAIT_IDLE=${WAIT_IDLE:-0}
NOMMAP_TUNABLES=glibc.malloc.mmap_threshold=2147483647:glibc.malloc.trim_threshold=4294967295
BLAS_CORE=${BLAS_CORE:-detect}
case "$BLAS_CORE" in
  detect) unset OPENBLAS_CORETYPE ;;
  env) ;;
  *) export OPENBLAS_CORETYPE=$BLAS_CORE ;;
esac

# Percent of the CPUs busy over the next 3 seconds (from /proc/stat).
busy_percent() {
  local a b
  read -r -a a </proc/stat
  sleep 3
  read -r -a b </proc/stat
  local total=0 idle i
  for i in 1 2 3 4 5 6 7 8; do total=$((total + b[i] - a[i])); done
  idle=$((b[4] - a[4] + b[5] - a[5]))
  echo $(((total - idle) * 100 / (total > 0 ? total : 1)))
}

# Waits up to WAIT_IDLE seconds for an idle machine; says so when it gives up.
wait_idle() {
  [ "$WAIT_IDLE" -gt 0 ] || return 0
  local start=$SECONDS busy
  while busy=$(busy_percent) && [ "$busy" -ge 10 ]; do
    if [ $((SECONDS - start)) -ge "$WAIT_IDLE" ]; then
      echo "perf: machine still ${busy}% busy after ${WAIT_IDLE}s; measuring anyway" >&2
      return 0
    fi
    sleep 10
  done
}

# The load average, for the record.
load() { cut -d' ' -f1-3 /proc/loadavg; }

# perf_start NAME EXE: checks that the benchmark program EXE and PyTorch are there, makes
# results/perf/NAME/ and starts its raw.txt with the date, machine, load and settings. Sets OUT,
# raw and start_load.
perf_start() {
  local name=$1 exe=$2
  if [ ! -x "$exe" ]; then
    echo "perf/$name: $exe not found; build with benchmarks (make -f Makefile.scripts build)" >&2
    exit 1
  fi
  if ! "$PYTHON" -c 'import torch' 2>/dev/null; then
    echo "perf/$name: $PYTHON cannot import torch (make -f Makefile.scripts perf-deps)" >&2
    exit 1
  fi
  OUT=results/perf/$name
  mkdir -p "$OUT"
  raw=$OUT/raw.txt
  start_load=$(load)
  local blas
  # (|| true: without attn-data built, pipefail would end the run here, silently)
  blas=$("$(dirname "$exe")/../apps/attn-data" --version 2>/dev/null | sed -n 's/^BLAS: //p' || true)
  {
    echo "# $(date -u +%FT%TZ) $(uname -n), load average at start: $start_load"
    echo "# rounds $ROUNDS, steps $STEPS, threads $THREADS"
    echo "# BLAS_CORE=$BLAS_CORE: ${blas:-OpenBLAS not reported}"
  } >"$raw"
  echo "perf/$name: $ROUNDS round(s), load average $start_load" >&2
}
