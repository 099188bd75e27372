"""The caption-shapes table: every model's test figures and the attention's spread, the median
per lambda.

Usage: table.py RESULTS_DIR MODEL...   (reads RESULTS_DIR/eval.txt and caps_<MODEL>.h5; models
are named l<lambda>_s<seed>)
"""
import re
import statistics
import sys

import h5py
import numpy as np

out, models = sys.argv[1], sys.argv[2:]
NUMBER = r"([0-9.]+|nan)"


def parse(line):
    get = lambda pattern: float(re.search(pattern, line).group(1))
    bleu = re.search(r"BLEU-1\.\.4 ([0-9.]+)/([0-9.]+)/([0-9.]+)/([0-9.]+)", line)
    return [100 * get(r"greedy: sequence accuracy " + NUMBER), float(bleu.group(1)), float(bleu.group(4)),
            100 * get(r"attention correctness " + NUMBER)]


def spread(path):
    """The mean entropy of a word's attention (nats; log L is uniform) and the mean coverage
    penalty per location, (1 / L) sum_i (1 - sum_t alpha_ti)^2, over the test captions."""
    with h5py.File(path, "r") as f:
        att, lens = f["/attention"][:], f["/predictions_len"][:]
    n, t, h, w = att.shape
    a = att.reshape(n, t, h * w)
    entropies, penalties = [], []
    for i in range(n):
        rows = a[i, : lens[i]]
        entropies += [float(-(r * np.log(np.maximum(r, 1e-30))).sum()) for r in rows]
        penalties.append(float(((1 - rows.sum(axis=0)) ** 2).mean()))
    return [float(np.mean(entropies)), float(np.mean(penalties)), float(np.log(h * w))]


rows = {}
for line in open(f"{out}/eval.txt"):
    model, rest = line.split(" ", 1)
    rows[model] = parse(rest) + spread(f"{out}/caps_{model}.h5")[:2]
log_l = spread(f"{out}/caps_{models[0]}.h5")[2]

print("Test figures on 1000 scenes: sequence accuracy (greedy captions equal to the reference), BLEU-1")
print("and BLEU-4 (x 100), attention correctness (colour and shape words whose attention peak lies in")
print(f"their object's box, teacher forced); the attention's mean entropy per word (uniform: {log_l:.2f}")
print("nats) and the mean per-location coverage penalty (1/L) sum_i (1 - sum_t alpha_ti)^2.")
print()
print("| model | seq. acc. | BLEU-1 | BLEU-4 | attn. correct | entropy | coverage penalty |")
print("|---|---|---|---|---|---|---|")
for m in models:
    print(f"| {m} | " + " | ".join(f"{v:.3f}" if k >= 4 else f"{v:.2f}" for k, v in enumerate(rows[m])) + " |")
for lam in sorted({m.split("_")[0] for m in models}):
    members = [rows[m] for m in models if m.startswith(lam + "_")]
    if len(members) > 1:
        med = [statistics.median(col) for col in zip(*members)]
        print(f"| **lambda {lam[1:]} median ({len(members)} seeds)** | " +
              " | ".join(f"{v:.3f}" if k >= 4 else f"{v:.2f}" for k, v in enumerate(med)) + " |")
