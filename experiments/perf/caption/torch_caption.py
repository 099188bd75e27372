#!/usr/bin/env python3
"""The Show-Attend-and-Tell captioner of experiments/perf/caption in PyTorch: the same model as
attnlab's caption::Captioner (lib/include/attn/families/caption/model.hpp) with attn-caption train's
defaults, for the side-by-side speed comparison (run.sh runs this and bench/perf_caption), and
the check that it IS the same model.

The model (Xu et al. 2015, soft attention), shapes and parameter count equal to attnlab's:
  encoder   nn.Conv2d(C, 32, 3, padding=1), ReLU, nn.MaxPool2d(2), nn.Conv2d(32, 64, 3,
            padding=1), ReLU, nn.MaxPool2d(2): [B, D, h, w] -> annotations a [B, L, D], row-major
            over the grid (i = y w + x)
  initial   h_0 = tanh(init_h(mean_i a_i)), c_0 = tanh(init_c(mean_i a_i)) (nn.Linear)
  attention alpha_t = softmax_i(v^T tanh(W h_{t-1} + U a_i)), U a computed once per batch
            (nn.Linear without bias for W, U, v); context z_t = beta_t sum_i alpha_ti a_i (bmm)
            with the gate beta_t = sigmoid(gate(h_{t-1})) (nn.Linear(Dd, 1))
  cell      nn.LSTMCell([e_t; z_t]) with ONE bias vector as attnlab's LSTM has (bias_hh
            removed; torch.nn.LSTM's equations and gate order otherwise), e_t = nn.Embedding
            (padding_idx 0) of the previous word, BOS first
  output    logits = output(tanh(deep([h_t; z_t]) + e_t)), all steps at once (nn.Linear)
  loss      (F.cross_entropy summed over the counted words + alpha_c sum_b sum_i (1 - sum_t
            alpha_bti)^2, the sum over each caption's own steps) / the number of counted words
Training step as attn-caption train takes it: zero_grad, forward, backward,
clip_grad_norm_(5), torch.optim.Adam(lr=1e-3).

--channels-last keeps the encoder's weights and activations in torch.channels_last (NHWC), the
layout PyTorch's CPU tuning guide recommends for oneDNN's convolutions: the same model and
numbers, a faster layout for the convolutions (measured 1.2x the whole step at 1 thread).

Data and weights: the file `perf_caption --export FILE` writes (--export): the pool of images and
captions, the initial parameters and the check. A repetition trains on the pool in consecutive
batches of --batch images, the captions cut to each batch's longest, as attnlab's trainer
gathers them.

--check runs the same-model check instead of timing: one forward and backward from the
exported initial weights on the pool's first check_batch images (loss and every gradient
against attnlab's), then check_steps full training steps, the parameters compared with
attnlab's after the same steps.
Prints one line of key=value pairs (torch_perf.measure): impl, mode, threads, batch,
images_per_s, ms_per_image, median_s, min_s, max_s, cpu_images_per_s, params, images.
"""
import argparse
import os
import sys

import h5py
import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from torch_perf import BOS, measure  # noqa: E402 (experiments/perf/torch_perf.py)


def parse_encoder(spec):
    """"conv32x3,pool2,..." -> [("conv", K, k) | ("pool", P)] (caption::parse_encoder's list)."""
    out = []
    for item in spec.split(","):
        if item.startswith("conv"):
            K, k = item[4:].split("x")
            out.append(("conv", int(K), int(k)))
        else:
            out.append(("pool", int(item[4:])))
    return out


class Captioner(nn.Module):
    def __init__(self, cfg, channels_last=False):
        super().__init__()
        self.alpha_c, self.gated = float(cfg["alpha_c"]), bool(int(cfg["gate"]))
        self.channels_last = channels_last
        layers, convs, C = [], [], int(cfg["channels"])
        for item in parse_encoder(cfg["encoder"]):
            if item[0] == "conv":
                conv = nn.Conv2d(C, item[1], item[2], padding=item[2] // 2)
                layers += [conv, nn.ReLU()]
                convs.append(conv)
                C = item[1]
            else:
                layers.append(nn.MaxPool2d(item[1]))
        self.encoder, self.convs = nn.Sequential(*layers), convs
        D, Dd, m, A, V = C, int(cfg["hidden"]), int(cfg["embed_dim"]), int(cfg["attention_dim"]), int(cfg["vocab"])
        self.init_h, self.init_c = nn.Linear(D, Dd), nn.Linear(D, Dd)
        self.embedding = nn.Embedding(V, m, padding_idx=0)
        self.rnn = nn.LSTMCell(m + D, Dd)
        self.rnn.bias_hh = None   # attnlab's LSTM has one bias vector (bias_ih plays it)
        self.att_W = nn.Linear(Dd, A, bias=False)
        self.att_U = nn.Linear(D, A, bias=False)
        self.att_v = nn.Linear(A, 1, bias=False)
        self.gate = nn.Linear(Dd, 1) if self.gated else None
        self.deep = nn.Linear(Dd + D, m)
        self.output = nn.Linear(m, V)

    def names(self):
        """attnlab's names (families/caption/model.hpp) -> (this model's parameter, attnlab's shape)."""
        out = {}
        for k, conv in enumerate(self.convs):
            out[f"encoder/conv{k}/W"], out[f"encoder/conv{k}/b"] = conv.weight, conv.bias
        for n in ("init_h", "init_c", "deep", "output"):
            out[f"{n}/W"], out[f"{n}/b"] = getattr(self, n).weight, getattr(self, n).bias
        out["embedding/table"] = self.embedding.weight
        out["decoder/rnn/W_ih"], out["decoder/rnn/W_hh"] = self.rnn.weight_ih, self.rnn.weight_hh
        out["decoder/rnn/b"] = self.rnn.bias_ih
        out["decoder/attention/W"], out["decoder/attention/U"] = self.att_W.weight, self.att_U.weight
        out["decoder/attention/v"] = self.att_v.weight
        if self.gated:
            out["decoder/gate/W"], out["decoder/gate/b"] = self.gate.weight, self.gate.bias
        return out

    def load(self, params):
        with torch.no_grad():
            for name, p in self.names().items():
                p.copy_(params[name].view_as(p))

    def loss(self, images, tgt, tgt_len):
        """images [B, C, H, W], tgt [B, T] (words, EOS, PAD), tgt_len [B] -> the mean loss."""
        B, T = tgt.shape
        if self.channels_last:
            images = images.contiguous(memory_format=torch.channels_last)
        a = self.encoder(images).flatten(2).transpose(1, 2)   # [B, L, D]
        mean = a.mean(1)
        h, c = torch.tanh(self.init_h(mean)), torch.tanh(self.init_c(mean))
        Ua = self.att_U(a)                                     # [B, L, A], once
        words_in = torch.cat([torch.full((B, 1), BOS, dtype=tgt.dtype), tgt[:, :-1]], 1)
        emb = self.embedding(words_in)                         # [B, T, m]
        outs, alphas = [], []
        for t in range(T):
            alpha = torch.softmax(self.att_v(torch.tanh(Ua + self.att_W(h).unsqueeze(1))).squeeze(2), 1)
            z = torch.bmm(alpha.unsqueeze(1), a).squeeze(1)
            if self.gated:
                z = torch.sigmoid(self.gate(h)) * z
            h, c = self.rnn(torch.cat([emb[:, t], z], 1), (h, c))
            outs.append(torch.cat([h, z], 1))
            alphas.append(alpha)
        logits = self.output(torch.tanh(self.deep(torch.stack(outs, 1)) + emb))   # [B, T, V]
        counted = torch.arange(T).unsqueeze(0) < tgt_len.unsqueeze(1)              # [B, T]
        targets = tgt.masked_fill(~counted, -1)
        ce = F.cross_entropy(logits.reshape(B * T, -1), targets.reshape(-1), ignore_index=-1, reduction="sum")
        coverage = (torch.stack(alphas, 1) * counted.unsqueeze(2)).sum(1)          # [B, L]
        penalty = ((1 - coverage) ** 2).sum()
        return (ce + self.alpha_c * penalty) / counted.sum()


def read_export(path):
    with h5py.File(path, "r") as f:
        pool = tuple(torch.from_numpy(f["pool/" + k][()]) for k in ("images", "tgt", "tgt_len"))
        params, grads, after = {}, {}, {}
        for group, out in (("params", params), ("check/grads", grads), ("check/after", after)):
            f[group].visititems(lambda name, d, out=out: out.__setitem__(name, torch.from_numpy(d[()]))
                                if isinstance(d, h5py.Dataset) else None)
        attrs = {k: (v.decode() if isinstance(v, bytes) else v) for k, v in f.attrs.items()}
    return pool, params, grads, after, attrs


def make_batches(pool, B):
    """The pool's consecutive batches of B images, the captions cut to the batch's longest (as
    train::gather_caption_batch cuts attnlab's)."""
    images, tgt, tgt_len = pool
    out = []
    for b in range(0, len(tgt_len), B):
        n = tgt_len[b:b + B].long()
        out.append((images[b:b + B].contiguous(), tgt[b:b + B, :int(n.max())].long().contiguous(), n))
    return out


def build(attrs, params, channels_last=False):
    model = Captioner(attrs, channels_last)
    model.load(params)
    if channels_last:
        model.encoder.to(memory_format=torch.channels_last)
    return model


def max_diff(ours, theirs):
    """Largest |difference| over every parameter, and the largest relative to max |theirs| of
    that parameter."""
    worst_abs, worst_rel = 0.0, 0.0
    for name, t in theirs.items():
        d = (ours[name].detach().double().reshape(t.shape) - t.double()).abs().max().item()
        worst_abs = max(worst_abs, d)
        worst_rel = max(worst_rel, d / max(t.abs().max().item(), 1e-30))
    return worst_abs, worst_rel


def check(a):
    pool, params, grads, after, attrs = read_export(a.export)
    B, steps = int(attrs["check_batch"]), int(attrs["check_steps"])
    batches = make_batches(pool, B)
    model = build(attrs, params, a.channels_last)
    nparams = sum(p.numel() for p in model.parameters())
    loss = model.loss(*batches[0])
    loss.backward()
    g_abs, g_rel = max_diff({k: p.grad for k, p in model.names().items()}, grads)
    ref = float(attrs["check_loss"])
    impl = "torch-cl" if a.channels_last else "torch"
    print(f"check impl={impl} params={nparams} batch={B} loss_torch={loss.item():.7f} loss_attnlab={ref:.7f} "
          f"loss_rel_diff={abs(loss.item() - ref) / ref:.2e} grad_max_abs_diff={g_abs:.2e} "
          f"grad_max_rel_diff={g_rel:.2e}", flush=True)
    after32 = train_steps(build(attrs, params, a.channels_last), batches, steps, attrs)
    p_abs, p_rel = max_diff(after32, after)
    moved_abs, _ = max_diff(params, after)
    # Adam divides every gradient entry by its own running scale, so an entry whose gradient is
    # round-off noise moves by up to lr whatever its size: both float32 runs are compared with
    # the same steps in float64, to show that they stray from it alike.
    after64 = train_steps(build(attrs, params).double(), batches, steps, attrs, torch.float64)
    a64_abs, _ = max_diff(after, after64)
    t64_abs, _ = max_diff(after32, after64)
    print(f"check impl={impl} optimizer=adam steps={steps} param_max_abs_diff={p_abs:.2e} "
          f"param_max_rel_diff={p_rel:.2e} attnlab_max_param_change={moved_abs:.2e} "
          f"attnlab_vs_float64={a64_abs:.2e} torch_vs_float64={t64_abs:.2e}", flush=True)


def train_steps(model, batches, steps, attrs, dtype=torch.float32):
    """The parameters (attnlab's names) after `steps` full training steps on the batches in turn."""
    opt = torch.optim.Adam(model.parameters(), lr=float(attrs["lr"]))
    for t in range(steps):
        images, tgt, tgt_len = batches[t % len(batches)]
        opt.zero_grad(set_to_none=True)
        model.loss(images.to(dtype), tgt, tgt_len).backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), float(attrs["clip"]))
        opt.step()
    return {k: p.detach() for k, p in model.names().items()}

def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--export", required=True, help="the file perf_caption --export wrote")
    ap.add_argument("--check", action="store_true", help="run the same-model check and exit")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--images", type=int, default=256, help="images per repetition (the pool's first)")
    ap.add_argument("--steps", type=int, default=5, help="timed repetitions (median reported)")
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--label", default="torch", help="impl name printed (run.sh: torch, torch-nommap, torch-nommap-cl)")
    ap.add_argument("--channels-last", action="store_true", help="the encoder in torch.channels_last (see the top)")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    if a.check:
        check(a)
        return
    if a.images % a.batch:
        ap.error(f"--images ({a.images}) must be a multiple of --batch ({a.batch})")
    pool, params, _, _, attrs = read_export(a.export)
    if len(pool[2]) < a.images:
        ap.error(f"{a.export} holds a pool of {len(pool[2])} images, fewer than --images {a.images}")
    model = build(attrs, params, a.channels_last)
    nparams = sum(p.numel() for p in model.parameters())
    batches = make_batches(tuple(x[:a.images] for x in pool), a.batch)
    opt = torch.optim.Adam(model.parameters(), lr=float(attrs["lr"]))
    clip = float(attrs["clip"])
    model.train()

    def run():
        for batch in batches:
            opt.zero_grad(set_to_none=True)
            model.loss(*batch).backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
            opt.step()

    measure(run, impl=a.label, mode=f"train-b{a.batch}", threads=a.threads, warmup=a.warmup, steps=a.steps,
            tokens=a.images, params=nparams, unit="images", fields=f"batch={a.batch}")


if __name__ == "__main__":
    main()
