# Shared by experiments/perf/*/run.sh (sourced, not run).
#
# Environment: NOMMAP     1 (default): also run PyTorch as "torch-nommap", with glibc's malloc
#                         told never to hand large blocks back to the system (see
#                         transformer/README.md); 0 skips it
#              WAIT_IDLE  seconds to wait at most, before each measurement, for the machine to
#                         be idle (other processes below 10% of the CPUs over 3 s); default 0

NOMMAP=${NOMMAP:-1}
WAIT_IDLE=${WAIT_IDLE:-0}
NOMMAP_TUNABLES=glibc.malloc.mmap_threshold=2147483647:glibc.malloc.trim_threshold=4294967295

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
