#!/usr/bin/env python3
"""Joins the key=value lines of a perf run (bench/perf_<model> and the PyTorch script, several
rounds) into one table per mode: tokens/s (median over rounds, [min - max]), the ratio to each
reference, and for attnlab the fraction of the sgemm-bound limit when its lines give one.
Lines that count sequences (sequences_per_s, sequences; the NTM) are tabled in sequences/s,
with ms per sequence beside it; lines that count questions (questions_per_s, questions; the
memory network) in questions/s, with microseconds per question beside it; lines that count
images (images_per_s, images; the captioner) in images/s, with ms per image beside it.

A reference is a named group of PyTorch implementations (--ref NAME=IMPL[,IMPL...]); its value
is the best median of any of them at any thread count ("PyTorch-best" of that group), and the
table gets one column "x NAME" with every row's median over it.

A second, shorter table gives the same ratios from each side's fastest single repetition
("best"): on a machine shared with other work, the repetition nobody disturbed is the fairest
figure for both sides alike.

Usage: table.py RAW_FILE [--title TEXT] [--ref NAME=IMPL[,IMPL...] ...]
"""
import argparse
import re
import statistics
import sys
from collections import defaultdict


def parse(path):
    rows, blas = [], None
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line.startswith("impl="):
                rows.append(dict(kv.split("=", 1) for kv in line.split()))
            elif line.startswith("# BLAS_CORE="):   # the OpenBLAS kernels both sides ran (common.sh)
                blas = line[2:]
    return rows, blas


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("raw")
    ap.add_argument("--title", default="")
    ap.add_argument("--ref", action="append", default=[], help="NAME=IMPL[,IMPL...]")
    a = ap.parse_args()
    rows, blas = parse(a.raw)
    if not rows:
        sys.exit(f"table.py: no result lines in {a.raw}")
    refs = []
    for r in a.ref:
        name, impls = r.split("=", 1)
        refs.append((name, impls.split(",")))

    by = defaultdict(list)   # (mode, impl, threads) -> rows
    for r in rows:
        by[(r["mode"], r["impl"], int(r["threads"]))].append(r)
    order = ["train", "decode"]

    def mode_key(m):   # train, decode, then the others with their numbers in numeric order (T4 before T10)
        return (order.index(m) if m in order else len(order),
                [(0, int(p), "") if p.isdigit() else (1, 0, p) for p in re.split(r"(\d+)", m)])
    for mode in sorted({k[0] for k in by}, key=mode_key):
        keys = sorted((k for k in by if k[0] == mode), key=lambda k: (k[1] != "attnlab", k[1], k[2]))
        item = next((i for i in ("sequences", "questions", "images") if f"{i}_per_s" in by[keys[0]][0]), "tokens")  # what they count
        rate = f"{item}_per_s"
        med = {k: statistics.median(float(r[rate]) for r in by[k]) for k in keys}
        limits = any("of_limit" in r for k in keys if k[1] == "attnlab" for r in by[k])
        limit_key = f"limit_{item}_per_s" if item == "images" else "limit_tokens_per_s"
        best = {}
        for name, impls in refs:
            cand = [k for k in keys if k[1] in impls]
            if cand:
                best[name] = max(cand, key=lambda k: med[k])
        rounds = max(len(by[k]) for k in keys)
        if item == "sequences":
            unit, short = "training sequences/s", "seq/s"
        elif item == "questions":
            unit, short = "training questions/s", "q/s"
        elif item == "images":
            unit, short = "training images/s", "img/s"
        else:
            unit, short = ("target tokens/s" if mode == "train" else "generated tokens/s"), "tokens/s"
        print(f"\n{a.title}, {mode}: {unit}, median of {rounds} round(s) [min - max]")
        if blas:
            print(f"  {blas}")
        for name, k in best.items():
            print(f"  {name}-best: {k[1]} at {k[2]} thread(s), {med[k]:.0f} {short}")
        head = f"{'impl':<14}{'threads':>8}{short:>10}{'spread':>17}"
        per_item = {"sequences": ("ms/seq", 1e3), "questions": ("us/q", 1e6), "images": ("ms/img", 1e3)}.get(item)   # column, scale
        if per_item:
            head += f"{per_item[0]:>9}"
        head += "".join(f"{'x ' + name:>{max(10, len(name) + 4)}}" for name in best)
        if limits:
            head += f"{'of sgemm limit':>16}{'limit ' + short.replace('tokens', 'tok'):>13}{'sgemm GFLOP/s':>15}"
        print(head)
        for k in keys:
            vals = [float(r[rate]) for r in by[k]]
            spread = f"[{min(vals):.1f} - {max(vals):.1f}]" if med[k] < 100 else f"[{min(vals):.0f} - {max(vals):.0f}]"
            line = f"{k[1]:<14}{k[2]:>8}{med[k]:>10.{1 if med[k] < 100 else 0}f}{spread:>17}"
            if per_item:
                line += f"{per_item[1] / med[k]:>9.3f}"
            line += "".join(f"{f'{med[k] / med[b]:.2f}':>{max(10, len(name) + 4)}}" for name, b in best.items())
            if k[1] == "attnlab" and limits:
                def m(key, fmt):
                    return format(statistics.median(float(r[key]) for r in by[k]), fmt)
                line += f"{m('of_limit', '.2f'):>16}{m(limit_key, '.0f'):>13}{m('sgemm_gflops', '.1f'):>15}"
            print(line)
        best_rate = {k: max(float(r[item]) / float(r["min_s"]) for r in by[k]) for k in keys}
        fastest = {}
        for name, impls in refs:
            cand = [k for k in keys if k[1] in impls]
            if cand:
                fastest[name] = max(cand, key=lambda k: best_rate[k])
        print("fastest repetition:")
        line = f"{'impl':<14}{'threads':>8}{short:>10}"
        line += "".join(f"{'x ' + name:>{max(10, len(name) + 4)}}" for name in fastest)
        print(line + (f"{'of sgemm limit':>16}" if limits else ""))
        for k in keys:
            line = f"{k[1]:<14}{k[2]:>8}{best_rate[k]:>10.{1 if best_rate[k] < 100 else 0}f}"
            line += "".join(f"{f'{best_rate[k] / best_rate[b]:.2f}':>{max(10, len(name) + 4)}}"
                            for name, b in fastest.items())
            if k[1] == "attnlab" and limits:   # against the best limit measured (the least disturbed yardstick)
                limit = max(float(r[limit_key]) for r in by[k])
                line += f"{best_rate[k] / limit:>16.2f}"
            print(line)
        params = {}
        for k in keys:
            params.setdefault(k[1], by[k][0]["params"])
        print("parameters: " + ", ".join(f"{i} {p}" for i, p in params.items()))
        att = [r for k in keys if k[1] == "attnlab" for r in by[k] if "gflop_per_token" in r]
        if att:
            r = att[0]
            print(f"model products: {float(r['gflop_per_token']) * 1e3:.2f} MFLOP per token (2 per multiply-add); "
                  f"attn::flops counted {float(r['counted_per_listed']):.3f} of that")


if __name__ == "__main__":
    main()
