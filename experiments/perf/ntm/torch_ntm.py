#!/usr/bin/env python3
"""The neural Turing machine of experiments/perf/ntm in PyTorch: the same model as attnlab's
ntm::Ntm (lib/include/attn/families/ntm/model.hpp) on the copy task, for the side-by-side speed
comparison (run.sh runs this and bench/perf_ntm), and the check that it IS the same model.

The model (Graves et al. 2014 with Collier & Beel 2018's parameterisation), shapes and
parameter count equal to attnlab's (printed; 62,260):
  controller  nn.LSTMCell on u_t = [x_t; r_{t-1}] (9 + 20 -> 100), ONE bias vector as attnlab's
              LSTM has (bias_hh removed; torch.nn.LSTM's equations and gate order otherwise)
  heads       one nn.Linear (100 -> 92) for both heads' parameters: write head rows
              k [20], beta, g, s [3], gamma, e [20], a [20], then read head rows k, beta, g, s,
              gamma; activations tanh, softplus, sigmoid, softmax, 1 + softplus, sigmoid, tanh
  addressing  K = k.M_i / (|k| |M_i| + 1e-8), w_c = softmax(beta K), w_g = g w_c + (1 - g) w_prev,
              w~ = circular convolution with s over shifts -1, 0, 1, w = (w~ / max w~)^gamma
              normalised (Graves eq. 5-9); vectorised over the batch
  memory      the write head addresses M_{t-1}, then erases and adds: M_t = M (1 - w e^T) + w a^T;
              the read head addresses M_t and reads r_t = w^T M_t
  output      y_t = W_o [h_t; r_t] + b_o (120 -> 8) for all steps after the loop (one product)
  initial     M_0 = 1e-6 everywhere, w_0 one-hot on row 0, r_0 = row 0 of M_0, zero LSTM state
Loss: binary cross-entropy with logits summed over the output phase's bits and steps, averaged
over the batch's sequences. Training step: zero_grad, forward, backward,
clip_grad_value_(10), torch.optim.RMSprop(lr=1e-4, alpha=0.95, momentum=0.9, eps=1e-4,
centered=True, foreach=True). That is not the same update as attnlab's RMSProp in Graves' form
(eps outside the square root: sqrt(n - c^2) + eps instead of sqrt(n - c^2 + eps)); it costs the
same, and --check measures the difference (GravesRMSprop below is attnlab's form).

Implementations (--impl):
  torch           the model above
  torch-ntmstyle  the same model written in the style of the widely used pytorch-ntm
                  (github.com/loudinthecloud/pytorch-ntm): one nn.Linear per head (the write
                  head's k, beta, g, s, gamma and its e, a from one layer, as there), addressing
                  with F.cosine_similarity, the shift as F.conv1d on a circularly padded
                  weighting one batch row at a time (pytorch-ntm's _shift loop), w^gamma / sum,
                  and the output layer with a sigmoid inside the loop, BCELoss on the outputs.
                  Same parameters and results up to rounding; only the code's shape differs.

Data and weights come from the file `perf_ntm --export FILE` writes (the sequence pool, the
initial parameters, and a check). A repetition trains on the whole pool in order, in
consecutive batches of --batch sequences (each cut to its longest sequence), as perf_ntm does.

--check FILE runs the same-model check instead of timing: one forward and backward from the
exported initial weights on the first check_batch sequences (loss and every gradient against
attnlab's), then check_steps training steps with a hand-written RMSProp in Graves' form
(attnlab's optim::RmsProp) and with torch.optim.RMSprop, each compared with attnlab's
parameters after those steps.
Prints one line of key=value pairs (torch_perf.measure): impl, mode, threads, batch,
sequences_per_s, ms_per_sequence, median_s, min_s, max_s, cpu_sequences_per_s, params, sequences.
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

WIN, WOUT, H, N, M, SHIFT = 9, 8, 100, 128, 20, 1
S = 2 * SHIFT + 1
READ = M + S + 3          # k, beta, g, s, gamma
WRITE = READ + 2 * M      # ... e, a
MEMORY_INIT = 1e-6
COS_EPS = 1e-8


def activate(p):
    """A head's addressing parameters from its raw rows p [B, >= READ]."""
    k = torch.tanh(p[:, :M])
    beta = F.softplus(p[:, M:M + 1])
    g = torch.sigmoid(p[:, M + 1:M + 2])
    s = torch.softmax(p[:, M + 2:M + 2 + S], dim=1)
    gamma = 1 + F.softplus(p[:, M + 2 + S:M + 3 + S])
    return k, beta, g, s, gamma


def address(k, beta, g, s, gamma, w_prev, mem):
    """Graves eq. 5-9, vectorised over the batch. mem [B, N, M], w_prev [B, N] -> w [B, N]."""
    dot = torch.bmm(mem, k.unsqueeze(2)).squeeze(2)                               # [B, N]
    K = dot / (mem.norm(dim=2) * k.norm(dim=1, keepdim=True) + COS_EPS)
    wc = torch.softmax(beta * K, dim=1)
    wg = g * wc + (1 - g) * w_prev
    # shift j moves weight from row i - j to row i: torch.roll(wg, j)[i] = wg[i - j]
    wt = sum(s[:, jj:jj + 1] * torch.roll(wg, jj - SHIFT, dims=1) for jj in range(S))
    w = (wt / wt.max(dim=1, keepdim=True).values) ** gamma
    return w / w.sum(dim=1, keepdim=True)


def single_bias_lstm_cell(i, h):
    cell = nn.LSTMCell(i, h)
    cell.bias_hh = None   # attnlab's LSTM has one bias vector (bias_ih plays it)
    return cell


class NTM(nn.Module):
    """impl torch: one Linear for both heads, the output layer once after the loop."""

    def __init__(self):
        super().__init__()
        self.controller = single_bias_lstm_cell(WIN + M, H)
        self.heads = nn.Linear(H, WRITE + READ)
        self.out = nn.Linear(H + M, WOUT)

    def load(self, params):
        """params: attnlab's names -> tensors (families/ntm/model.hpp's layout)."""
        with torch.no_grad():
            c = "controller/layer0/"
            self.controller.weight_ih.copy_(params[c + "W_ih"])
            self.controller.weight_hh.copy_(params[c + "W_hh"])
            self.controller.bias_ih.copy_(params[c + "b"])
            self.heads.weight.copy_(torch.cat([params["heads/write0/W"], params["heads/read0/W"]]))
            self.heads.bias.copy_(torch.cat([params["heads/write0/b"], params["heads/read0/b"]]))
            self.out.weight.copy_(params["output/W"])
            self.out.bias.copy_(params["output/b"])

    def export(self, what="param"):
        """attnlab's names -> this model's parameters (what="param") or their grads."""
        def get(p):
            return p.detach() if what == "param" else p.grad
        hw, hb = get(self.heads.weight), get(self.heads.bias)
        c = "controller/layer0/"
        return {c + "W_ih": get(self.controller.weight_ih), c + "W_hh": get(self.controller.weight_hh),
                c + "b": get(self.controller.bias_ih),
                "heads/write0/W": hw[:WRITE], "heads/write0/b": hb[:WRITE],
                "heads/read0/W": hw[WRITE:], "heads/read0/b": hb[WRITE:],
                "output/W": get(self.out.weight), "output/b": get(self.out.bias)}

    def forward(self, X):
        """X [T, B, WIN] -> logits [T, B, WOUT]."""
        T, B = X.shape[0], X.shape[1]
        mem = X.new_full((B, N, M), MEMORY_INIT)
        w_w = X.new_zeros(B, N)
        w_w[:, 0] = 1
        w_r = w_w.clone()
        r = mem[:, 0]
        h = c = X.new_zeros(B, H)
        hr = []
        for t in range(T):
            h, c = self.controller(torch.cat([X[t], r], dim=1), (h, c))
            p = self.heads(h)
            pw, pr = p[:, :WRITE], p[:, WRITE:]
            w_w = address(*activate(pw), w_w, mem)
            e = torch.sigmoid(pw[:, READ:READ + M])
            a = torch.tanh(pw[:, READ + M:])
            ww = w_w.unsqueeze(2)
            mem = mem * (1 - ww * e.unsqueeze(1)) + ww * a.unsqueeze(1)
            w_r = address(*activate(pr), w_r, mem)
            r = torch.bmm(w_r.unsqueeze(1), mem).squeeze(1)
            hr.append(torch.cat([h, r], dim=1))
        return self.out(torch.stack(hr))

    def loss(self, X, Y, mask):
        bce = F.binary_cross_entropy_with_logits(self(X), Y, reduction="none").sum(dim=2)
        return (bce * mask).sum() / X.shape[1]


class NTMStyle(NTM):
    """impl torch-ntmstyle: pytorch-ntm's code shape (see the module docstring)."""

    def __init__(self):
        nn.Module.__init__(self)
        self.controller = single_bias_lstm_cell(WIN + M, H)
        self.write_fc = nn.Linear(H, WRITE)   # pytorch-ntm: NTMWriteHead.fc_write
        self.read_fc = nn.Linear(H, READ)     # NTMReadHead.fc_read
        self.out = nn.Linear(H + M, WOUT)     # NTM.fc

    def load(self, params):
        with torch.no_grad():
            c = "controller/layer0/"
            self.controller.weight_ih.copy_(params[c + "W_ih"])
            self.controller.weight_hh.copy_(params[c + "W_hh"])
            self.controller.bias_ih.copy_(params[c + "b"])
            self.write_fc.weight.copy_(params["heads/write0/W"])
            self.write_fc.bias.copy_(params["heads/write0/b"])
            self.read_fc.weight.copy_(params["heads/read0/W"])
            self.read_fc.bias.copy_(params["heads/read0/b"])
            self.out.weight.copy_(params["output/W"])
            self.out.bias.copy_(params["output/b"])

    def export(self, what="param"):
        def get(p):
            return p.detach() if what == "param" else p.grad
        c = "controller/layer0/"
        return {c + "W_ih": get(self.controller.weight_ih), c + "W_hh": get(self.controller.weight_hh),
                c + "b": get(self.controller.bias_ih),
                "heads/write0/W": get(self.write_fc.weight), "heads/write0/b": get(self.write_fc.bias),
                "heads/read0/W": get(self.read_fc.weight), "heads/read0/b": get(self.read_fc.bias),
                "output/W": get(self.out.weight), "output/b": get(self.out.bias)}

    @staticmethod
    def _address(p, w_prev, mem):
        k, beta, g, s, gamma = activate(p)
        # pytorch-ntm's NTMMemory.address: _similarity, _interpolate, _shift, _sharpen
        K = F.cosine_similarity(mem, k.unsqueeze(1), dim=-1, eps=COS_EPS)
        wc = F.softmax(beta * K, dim=1)
        wg = g * wc + (1 - g) * w_prev
        wt = torch.zeros_like(wg)
        for b in range(wg.shape[0]):   # pytorch-ntm's _shift: one row at a time, circular conv1d
            c = torch.cat([wg[b, -SHIFT:], wg[b], wg[b, :SHIFT]])
            # conv1d is a correlation: out[i] = sum_jj flip(s)[jj] c[i + jj] = sum_j s_j wg[i - j]
            wt[b] = F.conv1d(c.view(1, 1, -1), s[b].flip(0).view(1, 1, -1)).view(-1)
        w = wt ** gamma
        return w / w.sum(dim=1, keepdim=True)

    def forward(self, X):
        """X [T, B, WIN] -> outputs sigma(y) [T, B, WOUT] (pytorch-ntm emits sigmoids)."""
        T, B = X.shape[0], X.shape[1]
        mem = X.new_full((B, N, M), MEMORY_INIT)
        w_w = X.new_zeros(B, N)
        w_w[:, 0] = 1
        w_r = w_w.clone()
        r = mem[:, 0]
        state = (X.new_zeros(B, H), X.new_zeros(B, H))
        outs = []
        for t in range(T):
            state = self.controller(torch.cat([X[t], r], dim=1), state)
            h = state[0]
            pw = self.write_fc(h)
            w_w = self._address(pw[:, :READ], w_w, mem)
            e = torch.sigmoid(pw[:, READ:READ + M])
            a = torch.tanh(pw[:, READ + M:])
            erase = torch.matmul(w_w.unsqueeze(-1), e.unsqueeze(1))
            add = torch.matmul(w_w.unsqueeze(-1), a.unsqueeze(1))
            mem = mem * (1 - erase) + add
            w_r = self._address(self.read_fc(h), w_r, mem)
            r = torch.matmul(w_r.unsqueeze(1), mem).squeeze(1)
            outs.append(torch.sigmoid(self.out(torch.cat([h, r], dim=1))))
        return torch.stack(outs)

    def loss(self, X, Y, mask):
        bce = F.binary_cross_entropy(self(X), Y, reduction="none").sum(dim=2)
        return (bce * mask).sum() / X.shape[1]


def read_export(path):
    with h5py.File(path, "r") as f:
        data = {k: torch.from_numpy(f["train/" + k][()]) for k in ("inputs", "input_len", "targets", "target_len")}
        params, grads, after = {}, {}, {}
        for group, out in (("params", params), ("check/grads", grads), ("check/after", after)):
            f[group].visititems(lambda name, obj, out=out: out.__setitem__(name, torch.from_numpy(obj[()]))
                                if isinstance(obj, h5py.Dataset) else None)
        attrs = dict(f.attrs)
    return data, params, grads, after, attrs


def make_batch(data, begin, end):
    """Sequences [begin, end) of the pool, time-major: X [T, B, WIN] (zero outside the input
    phase), Y [T, B, WOUT] with example b's target row u at step input_len[b] + u, mask [T, B]
    (1 at those steps); T = max(input_len + target_len), as attnlab's Ntm runs them."""
    il = data["input_len"][begin:end].tolist()
    tl = data["target_len"][begin:end].tolist()
    B = end - begin
    T = max(i + o for i, o in zip(il, tl))
    X, Y, mask = torch.zeros(T, B, WIN), torch.zeros(T, B, WOUT), torch.zeros(T, B)
    for b in range(B):
        X[:il[b], b] = data["inputs"][begin + b, :il[b]]
        Y[il[b]:il[b] + tl[b], b] = data["targets"][begin + b, :tl[b]]
        mask[il[b]:il[b] + tl[b], b] = 1
    return X, Y, mask


class GravesRMSprop:
    """attnlab's optim::RmsProp with RmsPropConfig::graves2013() (Graves 2013 eq. 38-41): eps
    inside the square root, the momentum buffer accumulates steps (lr included)."""

    def __init__(self, params, lr=1e-4, rho=0.95, eps=1e-4, momentum=0.9):
        self.params, self.lr, self.rho, self.eps, self.mu = list(params), lr, rho, eps, momentum
        self.n = [torch.zeros_like(p) for p in self.params]
        self.c = [torch.zeros_like(p) for p in self.params]
        self.d = [torch.zeros_like(p) for p in self.params]

    @torch.no_grad()
    def step(self):
        for p, n, c, d in zip(self.params, self.n, self.c, self.d):
            g = p.grad
            n.mul_(self.rho).add_((1 - self.rho) * g * g)
            c.mul_(self.rho).add_((1 - self.rho) * g)
            var = (n - c * c).clamp_(min=0)
            d.mul_(self.mu).add_(self.lr * g / torch.sqrt(var + self.eps))
            p.sub_(d)


def torch_rmsprop(params):
    # foreach: one multi-tensor update of all 9 parameters (about 6% faster per sequence at batch 1
    # here than 1.13's default per-tensor loop; the same arithmetic)
    return torch.optim.RMSprop(params, lr=1e-4, alpha=0.95, momentum=0.9, eps=1e-4, centered=True, foreach=True)


def max_diff(ours, theirs):
    """Largest |difference| over every parameter, and the largest relative to max |theirs| of
    that parameter."""
    worst_abs, worst_rel = 0.0, 0.0
    for name, t in theirs.items():
        d = (ours[name].float() - t).abs().max().item()
        worst_abs = max(worst_abs, d)
        worst_rel = max(worst_rel, d / max(t.abs().max().item(), 1e-30))
    return worst_abs, worst_rel


def check(a, path):
    data, params, grads, after, attrs = read_export(path)
    B, steps = int(attrs["check_batch"]), int(attrs["check_steps"])
    n = data["input_len"].shape[0]
    for impl, cls in (("torch", NTM), ("torch-ntmstyle", NTMStyle)):
        model = cls()
        model.load(params)
        nparams = sum(p.numel() for p in model.parameters())
        X, Y, mask = make_batch(data, 0, B)
        loss = model.loss(X, Y, mask)
        loss.backward()
        g_abs, g_rel = max_diff(model.export("grad"), grads)
        ref = float(attrs["check_loss"])
        print(f"check impl={impl} params={nparams} batch={B} loss_torch={loss.item():.7f} loss_attnlab={ref:.7f} "
              f"loss_rel_diff={abs(loss.item() - ref) / ref:.2e} grad_max_abs_diff={g_abs:.2e} "
              f"grad_max_rel_diff={g_rel:.2e}", flush=True)
        for opt_name, make_opt in (("graves", GravesRMSprop), ("torch.optim.RMSprop", torch_rmsprop)):
            model = cls()
            model.load(params)
            opt = make_opt(model.parameters())
            for t in range(steps):
                b = (t * B) % n
                X, Y, mask = make_batch(data, b, b + B)
                for p in model.parameters():
                    p.grad = None
                model.loss(X, Y, mask).backward()
                torch.nn.utils.clip_grad_value_(model.parameters(), 10)
                opt.step()
            p_abs, p_rel = max_diff(model.export("param"), after)
            moved_abs, _ = max_diff(params, after)
            own_abs, _ = max_diff(model.export("param"), params)
            print(f"check impl={impl} optimizer={opt_name} steps={steps} param_max_abs_diff={p_abs:.2e} "
                  f"param_max_rel_diff={p_rel:.2e} attnlab_max_param_change={moved_abs:.2e} "
                  f"torch_max_param_change={own_abs:.2e}", flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--impl", choices=["torch", "torch-ntmstyle"], default="torch")
    ap.add_argument("--data", help="the file perf_ntm --export wrote (sequences and initial weights)")
    ap.add_argument("--check", metavar="FILE", help="run the same-model check on FILE (perf_ntm --export) and exit")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--sequences", type=int, default=64, help="sequences per repetition (the pool's first)")
    ap.add_argument("--steps", type=int, default=5, help="timed repetitions (median reported)")
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--label", default="", help="impl name printed (default: --impl)")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    if a.check:
        check(a, a.check)
        return
    if not a.data:
        ap.error("--data FILE is required (write it with: perf_ntm --export FILE)")
    if a.sequences % a.batch:
        ap.error(f"--sequences ({a.sequences}) must be a multiple of --batch ({a.batch})")
    data, params, _, _, _ = read_export(a.data)
    if data["input_len"].shape[0] < a.sequences:
        ap.error(f"{a.data} holds {data['input_len'].shape[0]} sequences, fewer than --sequences {a.sequences}")
    model = (NTM if a.impl == "torch" else NTMStyle)()
    model.load(params)
    nparams = sum(p.numel() for p in model.parameters())
    batches = [make_batch(data, b, b + a.batch) for b in range(0, a.sequences, a.batch)]
    opt = torch_rmsprop(model.parameters())
    model.train()

    def run():
        for X, Y, mask in batches:
            opt.zero_grad(set_to_none=True)
            model.loss(X, Y, mask).backward()
            torch.nn.utils.clip_grad_value_(model.parameters(), 10)
            opt.step()

    measure(run, impl=a.label or a.impl, mode=f"train-b{a.batch}", threads=a.threads, warmup=a.warmup,
            steps=a.steps, tokens=a.sequences, params=nparams, unit="sequences", fields=f"batch={a.batch}")


if __name__ == "__main__":
    main()
