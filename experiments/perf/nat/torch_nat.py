#!/usr/bin/env python3
"""CMLM T-small in PyTorch, the same model as attnlab's transformer::Transformer with arch cmlm
(Ghazvininejad et al. 2019, "Mask-Predict"), for the side-by-side speed comparison of
experiments/perf/nat (run.sh runs this and `bench/perf_transformer --arch cmlm`).

The model, written with the standard modules (nn.TransformerEncoder/Decoder over
nn.TransformerEncoderLayer/DecoderLayer, batch_first, post-norm, ReLU), mirrors attnlab's shapes
and parameter count (printed):
  source table [V + 1, D] (+ [LENGTH]), target table [V + 1, D] (+ [MASK]), both N(0, 1/D), scaled
  by sqrt(D), plus sinusoidal positions, dropout; no dropout on the attention weights (attnlab has
  none: the layers' attention dropout is set to 0), dropout on the residual branches and the
  feed-forward hidden activation; the encoder reads [LENGTH] + source, the decoder the target
  without EOS (y) with [MASK]s, no causal mask; output tied to the target table's first V rows
  (no bias); a length predictor Linear(D, 2 max_len + 1) on the encoder's [LENGTH] position, over
  the offset |y| - |x| (class offset + max_len).
Loss: label-smoothed (0.1) cross-entropy of the masked positions (mean) + 0.1 x the plain
cross-entropy of the length classes (mean), as Transformer::train_step(CmlmBatch); Adam.

Modes (one per process, the thread count set by torch.set_num_threads):
  train   zero_grad, the CMLM masking of the batch (per row a uniform number in 1..|y| of
          uniformly drawn positions, as transformer::cmlm_mask), forward, loss, backward, Adam;
          y's tokens (masked or not) per second
  decode  mask-predict of the batch's sources in eval mode under torch.inference_mode, exactly
          transformer::mask_predict's algorithm (lib/include/attn/families/transformer/nat.hpp):
          the length beam's --length-beam most likely lengths, T = --iterations iterations
          re-masking the n (T - t) / T least probable tokens (ties: the earlier position), PAD,
          BOS and EOS forbidden, the candidate of best mean log-probability kept; the output
          tokens per second, printed as mode mask-predict-T<T> (-L<L> when L > 1)
The length predictor's weights are 0 and its bias ranks the offsets as attnlab's program does
(force_length_ranking in bench/perf_transformer.cpp): the first length is the reference's, 23.

--check FILE (the file `perf_transformer --arch cmlm --export FILE` wrote): loads attnlab's
parameters into this model and compares the evaluation objective on attnlab's masked batch and
mask-predict's tokens at T = 4; then runs two training steps (dropout on) and checks the loss is
finite. Prints one line "check ...".

Prints one line of key=value pairs as torch_perf.measure.
"""
import argparse
import math
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from torch_perf import BOS, EOS, PAD, add_tsmall_args, make_batch, measure, sinusoidal_positions  # noqa: E402 (experiments/perf/torch_perf.py)


class CMLM(nn.Module):
    def __init__(self, vocab, d, heads, d_ff, layers, dropout, max_len=256):
        super().__init__()
        self.vocab, self.d, self.max_len = vocab, d, max_len
        self.mask_id = self.length_id = vocab   # the extra row of the target / source table
        self.src_embed = nn.Embedding(vocab + 1, d, padding_idx=PAD)
        self.tgt_embed = nn.Embedding(vocab + 1, d, padding_idx=PAD)
        nn.init.normal_(self.src_embed.weight, std=d ** -0.5)
        nn.init.normal_(self.tgt_embed.weight, std=d ** -0.5)
        self.register_buffer("pe", sinusoidal_positions(max_len, d))
        enc = nn.TransformerEncoderLayer(d, heads, d_ff, dropout, batch_first=True)
        enc.self_attn.dropout = 0.0
        self.encoder = nn.TransformerEncoder(enc, layers, enable_nested_tensor=False)
        dec = nn.TransformerDecoderLayer(d, heads, d_ff, dropout, batch_first=True)
        dec.self_attn.dropout = dec.multihead_attn.dropout = 0.0
        self.decoder = nn.TransformerDecoder(dec, layers)
        self.length = nn.Linear(d, 2 * max_len + 1)
        self.drop = nn.Dropout(dropout)

    def embed(self, table, ids):
        return self.drop(table(ids) * math.sqrt(self.d) + self.pe[:ids.shape[1]])

    def encode(self, src):
        """[LENGTH] + src [B, S] (full length) -> memory [B, 1 + S, D]."""
        ids = torch.cat([torch.full((src.shape[0], 1), self.length_id, dtype=src.dtype), src], dim=1)
        return self.encoder(self.embed(self.src_embed, ids))

    def length_logits(self, memory):
        return self.length(memory[:, 0])

    def logits(self, tokens, memory, pad=None):
        """The non-causal decoder over tokens [B, T] (PAD where pad [B, T] is True) -> [B, T, V]."""
        h = self.decoder(self.embed(self.tgt_embed, tokens), memory, tgt_key_padding_mask=pad)
        return F.linear(h, self.tgt_embed.weight[:self.vocab])

    def loss(self, src, dec_in, targets):
        """The CMLM objective of full-length sources and targets (y, no padding)."""
        memory = self.encode(src)
        logits = self.logits(dec_in, memory)
        length_targets = torch.full((src.shape[0],), dec_in.shape[1] - src.shape[1] + self.max_len)
        return (F.cross_entropy(logits.reshape(-1, self.vocab), targets.reshape(-1), ignore_index=PAD,
                                label_smoothing=0.1)
                + 0.1 * F.cross_entropy(self.length_logits(memory), length_targets))

    def force_length_ranking(self, reference):
        """As force_length_ranking in bench/perf_transformer.cpp: weights 0, bias -|o - r| - 0.5 [o > r]."""
        with torch.no_grad():
            self.length.weight.zero_()
            d = torch.arange(2 * self.max_len + 1) - self.max_len - reference
            self.length.bias.copy_(-d.abs().float() - 0.5 * (d > 0).float())

    def load_attnlab(self, p):
        """Copies attnlab's parameters (name -> tensor, the names of Transformer::params()); every
        one must be used."""
        used = set()

        def take(name):
            used.add(name)
            return p[name]

        def linear(mod, name):
            mod.weight.copy_(take(name + "/W"))
            mod.bias.copy_(take(name + "/b"))

        def norm(mod, name):
            mod.weight.copy_(take(name + "/gamma"))
            mod.bias.copy_(take(name + "/beta"))

        def attention(mod, name):
            mod.in_proj_weight.copy_(torch.cat([take(f"{name}/w_{x}") for x in "qkv"]))
            mod.in_proj_bias.copy_(torch.cat([take(f"{name}/b_{x}") for x in "qkv"]))
            mod.out_proj.weight.copy_(take(name + "/w_o"))
            mod.out_proj.bias.copy_(take(name + "/b_o"))

        with torch.no_grad():
            self.src_embed.weight.copy_(take("src_embed/table"))
            self.tgt_embed.weight.copy_(take("tgt_embed/table"))
            for i, layer in enumerate(self.encoder.layers):
                n = f"encoder/layer{i}"
                attention(layer.self_attn, n + "/self_attn")
                norm(layer.norm1, n + "/norm1")
                linear(layer.linear1, n + "/ffn/in")
                linear(layer.linear2, n + "/ffn/out")
                norm(layer.norm2, n + "/norm2")
            for i, layer in enumerate(self.decoder.layers):
                n = f"decoder/layer{i}"
                attention(layer.self_attn, n + "/self_attn")
                norm(layer.norm1, n + "/norm1")
                attention(layer.multihead_attn, n + "/cross_attn")
                norm(layer.norm2, n + "/norm2")
                linear(layer.linear1, n + "/ffn/in")
                linear(layer.linear2, n + "/ffn/out")
                norm(layer.norm3, n + "/norm3")
            linear(self.length, "length")
        unused = sorted(set(p) - used)
        if unused:
            sys.exit(f"torch_nat: attnlab parameters this model has no place for: {unused}")


def cmlm_mask(y, mask_id):
    """Per row a number k uniform in 1..T of positions drawn uniformly without replacement:
    dec_in (y with [MASK] there) and targets (y there, PAD elsewhere)."""
    B, T = y.shape
    k = torch.randint(1, T + 1, (B, 1))
    masked = torch.rand(B, T).argsort(dim=1).argsort(dim=1) < k
    return y.masked_fill(masked, mask_id), y.masked_fill(~masked, PAD)


def mask_predict(model, src, iterations, length_beam):
    """transformer::mask_predict (nat.hpp) of full-length sources src [N, S]: the chosen tokens
    [N, Lmax] (PAD past each length) and lengths [N]."""
    N, S = src.shape
    memory = model.encode(src)
    length_lp = F.log_softmax(model.length_logits(memory), dim=-1)   # class = offset + max_len
    lo = model.max_len - S                                         # the class of length 0
    lengths = length_lp[:, lo:lo + model.max_len + 1].topk(length_beam, dim=1).indices.reshape(-1)   # [R]
    memory = memory.repeat_interleave(length_beam, dim=0)
    R, L = lengths.shape[0], max(1, int(lengths.max()))
    pos = torch.arange(L)
    pad = pos >= lengths.unsqueeze(1)                               # [R, L]
    tokens = torch.full((R, L), model.mask_id).masked_fill(pad, PAD)
    log_probs = torch.zeros(R, L)
    masked = ~pad
    pad_mask = pad if bool(pad.any()) else None
    forbidden = torch.tensor([PAD, BOS, EOS])
    for it in range(iterations):
        if it > 0:
            k = lengths * (iterations - it) // iterations          # the least probable k re-masked
            if not bool((k > 0).any()):
                continue
            order = log_probs.masked_fill(pad, math.inf).sort(dim=1, stable=True).indices
            masked = torch.zeros_like(pad).scatter_(1, order, pos.unsqueeze(0) < k.unsqueeze(1))
            tokens = tokens.masked_fill(masked, model.mask_id)
        logits = model.logits(tokens, memory, pad_mask)
        logits[..., forbidden] = -math.inf
        lp, tok = F.log_softmax(logits, dim=-1).max(dim=-1)
        tokens = torch.where(masked, tok, tokens)
        log_probs = torch.where(masked, lp, log_probs)
    mean = log_probs.masked_fill(pad, 0).sum(1) / lengths.clamp(min=1)
    mean = mean.masked_fill(lengths == 0, -math.inf).view(N, length_beam)
    rows = torch.arange(N) * length_beam + mean.argmax(dim=1)
    return tokens[rows], lengths[rows]


def build(a):
    model = CMLM(a.vocab, a.d_model, a.heads, a.d_ff, a.layers, a.dropout)
    model.force_length_ranking((a.length - 1) - a.length)   # y = the target without EOS
    return model


def check(path):
    import h5py
    with h5py.File(path, "r") as f:
        params = {}
        f["params"].visititems(lambda name, d: params.__setitem__(name, torch.from_numpy(d[()]))
                               if isinstance(d, h5py.Dataset) else None)
        src, tgt = (torch.from_numpy(f["batch/" + k][()]).long() for k in ("src", "tgt"))
        dec_in, targets = (torch.from_numpy(f["check/" + k][()]).long() for k in ("dec_in", "targets"))
        want_tokens = torch.from_numpy(f["check/mask_predict_tokens"][()]).long()
        attrs = dict(f.attrs)
    assert attrs["arch"] in ("cmlm", b"cmlm") and int(attrs["src_vocab"]) == int(attrs["tgt_vocab"])
    model = CMLM(int(attrs["tgt_vocab"]), int(attrs["d_model"]), int(attrs["heads"]), int(attrs["d_ff"]),
                 int(attrs["enc_layers"]), float(attrs["dropout"]), int(attrs["max_len"]))
    model.load_attnlab(params)
    nparams = sum(p.numel() for p in model.parameters())
    model.eval()
    with torch.inference_mode():
        loss = model.loss(src, dec_in, targets).item()
        tokens, lengths = mask_predict(model, src, int(attrs["check_iterations"]), 1)
    ref = float(attrs["check_loss"])
    same_shape = tokens.shape == want_tokens.shape
    equal = float((tokens == want_tokens).float().mean()) if same_shape else 0.0
    model.train()
    opt = torch.optim.Adam(model.parameters(), lr=1e-4, betas=(0.9, 0.98), eps=1e-9)
    losses = []
    for _ in range(2):
        opt.zero_grad(set_to_none=True)
        step_loss = model.loss(src, *cmlm_mask(tgt[:, :-1], model.mask_id))
        step_loss.backward()
        opt.step()
        losses.append(step_loss.item())
    ok = abs(loss - ref) / ref < 1e-4 and equal == 1.0 and all(math.isfinite(x) for x in losses)
    print(f"check impl=torch params={nparams} eval_loss_torch={loss:.7f} eval_loss_attnlab={ref:.7f} "
          f"loss_rel_diff={abs(loss - ref) / ref:.2e} mask_predict_lengths={int(lengths.min())}-{int(lengths.max())} "
          f"mask_predict_tokens_equal={equal:.4f} train_step_losses={losses[0]:.4f},{losses[1]:.4f} "
          f"result={'same' if ok else 'DIFFERENT'}", flush=True)
    return 0 if ok else 1


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mode", choices=["train", "decode"])
    ap.add_argument("--check", metavar="FILE", help="compare with the model perf_transformer --export wrote")
    add_tsmall_args(ap)
    ap.add_argument("--iterations", type=int, default=10)
    ap.add_argument("--length-beam", type=int, default=1)
    ap.add_argument("--label", default="torch", help="impl name printed")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(1)
    if a.check:
        return check(a.check)
    if not a.mode:
        ap.error("give --mode or --check")

    model = build(a)
    params = sum(p.numel() for p in model.parameters())
    src, tgt = make_batch(a.batch, a.length, a.vocab)
    y = tgt[:, :-1]
    if a.mode == "train":
        model.train()
        opt = torch.optim.Adam(model.parameters(), lr=1e-4, betas=(0.9, 0.98), eps=1e-9)

        def run():
            opt.zero_grad(set_to_none=True)
            model.loss(src, *cmlm_mask(y, model.mask_id)).backward()
            opt.step()
        tokens, mode = y.numel(), "train"
    else:
        model.eval()
        out = {}

        def run():
            with torch.inference_mode():
                out["tokens"], out["lengths"] = mask_predict(model, src, a.iterations, a.length_beam)
        run()
        tokens = int(out["lengths"].sum())
        mode = f"mask-predict-T{a.iterations}" + (f"-L{a.length_beam}" if a.length_beam > 1 else "")
    measure(run, impl=a.label, mode=mode, threads=a.threads, warmup=a.warmup, steps=a.steps, tokens=tokens,
            params=params)
    return 0


if __name__ == "__main__":
    sys.exit(main())
