#!/usr/bin/env python3
# Which test digits the captions misread (an aid to table.py's sequence accuracy): for the greedy
# captions of `attn-caption caption` on a strips file, the wrong captions, the misread digit
# positions, and how many distinct MNIST test images those are (a strip set draws each of the
# 1,000 test images about 3 times); with several models, the images every one of them misreads.
# Only captions of the right length are compared digit by digit; others count as wrong captions.
# Usage: misread_digits.py STRIPS.h5 CAPTIONS.h5...
#   (e.g. results/caption-shift/strips3.h5 caps3_soft_s1.h5 caps3_soft_s2.h5, from
#    attn-caption caption --model soft_s1.h5 --data strips3.h5 --out caps3_soft_s1.h5)
import collections
import sys

import h5py

if len(sys.argv) < 3:
    sys.exit("usage: misread_digits.py STRIPS.h5 CAPTIONS.h5...")
index = h5py.File(sys.argv[1], "r")["test/mnist_index"][:]
misread_by = collections.Counter()   # MNIST image -> how many models misread it at least once
for path in sys.argv[2:]:
    f = h5py.File(path, "r")
    predicted, predicted_len = f["predictions"][:], f["predictions_len"][:]
    target, target_len = f["tgt"][:], f["tgt_len"][:]
    if predicted.shape[0] != index.shape[0]:
        sys.exit(f"misread_digits: {path} holds {predicted.shape[0]} captions, {sys.argv[1]} {index.shape[0]} strips")
    wrong, length_errors, shown, misread = 0, 0, collections.Counter(), collections.Counter()
    for i in range(predicted.shape[0]):
        p, t = list(predicted[i, : predicted_len[i]]), list(target[i, : target_len[i] - 1])   # no EOS
        shown.update(index[i, : len(t)].tolist())
        if p == t:
            continue
        wrong += 1
        if len(p) != len(t):
            length_errors += 1
            continue
        misread.update(int(index[i, d]) for d in range(len(t)) if p[d] != t[d])
    always = sum(1 for image, n in misread.items() if n == shown[image])
    print(f"{path}: {wrong} of {predicted.shape[0]} captions wrong ({length_errors} of the wrong length); "
          f"{sum(misread.values())} digits misread, {len(misread)} distinct test images of the {len(shown)} shown "
          f"({always} misread every time they are shown)")
    misread_by.update(misread.keys())
if len(sys.argv) > 3:
    models = len(sys.argv) - 2
    print(f"misread by all {models} models: {sum(1 for n in misread_by.values() if n == models)} images")
