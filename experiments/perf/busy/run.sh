#!/usr/bin/env bash
# Training speed on a busy machine (issue 17, section 6): T-small training tokens/s
# (bench/perf_transformer --mode train) alone and beside one CPU-bound neighbour process (a shell
# loop: another training, a browser), for the tools' default (--threads = all cores, the thread
# governor on: core/thread_governor.hpp), fixed 2 threads, fixed 2 threads with OpenMP's passive
# wait policy, and fixed 1 thread. Goal: the default keeps >= 50% of its idle throughput.
# Usage: experiments/perf/busy/run.sh [BUILD_DIR]
# Environment: ROUNDS (default 3; the table shows medians over rounds), STEPS (timed steps per
# measurement, default 30), WARMUP (untimed steps first, default 2).
# Writes results/perf/busy/raw.txt (every line) and table.txt.
set -euo pipefail
BUILD=${1:-build}
EXE=$BUILD/bench/perf_transformer
ROUNDS=${ROUNDS:-3}
STEPS=${STEPS:-30}
WARMUP=${WARMUP:-2}
OUT=results/perf/busy
[ -x "$EXE" ] || { echo "perf/busy: $EXE not found; build with benchmarks (make -f Makefile.scripts build)" >&2; exit 1; }
mkdir -p "$OUT"
raw=$OUT/raw.txt
cores=$(nproc)
echo "# $(date -u +%FT%TZ) $(uname -n), $cores cores, load average $(cut -d' ' -f1-3 /proc/loadavg); rounds $ROUNDS, steps $STEPS" >"$raw"

neighbour=
stop_neighbour() { [ -z "$neighbour" ] || { kill "$neighbour" 2>/dev/null || true; wait "$neighbour" 2>/dev/null || true; neighbour=; }; }
trap stop_neighbour EXIT

# measure CONFIG LOAD WAIT ARGS...: one run with OMP_WAIT_POLICY=WAIT (- : unset), its line tagged
# with the configuration and the load.
measure() {
  local config=$1 load=$2 wait=$3
  shift 3
  if [ "$load" = busy ]; then
    sh -c 'while :; do :; done' &
    neighbour=$!
    sleep 1
  fi
  if [ "$wait" = - ]; then set -- env -u OMP_WAIT_POLICY "$EXE" "$@"; else set -- env OMP_WAIT_POLICY="$wait" "$EXE" "$@"; fi
  "$@" --mode train --steps "$STEPS" --warmup "$WARMUP" --limit 0 |
    sed "s/^/config=$config load=$load /" | tee -a "$raw"
  stop_neighbour
}

for round in $(seq "$ROUNDS"); do
  echo "perf/busy: round $round" >&2
  for load in idle busy; do
    measure default "$load" - --threads "$cores" --adapt 1
    measure fixed-"$cores" "$load" - --threads "$cores"
    measure passive-"$cores" "$load" PASSIVE --threads "$cores"
    measure fixed-1 "$load" - --threads 1
  done
done

# Median tokens/s over rounds (median step; and whole timed run), and each as a share of the
# default's idle median.
awk -v cores="$cores" '
  /^config=/ {
    for (i = 1; i <= NF; ++i) { split($i, kv, "="); f[kv[1]] = kv[2] }
    key = f["config"] " " f["load"]
    n[key]++; med[key, n[key]] = f["tokens_per_s"]; mean[key, n[key]] = f["mean_tokens_per_s"]; thr[key] = f["threads"]
  }
  function median(a, key, k,   i, j, t, v) {
    for (i = 1; i <= k; ++i) v[i] = a[key, i]
    for (i = 1; i <= k; ++i) for (j = i + 1; j <= k; ++j) if (v[j] < v[i]) { t = v[i]; v[i] = v[j]; v[j] = t }
    return k % 2 ? v[(k + 1) / 2] : (v[k / 2] + v[k / 2 + 1]) / 2
  }
  END {
    idle = median(med, "default idle", n["default idle"])
    printf "T-small training on %d cores, tokens/s (median over rounds of the median step | of the whole timed run); %% of the default idle\n", cores
    printf "| setting | idle | beside one CPU-bound process | busy / default idle | threads at the end (busy) |\n|---|---|---|---|---|\n"
    split("default fixed-" cores " passive-" cores " fixed-1", order, " ")
    for (o = 1; o <= 4; ++o) {
      c = order[o]
      i1 = median(med, c " idle", n[c " idle"]); i2 = median(mean, c " idle", n[c " idle"])
      b1 = median(med, c " busy", n[c " busy"]); b2 = median(mean, c " busy", n[c " busy"])
      printf "| %s | %.0f \\| %.0f | %.0f \\| %.0f | %.0f%% \\| %.0f%% | %s |\n", c, i1, i2, b1, b2, 100 * b1 / idle, 100 * b2 / idle, thr[c " busy"]
    }
  }' "$raw" | tee "$OUT/table.txt"
