"""The table of experiments/finetune-babi (run.sh).

usage: table.py table RESULTS --data DATA.h5 --inits "scratch-mlm mlm ..." --seeds "1 2 3"
           per-task test error of every init and seed from RESULTS/ft/<init>/seed<k>.test.h5
           (attn-transformer classify of the selected checkpoint), beside the memory network's
           measured errors (experiments/memnet-babi/README.md)
"""
import argparse
import os
import statistics
import sys

import h5py
import numpy as np

FAILED = 5.0   # % test error above which a task counts as failed (Sukhbaatar et al. 2015)

TITLES = {
    "scratch-mlm": "encoder, from scratch",
    "mlm": "encoder, MLM pre-trained (BERT)",
    "scratch-lm": "decoder, from scratch",
    "lm": "decoder, LM pre-trained (GPT)",
    "lm-aux": "decoder, LM pre-trained, aux LM 0.5",
}

# experiments/memnet-babi/README.md, "1k training questions per task" (measured 2026-11-24 with
# this project's attn-memnet): test error in % of the PE LS RN joint column (one model on the 20
# tasks) and the PE LS RN column (one model per task), as (best of 10 runs by validation error,
# median of the 10 runs).
MEMNET_JOINT = {
    1: (0.0, 0.1), 2: (9.1, 9.9), 3: (24.1, 24.3), 4: (1.5, 1.8), 5: (13.5, 14.0), 6: (3.1, 3.5),
    7: (18.2, 18.2), 8: (10.0, 10.9), 9: (2.4, 2.3), 10: (6.4, 6.4), 11: (0.9, 1.1), 12: (0.4, 0.2),
    13: (0.0, 0.2), 14: (3.6, 5.6), 15: (0.0, 0.1), 16: (1.5, 1.2), 17: (41.6, 44.0), 18: (9.0, 9.7),
    19: (91.2, 91.3), 20: (0.0, 0.0),
}
MEMNET_SINGLE = {
    1: (0.0, 0.0), 2: (9.8, 13.2), 3: (42.8, 43.0), 4: (4.0, 11.4), 5: (11.4, 12.5), 6: (8.1, 8.0),
    7: (18.2, 19.5), 8: (7.9, 10.3), 9: (10.0, 13.0), 10: (16.7, 19.0), 11: (1.4, 2.9), 12: (0.1, 0.0),
    13: (2.3, 8.6), 14: (0.4, 2.6), 15: (0.0, 0.3), 16: (0.5, 0.4), 17: (52.9, 53.1), 18: (11.0, 11.3),
    19: (83.2, 87.2), 20: (0.0, 0.1),
}


def task_errors(data, output):
    """{task: test error in %} of one classification output (attn-transformer classify)."""
    with h5py.File(data, "r") as d, h5py.File(output, "r") as o:
        tasks = d["/test/task"][()]
        wrong = o["/predictions"][()] != o["/label"][()]
        if len(wrong) != len(tasks):
            sys.exit(f"table.py: {output} has {len(wrong)} examples, {data} /test {len(tasks)}")
    return {int(t): 100.0 * float(wrong[tasks == t].mean()) for t in np.unique(tasks)}


def fmt(x):
    return f"{x:.1f}"


def table(args):
    inits, seeds = args.inits.split(), args.seeds.split()
    errors = {}   # init -> seed -> {task: error}
    for init in inits:
        for seed in seeds:
            path = os.path.join(args.results, "ft", init, f"seed{seed}.test.h5")
            if os.path.exists(path):
                errors.setdefault(init, {})[seed] = task_errors(args.data, path)
    inits = [i for i in inits if i in errors]
    if not inits:
        sys.exit("table.py: no fine-tuned model has been evaluated yet")
    tasks = sorted(next(iter(next(iter(errors.values())).values())))
    out = []
    out.append("Test error (%) per task: the median over the seeds of each init's fine-tuned model "
               f"(seeds {', '.join(seeds)}), beside the memory network (PE LS RN, 1k; experiments/memnet-babi: "
               "best of 10 runs by validation error / median of the 10).\n")
    head = "| task | " + " | ".join(TITLES.get(i, i) for i in inits) + " | MemN2N joint | MemN2N per task |"
    out.append(head)
    out.append("|" + "---|" * (len(inits) + 3))
    for t in tasks:
        cells = [fmt(statistics.median(errors[i][s][t] for s in errors[i])) for i in inits]
        out.append(f"| {t} | " + " | ".join(cells) +
                   f" | {fmt(MEMNET_JOINT[t][0])} / {fmt(MEMNET_JOINT[t][1])}"
                   f" | {fmt(MEMNET_SINGLE[t][0])} / {fmt(MEMNET_SINGLE[t][1])} |")

    def mean(d):
        return statistics.fmean(d[t] for t in tasks)

    def failed(d):
        return sum(d[t] > FAILED for t in tasks)

    per_seed_mean = {i: [mean(errors[i][s]) for s in errors[i]] for i in inits}
    per_seed_failed = {i: [failed(errors[i][s]) for s in errors[i]] for i in inits}
    mn = {k: (statistics.fmean(v[t][0] for t in tasks), statistics.fmean(v[t][1] for t in tasks))
          for k, v in (("joint", MEMNET_JOINT), ("single", MEMNET_SINGLE))}
    fl = {k: (sum(v[t][0] > FAILED for t in tasks), sum(v[t][1] > FAILED for t in tasks))
          for k, v in (("joint", MEMNET_JOINT), ("single", MEMNET_SINGLE))}
    out.append(f"| **mean error, median over seeds** | " +
               " | ".join(f"**{fmt(statistics.median(per_seed_mean[i]))}**" for i in inits) +
               f" | **{fmt(mn['joint'][0])} / {fmt(mn['joint'][1])}** | **{fmt(mn['single'][0])} / {fmt(mn['single'][1])}** |")
    out.append("| mean error, every seed | " + " | ".join(
        ", ".join(fmt(m) for m in per_seed_mean[i]) for i in inits) + " | | |")
    out.append("| failed tasks (> 5%), every seed | " + " | ".join(
        ", ".join(str(n) for n in per_seed_failed[i]) for i in inits) +
               f" | {fl['joint'][0]} / {fl['joint'][1]} | {fl['single'][0]} / {fl['single'][1]} |")
    out.append("")
    out.append(f"Means over the {len(tasks)} tasks above (tasks 8 and 19, list answers, are not "
               "classification tasks). Seeds in the order " + ", ".join(seeds) + ".")
    # The effect of pre-training: each pre-trained body against the same architecture from scratch,
    # then against the other architecture from scratch (the best from-scratch model is the bar).
    pairs = [("mlm", "scratch-mlm"), ("lm", "scratch-lm"), ("lm-aux", "scratch-lm"), ("mlm", "scratch-lm"),
             ("lm", "scratch-mlm")]
    lines = []
    for pre, base in pairs:
        if pre in errors and base in errors:
            d = statistics.median(per_seed_mean[base]) - statistics.median(per_seed_mean[pre])
            lines.append(f"- {TITLES.get(pre, pre)} against {TITLES.get(base, base)}: mean error "
                         f"{fmt(statistics.median(per_seed_mean[pre]))} vs {fmt(statistics.median(per_seed_mean[base]))}, "
                         f"**{d:+.1f} points** lower with pre-training (medians over seeds); per seed "
                         + ", ".join(f"{b - p:+.1f}" for p, b in zip(per_seed_mean[pre], per_seed_mean[base])))
    if lines:
        out.append("")
        out.append("The effect of pre-training (positive: pre-training lowers the error):\n")
        out.extend(lines)
    print("\n".join(out))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("verb", choices=["table"])
    p.add_argument("results")
    p.add_argument("--data", required=True)
    p.add_argument("--inits", required=True)
    p.add_argument("--seeds", required=True)
    table(p.parse_args())


if __name__ == "__main__":
    main()
