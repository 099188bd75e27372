#!/usr/bin/env python3
# Where attention peaks miss their digit (an aid to table.py's attention correctness): for every
# word of the greedy test captions of `attn-caption caption` that names its digit right, whether
# the peak cell's centre lies beside (x), above or below the digit's ink box, and whether the
# attention's centroid lies inside the box.
# Usage: peak_misses.py CAPTIONS.h5   (e.g. results/caption-warp/caps_soft_s2.h5)
import collections
import sys

import h5py
import numpy as np

f = h5py.File(sys.argv[1], "r")
attention, boxes = f["attention"][:], f["boxes"][:]
predicted, target, length = f["predictions"][:], f["tgt"][:], f["predictions_len"][:]
height, width = f["images"].shape[-2:]
_, _, gh, gw = attention.shape
ys = (np.arange(gh) + 0.5) * height / gh   # cell centres in pixels
xs = (np.arange(gw) + 0.5) * width / gw
misses, words, hits, centroids = collections.Counter(), 0, 0, 0
for i in range(attention.shape[0]):
    for t in range(length[i]):
        y0, x0, y1, x1 = boxes[i, t]
        if y0 < 0 or predicted[i, t] != target[i, t]:
            continue   # EOS, or a wrong word: no digit to look at
        a = attention[i, t]
        r, c = divmod(int(a.argmax()), gw)
        in_x, in_y = x0 <= xs[c] < x1, y0 <= ys[r] < y1
        words += 1
        if in_x and in_y:
            hits += 1
        else:
            misses["beside (x)" if not in_x else "above" if ys[r] < y0 else "below"] += 1
        cy, cx = (a.sum(1) * ys).sum() / a.sum(), (a.sum(0) * xs).sum() / a.sum()
        centroids += bool(y0 <= cy < y1 and x0 <= cx < x1)
print(f"words {words}: peak in box {hits / words:.3f}, misses {dict(misses)}, centroid in box {centroids / words:.3f}")
