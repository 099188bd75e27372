"""The tables of experiments/memnet-babi (run.sh): per-task bAbI test error of every column, as
the run of the best validation error (the paper's protocol) and as the median over all runs,
beside Sukhbaatar et al. (2015) Table 1's mean error and failed tasks; or (--hops) the hop table
of one answered question as text.

usage: table.py RESULTS --sets "en en-10k" --columns "bow pe ..." [--columns-10k "..."]
       table.py RESULTS --hops ANSWERS.h5 --index I
"""
import argparse
import glob
import os
import re
import statistics

import h5py
import numpy as np

TITLES = {"bow": "BoW", "pe": "PE", "pe-ls": "PE LS", "pe-ls-rn": "PE LS RN", "joint": "PE LS RN joint"}
# Sukhbaatar et al. (2015), Table 1: mean test error (%) and failed tasks (error > 5%) of the
# MemN2N columns, 3 hops.
PAPER = {
    "en": {"bow": (25.1, 15), "pe": (20.3, 13), "pe-ls": (16.3, 12), "pe-ls-rn": (13.9, 11), "joint": (12.4, 11)},
    "en-10k": {"bow": (15.4, 9), "pe": (9.4, 6), "pe-ls": (7.2, 4), "pe-ls-rn": (6.6, 4), "joint": (7.5, 6)},
}
SET_NAMES = {"en": "1k", "en-10k": "10k"}
FAILED = 5.0   # % test error above which a task counts as failed


def single_task_errors(directory):
    """{task: (kept run index, [test error % of every run])} from task<N>.repeats.h5."""
    out = {}
    for path in glob.glob(os.path.join(directory, "task*.repeats.h5")):
        task = int(re.search(r"task(\d+)\.repeats\.h5$", path).group(1))
        with h5py.File(path, "r") as f:
            out[task] = (int(f.attrs["kept_run"]) - 1, [100.0 * e for e in f["/test_error"][()]])
    return out


def joint_errors(directory):
    """The same for a joint model: every run's per-task error from all.run<k>.eval.txt."""
    path = os.path.join(directory, "all.repeats.h5")
    if not os.path.exists(path):
        return {}
    with h5py.File(path, "r") as f:
        kept, runs = int(f.attrs["kept_run"]) - 1, len(f["/test_error"][()])
    per_run = []
    for k in range(1, runs + 1):
        text = open(os.path.join(directory, f"all.run{k}.eval.txt")).read()
        per_run.append({int(t): 100.0 * float(e) for t, e in re.findall(r"task +(\d+): accuracy [0-9.]+, error ([0-9.]+)", text)})
    return {t: (kept, [run[t] for run in per_run]) for t in per_run[0]}


def cell(kept, errors):
    return f"{errors[kept]:.1f} ({statistics.median(errors):.1f})"


def set_table(results, set_name, columns):
    data = {}
    for c in columns:
        d = os.path.join(results, set_name, c)
        data[c] = joint_errors(d) if c == "joint" else single_task_errors(d)
    columns = [c for c in columns if data[c]]
    if not columns:
        return ""
    runs = min(len(e) for c in columns for _, e in data[c].values())
    tasks = sorted({t for c in columns for t in data[c]})
    lines = [f"### bAbI {SET_NAMES.get(set_name, set_name)} ({set_name}): test error %, best of {runs} runs by "
             f"validation error (median of the {runs} runs)", "",
             "| task | " + " | ".join(TITLES[c] for c in columns) + " |", "|---|" + "---|" * len(columns)]
    for t in tasks:
        lines.append(f"| {t} | " + " | ".join(cell(*data[c][t]) if t in data[c] else "-" for c in columns) + " |")

    def row(label, values):
        lines.append(f"| **{label}** | " + " | ".join(values) + " |")

    best_mean, best_failed, median_mean, median_failed, spread = [], [], [], [], []
    for c in columns:
        kept = [e[k] for k, e in data[c].values()]
        best_mean.append(f"**{np.mean(kept):.1f}**")
        best_failed.append(str(sum(e > FAILED for e in kept)))
        # A "run" of the whole table: the k-th run of every task (seed --seed + k - 1).
        by_run = [[e[k] for _, e in data[c].values()] for k in range(runs)]
        means = [np.mean(r) for r in by_run]
        median_mean.append(f"{statistics.median(means):.1f}")
        spread.append(f"{min(means):.1f}-{max(means):.1f}")
        median_failed.append(f"{statistics.median(sum(e > FAILED for e in r) for r in by_run):g}")
    row("mean error, best of runs", best_mean)
    row(f"failed tasks (> {FAILED:g}%), best of runs", best_failed)
    row("mean error, median run", median_mean)
    row("mean error, range over runs", spread)
    row("failed tasks, median run", median_failed)
    paper = PAPER.get(set_name, {})
    row("paper: mean error", [f"{paper[c][0]}" if c in paper else "-" for c in columns])
    row("paper: failed tasks", [f"{paper[c][1]}" if c in paper else "-" for c in columns])
    lines.append("")
    return "\n".join(lines)


def words(f, ids):
    vocab = [w.decode() if isinstance(w, bytes) else str(w) for w in f["/vocab/words"][()]]
    return " ".join(vocab[i] for i in ids if i > 0)


def hop_table(answers, index):
    with h5py.File(answers, "r") as f:
        att = f["/attention/support_hops"][index]          # [1 + hops, Ms]
        story = f["/story"][index]                          # [Ms, W]
        n = int(f["/story_len"][index])
        vocab = [w.decode() if isinstance(w, bytes) else str(w) for w in f["/vocab/words"][()]]
        question = words(f, f["/question"][index])
        answer, predicted = vocab[int(f["/answer"][index])], vocab[int(f["/predictions"][index])]
        task = int(f["/task"][index])
    hops = att.shape[0] - 1
    lines = [f"Task {task}, test question {index}: \"{question}\" answer {answer}, predicted {predicted}", "",
             "| story | Support | " + " | ".join(f"Hop {h + 1}" for h in range(hops)) + " |",
             "|---|---|" + "---|" * hops]
    for i in range(n):
        text = " ".join(vocab[w] for w in story[i] if w > 0)
        lines.append(f"| {text} | {'yes' if att[0, i] > 0 else ''} | " +
                     " | ".join(f"{att[h + 1, i]:.2f}" for h in range(hops)) + " |")
    return "\n".join(lines)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("results")
    p.add_argument("--sets", default="en en-10k")
    p.add_argument("--columns", default="bow pe pe-ls pe-ls-rn joint")
    p.add_argument("--columns-10k")
    p.add_argument("--hops")
    p.add_argument("--index", type=int, default=0)
    a = p.parse_args()
    if a.hops:
        print(hop_table(a.hops, a.index))
        return
    for s in a.sets.split():
        cols = (a.columns_10k or a.columns) if s == "en-10k" else a.columns
        print(set_table(a.results, s, cols.split()))


if __name__ == "__main__":
    main()
