"""The table of experiments/perf/mpi from raw.txt: the measured configurations (medians over the
rounds) and the ring all-reduce estimate at 8, 64 and 512 ranks.
Usage: scaling.py raw.txt [--step-s S]   (S: a rank's step in seconds for the estimate, e.g. an idle
machine's, instead of the 1-process 1-thread step measured in raw.txt)"""
import statistics
import sys

# The estimate's network: link bandwidth (Gbit/s) and the latency of one message (an exchange of
# the ring); 10 us is a kernel TCP/RoCE-class figure, InfiniBand verbs are nearer 2 us.
LINKS = (25, 100)
LATENCY_S = 10e-6


def rows(path):
    out = {}
    for line in open(path):
        if not line.startswith("config="):
            continue
        kv = dict(item.split("=", 1) for item in line.split())
        out.setdefault(kv["config"], []).append(kv)
    return out


def med(runs, key):
    return statistics.median(float(r[key]) for r in runs)


def main():
    runs = rows(sys.argv[1])
    step_override = float(sys.argv[3]) if len(sys.argv) > 3 and sys.argv[2] == "--step-s" else None
    print("Transformer T-small, 64 pairs x 24 tokens a step (1536 target tokens), Adam")
    print()
    print("| configuration | tokens/s | tokens/CPU-s | step s | compute s | exchange s | exposed s | in backward s | all-reduce alone s | MB sent/step |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    names = {"1x2": "1 process x 2 threads", "2x1": "2 ranks x 1 thread (mpirun), overlapped",
             "2x1-after": "2 ranks x 1 thread (mpirun), after the backward", "1x1": "1 process x 1 thread"}
    for c in ("1x2", "2x1", "2x1-after", "1x1"):
        if c not in runs:
            continue
        r = runs[c]
        print(f"| {names[c]} | {med(r, 'tokens_per_s'):,.0f} | {med(r, 'cpu_tokens_per_s'):,.0f} | {med(r, 'step_s'):.3f} | {med(r, 'compute_s'):.3f} | "
              f"{med(r, 'exchange_s'):.3f} | {med(r, 'exposed_s'):.4f} | {med(r, 'overlapped_s'):.4f} | {med(r, 'allreduce_s'):.4f} | "
              f"{med(r, 'bytes_per_step') / 1e6:.1f} |")
    hidden = None
    if "2x1" in runs and "2x1-after" in runs:
        hidden = 1 - med(runs["2x1"], "exposed_s") / med(runs["2x1-after"], "exposed_s")
        print()
        print(f"Exchange hidden behind the backward: {100 * hidden:.0f}% (exposed after the last rank's backward: "
              f"{1000 * med(runs['2x1'], 'exposed_s'):.1f} ms overlapped against {1000 * med(runs['2x1-after'], 'exposed_s'):.1f} ms "
              "after the backward)")
    if "1x2" in runs and "2x1" in runs:
        ratio = med(runs["2x1"], "tokens_per_s") / med(runs["1x2"], "tokens_per_s")
        cpu_ratio = med(runs["2x1"], "cpu_tokens_per_s") / med(runs["1x2"], "cpu_tokens_per_s")
        print(f"2 ranks x 1 thread / 1 process x 2 threads: {ratio:.2f} in tokens/s, {cpu_ratio:.2f} in tokens per CPU-second")
    if "1x1" not in runs:
        return
    # The dense gradient: at many ranks the union of the rows a batch's tokens touch in the
    # embeddings (sent sparse, 2 ranks: bytes_per_step) tends to the whole table.
    grad = med(runs["1x1"], "grad_bytes")
    compute = step_override or med(runs["1x1"], "compute_s") + med(runs["1x1"], "optimizer_s")
    tokens = med(runs["1x1"], "tokens")
    buckets = int(med(runs["1x1"], "buckets"))
    print()
    print(f"Estimate, weak scaling: every rank trains a batch of 64 pairs at a step of "
          f"{compute:.3f} s (forward, backward and Adam on one thread), gradients {grad / 1e6:.1f} MB in {buckets} ring all-reduces; a ring sends 2 (N-1)/N "
          f"of the buffer per rank and takes 2 (N-1) messages of {LATENCY_S * 1e6:.0f} us latency per bucket")
    print()
    h = hidden if hidden is not None else 0.0
    print(f"| ranks | link | all-reduce s | efficiency, after backward | efficiency, {100 * h:.0f}% hidden (measured) | efficiency, fully overlapped | tokens/s ({100 * h:.0f}% hidden) |")
    print("|---|---|---|---|---|---|---|")
    for n in (8, 64, 512):
        for gbit in LINKS:
            bw = gbit * 1e9 / 8
            ring = 2 * (n - 1) / n * grad / bw + 2 * (n - 1) * buckets * LATENCY_S
            after = compute / (compute + ring)
            measured = compute / (compute + (1 - h) * ring)
            overlapped = compute / max(compute, ring)
            print(f"| {n} | {gbit} Gbit/s | {ring:.4f} | {100 * after:.1f}% | {100 * measured:.1f}% | {100 * overlapped:.1f}% | "
                  f"{n * tokens / (compute + (1 - h) * ring):,.0f} |")


if __name__ == "__main__":
    main()
