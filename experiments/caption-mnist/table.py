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


def peak_cell_touches_box(path):
    """Of the words a greedy caption gets right, the fraction whose attention peak cell (a cell of
    the annotation grid, 8 x 8 pixels for three poolings) overlaps the word's digit box at all.
    Attention correctness asks more: the cell's centre inside the ink box, which a thin "one"
    (ink 4-10 pixels wide) can miss by a pixel while the cell covers half the digit."""
    with h5py.File(path, "r") as f:
        att, lens, boxes = f["/attention"][:], f["/predictions_len"][:], f["/boxes"][:]
        pred, ref = f["/predictions"][:], f["/tgt"][:]
        H, W = f["/images"].shape[2:]
    n, t, h, w = att.shape
    ch, cw = H / h, W / w
    hits = total = 0
    for i in range(n):
        for k in range(lens[i]):
            if pred[i, k] != ref[i, k]:
                continue
            y, x = np.unravel_index(att[i, k].argmax(), (h, w))
            y0, x0, y1, x1 = boxes[i, k]
            hits += bool(y * ch < y1 and (y + 1) * ch > y0 and x * cw < x1 and (x + 1) * cw > x0)   # half-open boxes
            total += 1
    return hits / max(total, 1)


figures = {}
for line in open(f"{out}/eval.txt"):
    model, split, rest = line.split(" ", 2)
    figures.setdefault(model, {})[split] = parse(rest)

print("Test figures: sequence accuracy (greedy captions equal to the reference), BLEU-4 (x 100),")
print("attention correctness (words whose attention peak is in their digit's ink box, teacher forced),")
print("on 1000 test strips of 1-5 digits and 1000 of exactly 3 digits; 'left to right': captions of")
print("2+ words whose attention peak moves right at every word; 'peak touches box': right words whose")
print("peak cell overlaps their digit's box (both on the greedy 1-5-digit test captions).")
print()
print("| model | seq. acc. 1-5 | BLEU-4 1-5 | attn. correct 1-5 | seq. acc. 3 digits | attn. correct 3 | left to right | peak touches box |")
print("|---|---|---|---|---|---|---|---|")
rows = {}
for m in models:
    a, b = figures[m]["strips"], figures[m]["strips3"]
    ltr, count = left_to_right(f"{out}/caps_{m}.h5")
    touch = peak_cell_touches_box(f"{out}/caps_{m}.h5")
    rows[m] = [100 * a["seq"], a["bleu4"], 100 * a["correct"], 100 * b["seq"], 100 * b["correct"], 100 * ltr,
               100 * touch]
    if m.startswith("mean_"):   # no attention: its weights are uniform, their peaks say nothing
        rows[m][2], rows[m][4], rows[m][5], rows[m][6] = (float("nan"),) * 4
    print(f"| {m} | " + " | ".join("-" if v != v else f"{v:.2f}" for v in rows[m]) + " |")
for family in ("soft", "nocoords", "mean"):
    members = [rows[m] for m in models if m.startswith(family + "_")]
    if len(members) > 1:
        med = [statistics.median(col) for col in zip(*members)]
        print(f"| **{family} median ({len(members)} seeds)** | " + " | ".join("-" if v != v else f"{v:.2f}" for v in med) + " |")
