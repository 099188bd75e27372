"""The table of experiments/finetune-pairs (run.sh): test accuracy of every init and seed on the
Multi30k sentence-pair task, from RESULTS/<size>/<init>/seed<k>.test.h5 (attn-transformer classify).

usage: table.py RESULTS --sizes "full small" --inits "scratch-mlm mlm ..." --seeds "1 2 3"
"""
import argparse
import os
import statistics

import h5py

TITLES = {
    "scratch-mlm": "encoder, from scratch",
    "mlm": "encoder, MLM pre-trained (BERT)",
    "scratch-lm": "decoder, from scratch",
    "lm": "decoder, LM pre-trained (GPT)",
}


def accuracy(path):
    with h5py.File(path, "r") as f:
        return 100.0 * float((f["/predictions"][()] == f["/label"][()]).mean())


def main():
    p = argparse.ArgumentParser()
    p.add_argument("results")
    p.add_argument("--sizes", required=True)
    p.add_argument("--inits", required=True)
    p.add_argument("--seeds", required=True)
    a = p.parse_args()
    sizes, inits, seeds = a.sizes.split(), a.inits.split(), a.seeds.split()
    acc = {}
    for size in sizes:
        with h5py.File(os.path.join(a.results, "data", f"{size}.h5"), "r") as f:
            pairs = f["/train/label"].shape[0] // 2
        for init in inits:
            runs = [os.path.join(a.results, size, init, f"seed{s}.test.h5") for s in seeds]
            acc[size, init] = [accuracy(r) if os.path.exists(r) else None for r in runs]
        acc[size] = pairs
    print("Test accuracy (%) on Multi30k test_2016_flickr pairs (2,000: every line with its translation "
          "and with another line's; chance 50), median over the seeds and every seed (" + ", ".join(seeds) + ").\n")
    print("| fine-tuning pairs | " + " | ".join(TITLES.get(i, i) for i in inits) + " |")
    print("|" + "---|" * (len(inits) + 1))
    for size in sizes:
        cells = []
        for init in inits:
            v = [x for x in acc[size, init] if x is not None]
            cells.append(f"**{statistics.median(v):.1f}** ({', '.join(f'{x:.1f}' for x in v)})" if v else "-")
        print(f"| {size}: {acc[size]:,} training lines | " + " | ".join(cells) + " |")
    print("\nThe effect of pre-training (accuracy points gained over the same architecture from scratch, "
          "medians; per seed in parentheses):\n")
    for size in sizes:
        for pre, base in (("mlm", "scratch-mlm"), ("lm", "scratch-lm")):
            p_, b_ = acc.get((size, pre)), acc.get((size, base))
            if not p_ or not b_ or None in p_ or None in b_:
                continue
            d = statistics.median(p_) - statistics.median(b_)
            print(f"- {size}, {TITLES[pre]}: **{d:+.1f}** ({', '.join(f'{x - y:+.1f}' for x, y in zip(p_, b_))})")


if __name__ == "__main__":
    main()
