"""The caption-mnist table: every model's test figures, the median per family, and whether the
attention moves left to right word by word.

Usage: table.py RESULTS_DIR MODEL...   (reads RESULTS_DIR/eval.txt and caps_<MODEL>.h5)
"""
import re
import statistics
import sys

import h5py
import numpy as np

out, models = sys.argv[1], sys.argv[2:]
NUMBER = r"([0-9.]+|nan)"


def parse(line):
    """The figures of one `attn-caption eval` line."""
    get = lambda pattern: float(re.search(pattern, line).group(1))
    bleu = re.search(r"BLEU-1\.\.4 ([0-9.]+)/([0-9.]+)/([0-9.]+)/([0-9.]+)", line)
    return {
        "seq": get(r"greedy: sequence accuracy " + NUMBER),
        "bleu4": float(bleu.group(4)),
        "correct": get(r"attention correctness " + NUMBER),
    }


def left_to_right(path):
    """Of the captions with 2 or more words, the fraction whose attention peak (its grid column)
    moves right from every word to the next, and the mean peak column of word k."""
    with h5py.File(path, "r") as f:
        att, lens = f["/attention"][:], f["/predictions_len"][:]
    n, t, h, w = att.shape
    columns = att.sum(axis=2).argmax(axis=2)   # [N, T]: the peak column of each word's weights
    moving = [all(columns[i, k] < columns[i, k + 1] for k in range(lens[i] - 1)) for i in range(n) if lens[i] >= 2]
    return sum(moving) / max(len(moving), 1), len(moving)


figures = {}
for line in open(f"{out}/eval.txt"):
    model, split, rest = line.split(" ", 2)
    figures.setdefault(model, {})[split] = parse(rest)

print("Test figures: sequence accuracy (greedy captions equal to the reference), BLEU-4 (x 100),")
print("attention correctness (words whose attention peak is in their digit's ink box, teacher forced),")
print("on 1000 test strips of 1-5 digits and 1000 of exactly 3 digits; 'left to right': captions of")
print("2+ words whose attention peak moves right at every word (1-5-digit test captions).")
print()
print("| model | seq. acc. 1-5 | BLEU-4 1-5 | attn. correct 1-5 | seq. acc. 3 digits | attn. correct 3 | left to right |")
print("|---|---|---|---|---|---|---|")
rows = {}
for m in models:
    a, b = figures[m]["strips"], figures[m]["strips3"]
    ltr, count = left_to_right(f"{out}/caps_{m}.h5")
    rows[m] = [100 * a["seq"], a["bleu4"], 100 * a["correct"], 100 * b["seq"], 100 * b["correct"], 100 * ltr]
    print(f"| {m} | " + " | ".join(f"{v:.2f}" for v in rows[m]) + " |")
for family in ("soft", "nocoords", "mean"):
    members = [rows[m] for m in models if m.startswith(family + "_")]
    if len(members) > 1:
        med = [statistics.median(col) for col in zip(*members)]
        print(f"| **{family} median ({len(members)} seeds)** | " + " | ".join(f"{v:.2f}" for v in med) + " |")
