#!/usr/bin/env bash
# Runs every benchmark program in BUILD_DIR/bench (bench_*) and prints one compact table:
# benchmark, wall time per iteration, GFLOP/s of useful work, and for op benchmarks the
# fraction of sgemm: on the flops the op performs ("of sgemm", elapsed time; "cpu": in process
# CPU time, 1 thread only) and on the useful flops alone ("useful"; see bench/README.md).
# Full results stay in BUILD_DIR/bench/results/<program>.json (Google Benchmark's JSON).
#
# Usage: bench/run.sh BUILD_DIR [extra Google Benchmark flags...]
#   e.g. bench/run.sh build --benchmark_repetitions=3   (the table then shows the fastest run's
#   time and the median fraction of sgemm with its spread over the repetitions)
# Environment: BENCH_MIN_TIME  seconds per benchmark (default 0.1: the whole run takes minutes)
#              BENCH_FILTER    regex passed as --benchmark_filter (default: all)
#              PYTHON          interpreter for the table (default python3)
set -euo pipefail

if [[ $# -lt 1 || ! -d $1 ]]; then
  echo "usage: $0 BUILD_DIR [benchmark flags...]   (build with -DATTN_BUILD_BENCHMARKS=ON first)" >&2
  exit 2
fi
build=$1
shift
bench_dir=$build/bench
min_time=${BENCH_MIN_TIME:-0.1}
filter=${BENCH_FILTER:-.}
python=${PYTHON:-python3}

shopt -s nullglob
programs=()
for exe in "$bench_dir"/bench_*; do
  [[ -f $exe && -x $exe ]] && programs+=("$exe")
done
if [[ ${#programs[@]} -eq 0 ]]; then
  echo "$0: no bench_* programs in $bench_dir (configure with -DATTN_BUILD_BENCHMARKS=ON and build)" >&2
  exit 1
fi

out=$bench_dir/results
mkdir -p "$out"
rm -f "$out"/*.json "$out"/*.log
echo "bench: ${#programs[@]} program(s), min time ${min_time}s each, load average $(cut -d' ' -f1-3 /proc/loadavg)" >&2

failed=0
for exe in "${programs[@]}"; do
  name=$(basename "$exe")
  echo "bench: running $name" >&2
  if ! "$exe" --benchmark_min_time="$min_time" --benchmark_filter="$filter" \
      --benchmark_out="$out/$name.json" --benchmark_out_format=json "$@" >"$out/$name.log" 2>&1; then
    echo "bench: $name FAILED (log: $out/$name.log)" >&2
    tail -n 5 "$out/$name.log" >&2
    failed=1
  fi
done

"$python" - "$out"/*.json <<'PY'
import json, sys

runs, context = {}, None   # per benchmark: one (ms, GFLOP/s, of_sgemm, of_sgemm_cpu) per repetition
for path in sys.argv[1:]:
    with open(path) as f:
        text = f.read()
    if not text.strip():   # a program none of whose benchmarks matched BENCH_FILTER
        continue
    data = json.loads(text)
    context = context or data.get("context", {})
    for b in data.get("benchmarks", []):
        if b.get("run_type", "iteration") != "iteration" or b.get("error_occurred"):
            continue
        scale = {"ns": 1e-6, "us": 1e-3, "ms": 1.0, "s": 1e3}[b.get("time_unit", "ns")]
        name = b.get("run_name", b["name"])
        for suffix in ("/manual_time", "/real_time"):
            name = name.removesuffix(suffix)
        runs.setdefault(name, []).append((b["real_time"] * scale, b.get("GFLOP/s"), b.get("of_sgemm"),
                                          b.get("of_sgemm_cpu"), b.get("of_sgemm_useful")))

def median(xs):
    xs = sorted(xs)
    n = len(xs)
    return xs[n // 2] if n % 2 else 0.5 * (xs[n // 2 - 1] + xs[n // 2])

if context:
    caches = ", ".join(f"L{c['level']} {c['size'] // 1024} KiB" for c in context.get("caches", [])
                       if c.get("type") in ("Data", "Unified"))
    print(f"# {context.get('host_name', '?')}: {context.get('num_cpus', '?')} CPUs at "
          f"{context.get('mhz_per_cpu', '?')} MHz{' (' + caches + ')' if caches else ''}; "
          f"{context.get('date', '')}")
repeated = any(len(r) > 1 for r in runs.values())
if repeated:
    print("# repeated benchmarks: ms/iter and GFLOP/s of the fastest repetition; the fractions are")
    print("# medians over repetitions, with the min-max spread of 'of sgemm'")
width = max([len("benchmark")] + [len(name) for name in runs])
print(f"{'benchmark':<{width}}  {'ms/iter':>10}  {'GFLOP/s':>8}  {'of sgemm':>8}  {'spread':>9}  {'cpu':>5}  {'useful':>6}")
for name, rows in runs.items():
    ms, gflops = min(rows, key=lambda r: r[0])[:2]
    fracs, cpus, usefuls = ([r[i] for r in rows if r[i] is not None] for i in (2, 3, 4))
    g = f"{gflops:8.1f}" if gflops is not None else f"{'':8}"
    s = f"{median(fracs):8.2f}" if fracs else f"{'':8}"
    spread = f"{min(fracs):4.2f}-{max(fracs):4.2f}" if len(fracs) > 1 else ""
    c = f"{median(cpus):5.2f}" if cpus else ""
    u = f"{median(usefuls):6.2f}" if usefuls else ""
    print(f"{name:<{width}}  {ms:10.3f}  {g}  {s}  {spread:>9}  {c:>5}  {u:>6}")
PY
exit $failed
