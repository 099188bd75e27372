#!/usr/bin/env python3
"""The issue-4 RNN encoder-decoder in PyTorch, the same model as attnlab's seq2seq::Seq2Seq with
attention concat, style bahdanau, for the side-by-side speed comparison of
experiments/perf/seq2seq (run.sh runs this and bench/perf_seq2seq).

The model (Bahdanau et al. 2015, as in the well-known PyTorch tutorial "Neural Machine
Translation by Jointly Learning to Align and Translate"), shapes and parameter count equal to
attnlab's (printed):
  encoder   embedding [V, 256], bidirectional GRU (hidden 256 per direction) -> h_j [512]
  bridge    s_0 = tanh(W_b [h->_last; h<-_first] + b_b)
  attention e_j = v^T tanh(W s_{t-1} + U h_j) (W [256, 256], U [256, 512], v [256], no biases,
            as attnlab's nn::Attention), softmax over j, c_t = sum_j a_j h_j
  decoder   embedding [V, 256], GRU cell on [e_t; c_t] (768 -> 256)
  output    logits_t = W_o [s_t; c_t; e_t] + b_o   (1024 -> V)
Plain cross-entropy (no label smoothing), teacher forcing, Adam.

Two implementations, both measured (run.sh reports the faster as PyTorch's best):
  torch        U h_j computed once per batch, the output layer and the loss of all target steps
               as one [T*B, 1024] x [1024, V] product after the decoder loop (as attnlab does)
  torch-tutor  the tutorial's loop: the attention's linear layer over [s; h_j] and the output
               layer run inside every decoder step
Prints one line of key=value pairs: impl (--label, default --impl), mode, threads, tokens_per_s,
median_s, min_s, max_s (seconds per repetition), cpu_tokens_per_s (over the process's CPU
time), params, tokens.
"""
import argparse
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from torch_perf import BOS, PAD, make_batch, measure  # noqa: E402 (experiments/perf/torch_perf.py)


class Seq2Seq(nn.Module):
    def __init__(self, vocab, emb, hid, att, dec):
        super().__init__()
        self.src_embed = nn.Embedding(vocab, emb, padding_idx=PAD)
        self.encoder = nn.GRU(emb, hid, bidirectional=True)
        self.bridge = nn.Linear(2 * hid, dec)
        self.tgt_embed = nn.Embedding(vocab, emb, padding_idx=PAD)
        self.W = nn.Linear(dec, att, bias=False)        # query part of the additive score
        self.U = nn.Linear(2 * hid, att, bias=False)    # key part
        self.v = nn.Linear(att, 1, bias=False)
        self.cell = nn.GRUCell(emb + 2 * hid, dec)
        self.out = nn.Linear(dec + 2 * hid + emb, vocab)

    def encode(self, src):   # src [S, B] (all sentences full length)
        h, last = self.encoder(self.src_embed(src))                   # h [S, B, 2H]
        s0 = torch.tanh(self.bridge(torch.cat([last[0], last[1]], dim=1)))
        return h.transpose(0, 1), s0                                  # [B, S, 2H], [B, Dd]

    def forward_batched(self, src, dec_in):
        """Logits [T*B, V]: U h once, the output layer once after the loop."""
        mem, s = self.encode(src)
        keys = self.U(mem)                                            # [B, S, A]
        emb = self.tgt_embed(dec_in)                                  # [T, B, E]
        outs = []
        for t in range(dec_in.shape[0]):
            e = self.v(torch.tanh(keys + self.W(s).unsqueeze(1))).squeeze(2)   # [B, S]
            a = torch.softmax(e, dim=1)
            c = torch.bmm(a.unsqueeze(1), mem).squeeze(1)            # [B, 2H]
            s = self.cell(torch.cat([emb[t], c], dim=1), s)
            outs.append(torch.cat([s, c, emb[t]], dim=1))
        return self.out(torch.stack(outs).flatten(0, 1))

    def forward_tutorial(self, src, dec_in):
        """The tutorial's loop: attention over [s; h_j] and the output layer per step."""
        mem, s = self.encode(src)
        S = mem.shape[1]
        emb = self.tgt_embed(dec_in)
        Wcat = torch.cat([self.W.weight, self.U.weight], dim=1)      # Linear over [s; h_j]
        logits = []
        for t in range(dec_in.shape[0]):
            energy = torch.tanh(F.linear(torch.cat([s.unsqueeze(1).repeat(1, S, 1), mem], dim=2), Wcat))
            a = torch.softmax(self.v(energy).squeeze(2), dim=1)
            c = torch.bmm(a.unsqueeze(1), mem).squeeze(1)
            s = self.cell(torch.cat([emb[t], c], dim=1), s)
            logits.append(self.out(torch.cat([s, c, emb[t]], dim=1)))
        return torch.stack(logits).flatten(0, 1)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--impl", choices=["torch", "torch-tutor"], default="torch")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--steps", type=int, default=5, help="timed steps (median reported)")
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--vocab", type=int, default=8000)
    ap.add_argument("--embed", type=int, default=256)
    ap.add_argument("--hidden", type=int, default=256)
    ap.add_argument("--attention-dim", type=int, default=256)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--length", type=int, default=24)
    ap.add_argument("--label", default="", help="impl name printed (default: --impl)")
    a = ap.parse_args()

    torch.set_num_threads(a.threads)
    torch.manual_seed(1)
    model = Seq2Seq(a.vocab, a.embed, a.hidden, a.attention_dim, a.hidden)
    params = sum(p.numel() for p in model.parameters())
    src, tgt = (x.t().contiguous() for x in make_batch(a.batch, a.length, a.vocab))   # time-major [L, B]
    dec_in = torch.cat([torch.full((1, a.batch), BOS, dtype=torch.long), tgt[:-1]], dim=0)
    opt = torch.optim.Adam(model.parameters(), lr=1e-4)
    forward = model.forward_batched if a.impl == "torch" else model.forward_tutorial
    tokens = int((tgt != PAD).sum())
    model.train()

    def run():
        opt.zero_grad(set_to_none=True)
        loss = F.cross_entropy(forward(src, dec_in), tgt.reshape(-1), ignore_index=PAD)
        loss.backward()
        opt.step()

    measure(run, impl=a.label or a.impl, mode="train", threads=a.threads, warmup=a.warmup, steps=a.steps,
            tokens=tokens, params=params)


if __name__ == "__main__":
    main()
