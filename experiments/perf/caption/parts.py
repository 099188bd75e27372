#!/usr/bin/env python3
"""The parts of attnlab's captioner training step timed alone (perf_caption --parts 1 lines,
several rounds): per part and thread count, the median over rounds of ms per batch, the share
of the whole step's time, GFLOP/s on the part's products, the sgemm rate on the same shapes and
the fraction of that limit reached.

Usage: parts.py PARTS_FILE
"""
import statistics
import sys
from collections import defaultdict


def main():
    by = defaultdict(list)
    for line in open(sys.argv[1]):
        if line.startswith("part="):
            r = dict(kv.split("=", 1) for kv in line.split())
            by[(int(r["threads"]), r["part"])].append(r)
    if not by:
        sys.exit(f"parts.py: no part lines in {sys.argv[1]}")
    print("\nattnlab's step by parts, each timed alone on the step's shapes (median of rounds)")
    print(f"{'part':<14}{'threads':>8}{'ms/batch':>10}{'share':>8}{'GFLOP/s':>9}{'sgemm GFLOP/s':>15}{'of limit':>10}")
    for (threads, part), rows in sorted(by.items()):
        def m(key):
            return statistics.median(float(r[key]) for r in rows)
        line = f"{part:<14}{threads:>8}{m('ms_per_batch'):>10.2f}{m('share'):>8.2f}"
        line += f"{m('gflops'):>9.1f}{m('sgemm_gflops'):>15.1f}{m('of_limit'):>10.2f}" if m("gflops") > 0 else ""
        print(line)


if __name__ == "__main__":
    main()
