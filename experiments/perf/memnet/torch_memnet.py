#!/usr/bin/env python3
"""The end-to-end memory network of experiments/perf/memnet in PyTorch: the same model as
attnlab's memnet::MemN2N (lib/include/attn/families/memnet/model.hpp) with attn-memnet train's
defaults, for the side-by-side speed comparison (run.sh runs this and bench/perf_memnet), and
the check that it IS the same model.

The model (Sukhbaatar et al. 2015), shapes and parameter count equal to attnlab's (printed):
  tables      adjacent tying: K + 1 nn.Embedding(V, E), A1, C1 .. CK (A^{k+1} = C^k, B = A1,
              W = CK), and K + 1 nn.Embedding(Mm, E) for the temporal encoding, T_A1, T_C1 ..
              T_CK; K = 3 hops, Mm = 50
  sentences   position encoding (the paper's): e(x) = sum_j l_j * X[x_j] over the words before
              the first PAD, l_kj = (1 - j/J) - (k/E)(1 - 2j/J); l for every J is a buffer, zero
              past a sentence's J words, so PAD words add nothing (and get no gradient)
  memory      slot i of a story of n sentences is read when n - Mm <= i < n; its temporal
              index is n - 1 - i; m_i = e_A(x_i) + T_A[t_i], c_i = e_C(x_i) + T_C[t_i]; each
              table's memory is embedded once (it is hop k's c and hop k + 1's m)
  hops        p = softmax(u . m_i) with the other slots masked out (as attnlab excludes them),
              o = sum_i p_i c_i with bmm, u <- u + o; all vectorised over the batch
  answer      logits = u CK^T (F.linear), F.cross_entropy (mean over the batch)
Training step as attn-memnet train takes it: zero_grad, forward, backward,
clip_grad_norm_(1.25), torch.optim.SGD(lr=0.32). No random noise, no linear start.

Data: the bAbI data set of attn-data babi (--data, h5py) and the file `perf_memnet --export
FILE` writes (--export: the pool's rows of /train, the initial parameters, and a check). A
repetition trains on the pool in consecutive batches of --batch questions, each cut to its
longest story as attnlab's trainer gathers them.

--check runs the same-model check instead of timing: one forward and backward from the
exported initial weights on the pool's first check_batch questions (loss and every gradient
against attnlab's), then check_steps full training steps, the parameters compared with
attnlab's after the same steps.
Prints one line of key=value pairs (torch_perf.measure): impl, mode, threads, batch,
questions_per_s, us_per_question, median_s, min_s, max_s, cpu_questions_per_s, params, questions.
"""
import argparse
import os
import sys

import h5py
import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from torch_perf import measure  # noqa: E402 (experiments/perf/torch_perf.py)


def position_encoding(wmax, E):
    """l [wmax + 1, wmax, E]: row J holds the weights of a J-word sentence's words (1-based j, k
    in the formula), zero for j > J."""
    pe = torch.zeros(wmax + 1, wmax, E)
    k = torch.arange(1, E + 1, dtype=torch.float64)
    for J in range(1, wmax + 1):
        for j in range(1, J + 1):
            pe[J, j - 1] = ((1 - j / J) - (k / E) * (1 - 2 * j / J)).float()
    return pe


class MemN2N(nn.Module):
    def __init__(self, V, E, hops, Mm, wmax):
        super().__init__()
        self.hops, self.Mm = hops, Mm
        self.tables = nn.ModuleList(nn.Embedding(V, E) for _ in range(hops + 1))     # A1, C1 .. CK
        self.temporal = nn.ModuleList(nn.Embedding(Mm, E) for _ in range(hops + 1))  # T_A1, T_C1 ..
        self.register_buffer("pe", position_encoding(wmax, E))

    def names(self):
        """attnlab's names (families/memnet/model.hpp) -> this model's parameters."""
        K = self.hops
        out = {"A1": self.tables[0].weight, "T_A1": self.temporal[0].weight}
        for k in range(1, K + 1):
            out[f"C{k}"], out[f"T_C{k}"] = self.tables[k].weight, self.temporal[k].weight
        return out

    def load(self, params):
        with torch.no_grad():
            for name, p in self.names().items():
                p.copy_(params[name])

    def weights(self, words):
        """The position encoding's l for sentences words [..., W]: [..., W, E]. One lookup of
        the rows of pe (F.embedding: a row gather, faster than indexing) per batch, shared by
        every table that embeds these sentences."""
        W, E = words.shape[-1], self.pe.shape[2]
        J = (words != 0).int().cumprod(-1).sum(-1)   # words before the first PAD
        return F.embedding(J, self.pe[:, :W].reshape(self.pe.shape[0], W * E)).view(*words.shape, E)

    @staticmethod
    def embed(table, words, l):
        """Sentences words [..., W] with their weights l [..., W, E] -> sums [..., E]."""
        return (table(words) * l).sum(-2)

    def forward(self, story, story_len, question):
        """story [B, Ms, Ws], story_len [B], question [B, Wq] -> logits [B, V]."""
        Ms = story.shape[1]
        i = torch.arange(Ms)
        n = story_len.unsqueeze(1)
        read = (i < n) & (i >= n - self.Mm)                # [B, Ms]: the slots read
        t = (n - 1 - i).clamp(0, self.Mm - 1)              # temporal index (any valid row outside)
        l = self.weights(story)
        mem = [self.embed(X, story, l) + T(t) for X, T in zip(self.tables, self.temporal)]
        u = self.embed(self.tables[0], question, self.weights(question))
        for k in range(self.hops):
            scores = torch.bmm(mem[k], u.unsqueeze(2)).squeeze(2).masked_fill(~read, float("-inf"))
            p = torch.softmax(scores, dim=1)
            u = u + torch.bmm(p.unsqueeze(1), mem[k + 1]).squeeze(1)
        return F.linear(u, self.tables[-1].weight)

    def loss(self, batch):
        story, story_len, question, answer = batch
        return F.cross_entropy(self(story, story_len, question), answer)


def read_inputs(data_path, export_path):
    with h5py.File(export_path, "r") as f:
        index = torch.from_numpy(f["pool/index"][()]).long()
        params, grads, after = {}, {}, {}
        for group, out in (("params", params), ("check/grads", grads), ("check/after", after)):
            for name, d in f[group].items():
                out[name] = torch.from_numpy(d[()])
        attrs = dict(f.attrs)
    with h5py.File(data_path, "r") as f:
        train = {k: torch.from_numpy(f["train/" + k][()]).long() for k in ("story", "story_len", "question", "answer")}
    return train, index, params, grads, after, attrs


def make_batches(train, index, B):
    """The pool's consecutive batches of B questions, cut as data::QaSplit::gather cuts
    attnlab's (its trainer's and perf_memnet's): the memory to the batch's longest story, the
    sentences and questions to the widest (bAbI has no PAD inside a sentence)."""
    def widest(words):
        return max(1, int((words != 0).sum(-1).max()))

    out = []
    for b in range(0, len(index), B):
        rows = index[b:b + B]
        n = train["story_len"][rows]
        story = train["story"][rows, :int(n.max())]
        question = train["question"][rows]
        out.append((story[..., :widest(story)].contiguous(), n, question[:, :widest(question)].contiguous(),
                    train["answer"][rows]))
    return out


def build(train, attrs, params):
    wmax = max(train["story"].shape[2], train["question"].shape[1])
    model = MemN2N(int(attrs["vocab_size"]), int(attrs["embedding_size"]), int(attrs["hops"]),
                   int(attrs["memory_size"]), wmax)
    model.load(params)
    return model


def max_diff(ours, theirs):
    """Largest |difference| over every parameter, and the largest relative to max |theirs| of
    that parameter."""
    worst_abs, worst_rel = 0.0, 0.0
    for name, t in theirs.items():
        d = (ours[name].detach().float() - t).abs().max().item()
        worst_abs = max(worst_abs, d)
        worst_rel = max(worst_rel, d / max(t.abs().max().item(), 1e-30))
    return worst_abs, worst_rel


def check(a):
    train, index, params, grads, after, attrs = read_inputs(a.data, a.export)
    B, steps = int(attrs["check_batch"]), int(attrs["check_steps"])
    batches = make_batches(train, index, B)
    model = build(train, attrs, params)
    nparams = sum(p.numel() for p in model.parameters())
    loss = model.loss(batches[0])
    loss.backward()
    g_abs, g_rel = max_diff({k: p.grad for k, p in model.names().items()}, grads)
    ref = float(attrs["check_loss"])
    print(f"check impl=torch params={nparams} batch={B} loss_torch={loss.item():.7f} loss_attnlab={ref:.7f} "
          f"loss_rel_diff={abs(loss.item() - ref) / ref:.2e} grad_max_abs_diff={g_abs:.2e} "
          f"grad_max_rel_diff={g_rel:.2e}", flush=True)
    model = build(train, attrs, params)
    opt = torch.optim.SGD(model.parameters(), lr=float(attrs["lr"]))
    for t in range(steps):
        opt.zero_grad(set_to_none=True)
        model.loss(batches[t % len(batches)]).backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), float(attrs["clip"]))
        opt.step()
    p_abs, p_rel = max_diff(model.names(), after)
    moved_abs, _ = max_diff(params, after)
    print(f"check impl=torch optimizer=sgd steps={steps} param_max_abs_diff={p_abs:.2e} "
          f"param_max_rel_diff={p_rel:.2e} attnlab_max_param_change={moved_abs:.2e}", flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", required=True, help="the bAbI data set (attn-data babi)")
    ap.add_argument("--export", required=True, help="the file perf_memnet --export wrote from it")
    ap.add_argument("--check", action="store_true", help="run the same-model check and exit")
    ap.add_argument("--tag", default="babi", help="the data set's name in the mode (train-TAG-bB)")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--questions", type=int, default=2048, help="questions per repetition (the pool's first)")
    ap.add_argument("--steps", type=int, default=5, help="timed repetitions (median reported)")
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--label", default="torch", help="impl name printed (run.sh: torch, torch-nommap)")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    if a.check:
        check(a)
        return
    if a.questions % a.batch:
        ap.error(f"--questions ({a.questions}) must be a multiple of --batch ({a.batch})")
    train, index, params, _, _, attrs = read_inputs(a.data, a.export)
    if len(index) < a.questions:
        ap.error(f"{a.export} holds a pool of {len(index)} questions, fewer than --questions {a.questions}")
    model = build(train, attrs, params)
    nparams = sum(p.numel() for p in model.parameters())
    batches = make_batches(train, index[:a.questions], a.batch)
    opt = torch.optim.SGD(model.parameters(), lr=float(attrs["lr"]))
    clip = float(attrs["clip"])
    model.train()

    def run():
        for batch in batches:
            opt.zero_grad(set_to_none=True)
            model.loss(batch).backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
            opt.step()

    measure(run, impl=a.label, mode=f"train-{a.tag}-b{a.batch}", threads=a.threads, warmup=a.warmup,
            steps=a.steps, tokens=a.questions, params=nparams, unit="questions", fields=f"batch={a.batch}")


if __name__ == "__main__":
    main()
