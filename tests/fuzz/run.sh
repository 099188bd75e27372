#!/usr/bin/env bash
# Runs every harness of tests/fuzz for a set time (or number of executions) from seeds the
# regular build makes (seeds.sh), under ASan, UBSan and LeakSanitizer (libhdf5's own leaks on the
# error paths of damaged files suppressed: tests/support/lsan.supp), and reports each harness's
# executions and findings. Exit 1 when any harness found something (its input is kept).
# Usage: tests/fuzz/run.sh FUZZ_BUILD BUILD [SECONDS [RUNS]]   (defaults: 60 s each, no run limit)
# FUZZ_SEED=N fixes libFuzzer's random seed (default: a new one each run), so that with a RUNS
# limit a run repeats the same executions (CI's smoke: .ci/run); FUZZ_TIMEOUT (default 10) is the
# seconds one input may take before it counts as a hang.
# Results: results/fuzz/<harness>/ (the corpus, kept between runs), <harness>.log, and any
# crash-/leak-/timeout- inputs as results/fuzz/<harness>-*.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
FUZZ_BUILD=$(cd "$1" && pwd)
BUILD=$2
SECONDS_EACH=${3:-60}
RUNS=${4:--1}
seed_flag=()
[ -n "${FUZZ_SEED:-}" ] && seed_flag=(-seed="$FUZZ_SEED")
OUT=$ROOT/results/fuzz
SEEDS=$OUT/seeds
mkdir -p "$OUT"
rm -rf "$SEEDS"
"$ROOT/tests/fuzz/seeds.sh" "$BUILD" "$SEEDS" >/dev/null
found=0
for harness in hdf5_image data_sets model_files outputs text_importers config semantic; do
  mkdir -p "$OUT/$harness"
  rc=0
  seeds=$SEEDS/$harness
  [ -d "$seeds" ] || seeds=   # semantic: its originals come from ATTN_FUZZ_SEEDS
  ATTN_FUZZ_SEEDS=$SEEDS LSAN_OPTIONS=suppressions=$ROOT/tests/support/lsan.supp "$FUZZ_BUILD/tests/fuzz/fuzz_$harness" \
    "$OUT/$harness" $seeds -max_total_time="$SECONDS_EACH" -runs="$RUNS" "${seed_flag[@]}" -timeout="${FUZZ_TIMEOUT:-10}" \
    -rss_limit_mb=2048 -max_len=65536 -len_control=0 -print_final_stats=1 -artifact_prefix="$OUT/$harness-" \
    >"$OUT/$harness.log" 2>&1 || rc=$?
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$OUT/$harness.log")
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$OUT/$harness.log")
  if [ "$rc" = 0 ]; then
    echo "fuzz_$harness: ${execs:-?} executions (${rate:-?}/s), nothing found"
  else
    found=1
    input=$(ls "$OUT/$harness-"* 2>/dev/null | head -n 1)
    echo "fuzz_$harness: FOUND something after ${execs:-?} executions (exit $rc): $(grep -m1 -E 'ERROR|SUMMARY' "$OUT/$harness.log"); input: ${input:-none kept}"
    echo "  reproduce: ATTN_FUZZ_SEEDS=$SEEDS LSAN_OPTIONS=suppressions=$ROOT/tests/support/lsan.supp $FUZZ_BUILD/tests/fuzz/fuzz_$harness ${input:-INPUT}"
    echo "  the end of $OUT/$harness.log:"
    tail -n 40 "$OUT/$harness.log" | sed 's/^/  | /'
  fi
done
exit $found
