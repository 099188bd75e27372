#!/usr/bin/env python3
"""Writes a copy of an attnlab data set with one split cut down, as a filter script would.

    cut_split.py IN OUT SPLIT --rows K     every dataset of /SPLIT keeps its first K rows (K = 0:
                                           the split is empty)
    cut_split.py IN OUT SPLIT --one-step   every example of /SPLIT shortened to one step: one
                                           input and one target row (NTM sequences), one source
                                           token and a target of EOS alone (tokens, captions), one
                                           sentence of one word and a one-word question (bAbI)

The split readers' tests in tests/conformance run every family's tool on such files (written with
h5py, not attnlab, as the files of issue 51 were). Exit 77 when h5py or numpy is missing, which
the tests report as skipped.
"""
import shutil
import sys

try:
    import h5py
    import numpy as np
except ImportError:
    sys.exit(77)

EOS = 2  # data/vocab.hpp


def replace(group, name, data):
    del group[name]
    group.create_dataset(name, data=data)


def one_step(g):
    """Each layout's examples cut to one step, its lengths set to match."""
    names = set(g.keys())
    if "inputs" in names:  # NTM sequences: inputs [N, Tin, I], targets [N, Tout, O]
        n = g["inputs"].shape[0]
        for name in ("inputs", "targets"):
            replace(g, name, g[name][:, :1])
        for name in ("input_len", "target_len"):
            replace(g, name, np.ones(n, np.int32))
    if "story" in names:  # bAbI: story [N, Ms, Ws], question [N, Wq], support [N, Ks]
        n = g["story"].shape[0]
        replace(g, "story", g["story"][:, :1, :1])
        replace(g, "story_len", np.ones(n, np.int32))
        replace(g, "question", g["question"][:, :1])
        replace(g, "support", np.zeros_like(g["support"][:]))  # the one sentence, or none: -1 < 0 < 1
    if "src" in names:  # tokens, labelled: src [N, S], segments [N, S]
        n = g["src"].shape[0]
        replace(g, "src", g["src"][:, :1])
        replace(g, "src_len", np.ones(n, np.int32))
        if "segments" in names:
            replace(g, "segments", g["segments"][:, :1])
    if "tgt" in names:  # tokens, captions: tgt [N, T] ending in EOS, boxes [N, T, 4]
        n = g["tgt"].shape[0]
        replace(g, "tgt", np.full((n, 1), EOS, np.int32))
        replace(g, "tgt_len", np.ones(n, np.int32))
        if "boxes" in names:
            replace(g, "boxes", np.full((n, 1, 4), -1, np.int32))


def main(argv):
    if len(argv) not in (5, 6) or argv[4] not in ("--rows", "--one-step"):
        sys.exit(__doc__)
    src, dst, split = argv[1], argv[2], argv[3]
    shutil.copyfile(src, dst)
    with h5py.File(dst, "r+") as f:
        g = f[split]
        if argv[4] == "--one-step":
            one_step(g)
        else:
            k = int(argv[5])
            for name in list(g.keys()):
                replace(g, name, g[name][:k])


if __name__ == "__main__":
    main(sys.argv)
