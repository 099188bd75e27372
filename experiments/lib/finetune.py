"""Helpers of experiments/lib/finetune.sh (the finetune-* experiments).

usage: finetune.py steps DATA.h5 lm|mlm MAX_TOKENS
           optimizer steps per epoch of attn-transformer finetune --max-tokens on DATA.h5's /train:
           the trainer's length-bucketed batches (lib/src/data/batching.cpp), the same count every
           epoch, so that a checkpoint every that many steps is one per epoch
       finetune.py select RUN.h5 [RUN.h5 ...]
           the epoch of the least validation error of each fine-tuning run (its /metrics curve;
           the earliest on a tie): prints "RUN epoch valid_error" per run
       finetune.py labels DATA.h5
           the class names of a labelled data set (/labels), one per line
       finetune.py words DATA.h5
           the words of a data set's vocabulary (/vocab/src without the 4 reserved tokens), one per line
"""
import sys

import h5py
import numpy as np


def valid_curve(path):
    with h5py.File(path, "r") as f:
        return [float(e) for e in f["/metrics/valid_error"][()]]


def steps(data, arch, max_tokens):
    """Batches of make_batches: lengths as the body reads them ([CLS] A [SEP] B [SEP] for an mlm,
    BOS A [SEP] B for an lm), sorted, cut greedily at max_tokens >= B x longest."""
    with h5py.File(data, "r") as f:
        lens, seg = f["/train/src_len"][()], f["/train/segments"][()]
    pair = seg[np.arange(len(lens)), lens - 1] == 1
    lengths = sorted(int(n) + (2 if arch == "mlm" else 1) + int(p) for n, p in zip(lens, pair))
    batches, size = 0, 0
    for n in lengths:
        if size > 0 and (size + 1) * n > max_tokens:
            batches, size = batches + 1, 0
        size += 1
    print(batches + (size > 0))


def select(paths):
    for path in paths:
        curve = valid_curve(path)
        best = int(np.argmin(curve))   # argmin: the earliest of equal errors
        print(f"{path} {best + 1} {curve[best]:.6f}")


def print_strings(data, dataset, first=0):
    with h5py.File(data, "r") as f:
        for name in f[dataset][first:]:
            print(name.decode() if isinstance(name, bytes) else name)


def main():
    if len(sys.argv) == 5 and sys.argv[1] == "steps":
        steps(sys.argv[2], sys.argv[3], int(sys.argv[4]))
    elif len(sys.argv) == 3 and sys.argv[1] == "labels":
        print_strings(sys.argv[2], "/labels")
    elif len(sys.argv) == 3 and sys.argv[1] == "words":
        print_strings(sys.argv[2], "/vocab/src", first=4)
    elif len(sys.argv) > 2 and sys.argv[1] == "select":
        select(sys.argv[2:])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
