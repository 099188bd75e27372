#!/usr/bin/env python3
"""T-small in PyTorch, the same model as attnlab's transformer::Transformer, for the side-by-side
speed comparison of experiments/perf/transformer (run.sh runs this and bench/perf_transformer).

The model mirrors attnlab's defaults exactly (shapes and parameter count, printed):
  separate source/target embeddings [V, D] scaled by sqrt(D) + sinusoidal positions, dropout;
  post-norm layers, LayerNorm(x + dropout(sublayer(x))) (nn.TransformerEncoderLayer's order);
  multi-head attention with biases and no dropout on the attention weights (attnlab has none);
  feed-forward ReLU with dropout on the hidden activation; output tied to the target embedding
  (no bias); label-smoothed cross-entropy ignoring PAD (0); Adam.

Measures (one mode per process, the thread count set by torch.set_num_threads):
  train        full step: zero_grad, forward, loss, backward, Adam step; target tokens/s
  decode       greedy decoding with a key/value cache written here: each step embeds one
               token per sentence, projects only its own key/value per layer, attends over the
               cached ones, and cross-attention keys/values are projected once per batch
  decode-rerun greedy decoding the way PyTorch tutorials do it: every step re-runs the whole
               decoder over the prefix (nn.Transformer style, causal mask) and keeps the last row
Every sentence gets exactly --new-tokens tokens (no early stop at EOS), as on the attnlab side.

Prints one line of key=value pairs: impl (--label, default torch or torch-rerun), mode, threads, tokens_per_s,
median_s, min_s, max_s (seconds per repetition), cpu_tokens_per_s (over the process's CPU
time), params, tokens.
"""
import argparse
import math
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from torch_perf import BOS, PAD, add_tsmall_args, make_batch, measure, sinusoidal_positions  # noqa: E402 (experiments/perf/torch_perf.py)


class Layer(nn.Module):
    """Encoder (cross=False) or decoder (cross=True) layer, post-norm."""

    def __init__(self, d, heads, d_ff, dropout, cross):
        super().__init__()
        self.heads = heads
        self.self_attn = nn.MultiheadAttention(d, heads, dropout=0.0, batch_first=True)
        self.norm1 = nn.LayerNorm(d)
        self.cross_attn = nn.MultiheadAttention(d, heads, dropout=0.0, batch_first=True) if cross else None
        self.norm2 = nn.LayerNorm(d) if cross else None
        self.linear1 = nn.Linear(d, d_ff)
        self.linear2 = nn.Linear(d_ff, d)
        self.norm3 = nn.LayerNorm(d)
        self.drop = nn.Dropout(dropout)

    def forward(self, x, memory=None, causal_mask=None):
        a = self.self_attn(x, x, x, attn_mask=causal_mask, need_weights=False)[0]
        x = self.norm1(x + self.drop(a))
        if self.cross_attn is not None:
            c = self.cross_attn(x, memory, memory, need_weights=False)[0]
            x = self.norm2(x + self.drop(c))
        f = self.linear2(self.drop(F.relu(self.linear1(x))))
        return self.norm3(x + self.drop(f))

    # ---- incremental decoding with a key/value cache (inference only) ----
    def _heads(self, y, B):   # [B, L, D] -> [B, NH, L, HD]
        return y.view(B, -1, self.heads, y.shape[-1] // self.heads).transpose(1, 2)

    def project_memory(self, memory):
        """Cross-attention keys and values of the memory, once per source batch."""
        D = memory.shape[-1]
        w, b = self.cross_attn.in_proj_weight, self.cross_attn.in_proj_bias
        kv = F.linear(memory, w[D:], b[D:])
        k, v = kv.split(D, dim=-1)
        B = memory.shape[0]
        return self._heads(k, B), self._heads(v, B)

    def step(self, x, cache_k, cache_v, t, cross_k, cross_v):
        """x [B, 1, D] at position t; cache_k/v [B, NH, capacity, HD], filled up to t."""
        B, _, D = x.shape
        scale = 1.0 / math.sqrt(D // self.heads)
        sa = self.self_attn
        q, k, v = F.linear(x, sa.in_proj_weight, sa.in_proj_bias).split(D, dim=-1)
        cache_k[:, :, t:t + 1] = self._heads(k, B)
        cache_v[:, :, t:t + 1] = self._heads(v, B)
        p = torch.softmax(self._heads(q, B) @ cache_k[:, :, :t + 1].transpose(-1, -2) * scale, dim=-1)
        a = (p @ cache_v[:, :, :t + 1]).transpose(1, 2).reshape(B, 1, D)
        x = self.norm1(x + sa.out_proj(a))
        ca = self.cross_attn
        q = F.linear(x, ca.in_proj_weight[:D], ca.in_proj_bias[:D])
        p = torch.softmax(self._heads(q, B) @ cross_k.transpose(-1, -2) * scale, dim=-1)
        c = (p @ cross_v).transpose(1, 2).reshape(B, 1, D)
        x = self.norm2(x + ca.out_proj(c))
        return self.norm3(x + self.linear2(F.relu(self.linear1(x))))


class Transformer(nn.Module):
    def __init__(self, vocab, d, heads, d_ff, enc_layers, dec_layers, dropout, max_len=256):
        super().__init__()
        self.d = d
        self.src_embed = nn.Embedding(vocab, d, padding_idx=PAD)
        self.tgt_embed = nn.Embedding(vocab, d, padding_idx=PAD)
        nn.init.normal_(self.src_embed.weight, std=d ** -0.5)
        nn.init.normal_(self.tgt_embed.weight, std=d ** -0.5)
        self.register_buffer("pe", sinusoidal_positions(max_len, d))
        self.encoder = nn.ModuleList(Layer(d, heads, d_ff, dropout, False) for _ in range(enc_layers))
        self.decoder = nn.ModuleList(Layer(d, heads, d_ff, dropout, True) for _ in range(dec_layers))
        self.drop = nn.Dropout(dropout)

    def embed(self, table, ids, offset=0):
        L = ids.shape[1]
        return self.drop(table(ids) * math.sqrt(self.d) + self.pe[offset:offset + L])

    def encode(self, src):
        x = self.embed(self.src_embed, src)
        for layer in self.encoder:
            x = layer(x)
        return x

    def decode(self, dec_in, memory):
        T = dec_in.shape[1]
        causal = torch.triu(torch.full((T, T), float("-inf")), diagonal=1)
        x = self.embed(self.tgt_embed, dec_in)
        for layer in self.decoder:
            x = layer(x, memory, causal)
        return x

    def logits(self, h):   # tied output projection, no bias
        return F.linear(h, self.tgt_embed.weight)

    def forward(self, src, dec_in):
        return self.logits(self.decode(dec_in, self.encode(src)))


def greedy_cached(model, src, new_tokens):
    B = src.shape[0]
    memory = model.encode(src)
    cross = [layer.project_memory(memory) for layer in model.decoder]
    d, heads = model.d, model.decoder[0].heads
    caches = [(torch.empty(B, heads, new_tokens, d // heads), torch.empty(B, heads, new_tokens, d // heads))
              for _ in model.decoder]
    tok = torch.full((B, 1), BOS, dtype=torch.long)
    out = []
    for t in range(new_tokens):
        x = model.embed(model.tgt_embed, tok, offset=t)
        for layer, (ck, cv), (xk, xv) in zip(model.decoder, caches, cross):
            x = layer.step(x, ck, cv, t, xk, xv)
        tok = model.logits(x).argmax(-1)   # [B, 1]
        out.append(tok)
    return torch.cat(out, dim=1)


def greedy_rerun(model, src, new_tokens):
    B = src.shape[0]
    memory = model.encode(src)
    prefix = torch.full((B, 1), BOS, dtype=torch.long)
    for _ in range(new_tokens):
        h = model.decode(prefix, memory)
        tok = model.logits(h[:, -1:]).argmax(-1)
        prefix = torch.cat([prefix, tok], dim=1)
    return prefix[:, 1:]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mode", choices=["train", "decode", "decode-rerun"], required=True)
    add_tsmall_args(ap)
    ap.add_argument("--new-tokens", type=int, default=24)
    ap.add_argument("--label", default="", help="impl name printed (default torch / torch-rerun)")
    a = ap.parse_args()

    torch.set_num_threads(a.threads)
    torch.manual_seed(1)
    model = Transformer(a.vocab, a.d_model, a.heads, a.d_ff, a.layers, a.layers, a.dropout)
    params = sum(p.numel() for p in model.parameters())
    src, tgt = make_batch(a.batch, a.length, a.vocab)

    if a.mode == "train":
        model.train()
        dec_in = torch.cat([torch.full((a.batch, 1), BOS, dtype=torch.long), tgt[:, :-1]], dim=1)
        opt = torch.optim.Adam(model.parameters(), lr=1e-4, betas=(0.9, 0.98), eps=1e-9)
        tokens = int((tgt != PAD).sum())

        def run():
            opt.zero_grad(set_to_none=True)
            logits = model(src, dec_in)
            loss = F.cross_entropy(logits.reshape(-1, a.vocab), tgt.reshape(-1), ignore_index=PAD,
                                   label_smoothing=0.1)
            loss.backward()
            opt.step()
    else:
        model.eval()
        tokens = a.batch * a.new_tokens
        search = greedy_cached if a.mode == "decode" else greedy_rerun

        def run():
            with torch.inference_mode():
                out = search(model, src, a.new_tokens)
            assert out.shape == (a.batch, a.new_tokens)

    measure(run, impl=a.label or ("torch" if a.mode != "decode-rerun" else "torch-rerun"),
            mode="train" if a.mode == "train" else "decode", threads=a.threads, warmup=a.warmup, steps=a.steps,
            tokens=tokens, params=params)


if __name__ == "__main__":
    main()
