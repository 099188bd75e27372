"""The NTM family's reader for tests/formats/reload.py (which imports it; its docstring says how a
family's module plugs in): rebuilds model files of kind "ntm" (any controller, heads and
memory_init) with numpy, following docs/FORMATS.md.

BATCH.h5: the file `attn-ntm run` wrote (FORMATS.md, "Run"): its /outputs, /read_weights,
/write_weights and /metrics bits_per_sequence are compared (memory_init random: M_0 drawn as the
run drew it, in batches of its /config batch_size, with reload.Philox).
Or the model file one training step later, with plain SGD: the step divided by the rate must be
the objective's gradient (central differences here), clipped by value and then by norm as /config
says.
--break: ntm-loss-bits, clip-norm-first (BREAKS, at the end).
"""

import numpy as np

from reload import BROKEN, FormatProblem, Params, Philox, max_diff, sigmoid, softmax, train_split, verdict

# ---- NTM ---------------------------------------------------------------------------------------

NTM_EVALUATION_SEED = 0x4E544D   # "NTM": the stream of M_0 in eval and run


def ntm_random_memory(rng, B, Nm, M):
    """memory_init random for a batch of B sequences: N(0, 0.5^2) by fill_normal, then every value
    outside [-1, 1] drawn again, in index order, as 0.5 * normal(). Returns M_0 [B, Nm, M] and the
    number of values drawn again."""
    v = rng.fill_normal(B * Nm * M, 0.0, 0.5)
    again = 0
    for i in range(v.size):
        while not abs(v[i]) <= 1.0:
            v[i] = np.float32(0.5) * rng.normal()
            again += 1
    return v.reshape(B, Nm, M).astype(np.float64), again


def softplus(x):
    return np.logaddexp(0.0, x)


def lin(x, W, b):
    """y = x W^T + b over any leading axes, W [out, in] (or with leading axes of its own that
    broadcast with x's: the variants of a finite difference)."""
    return np.einsum("...i,...oi->...o", x, W) + b


class Ntm:
    """An NTM (FORMATS.md, NTM) from its /config and /params. forward() takes `variants`: for
    some parameters, a stack [V, 1, *shape] of values to run at once (leading axes [V, B])."""

    def __init__(self, c, p):
        self.I, self.O, self.H, self.L = c["input_size"], c["output_size"], c["controller_size"], c["controller_layers"]
        self.Nm, self.M, self.Nr, self.Nw = c["memory_rows"], c["memory_width"], c["read_heads"], c["write_heads"]
        self.r = c["shift_range"]
        self.Ns = 2 * self.r + 1
        self.lstm = c["controller"] == "lstm"
        self.init = c["memory_init"]
        H, RM, M = self.H, self.Nr * self.M, self.M
        self.P = {}

        def take(name, shape):
            self.P[name] = p(name, shape)
            return name
        self.layers = []
        for l in range(self.L):
            In = self.I + RM if l == 0 else H
            n = f"controller/layer{l}"
            if self.lstm:
                self.layers.append((take(f"{n}/W_ih", (4 * H, In)), take(f"{n}/W_hh", (4 * H, H)), take(f"{n}/b", (4 * H,))))
            else:
                self.layers.append((take(f"{n}/W", (H, In)), None, take(f"{n}/b", (H,))))
        Pr = M + self.Ns + 3   # k [M], beta, g, s [Ns], gamma; a write head then e [M], a [M]
        self.heads = [(take(f"heads/write{i}/W", (Pr + 2 * M, H)), take(f"heads/write{i}/b", (Pr + 2 * M,)))
                      for i in range(self.Nw)] + \
                     [(take(f"heads/read{i}/W", (Pr, H)), take(f"heads/read{i}/b", (Pr,))) for i in range(self.Nr)]
        self.out = (take("output/W", (self.O, H + RM)), take("output/b", (self.O,)))
        if self.init == "learned" and self.Nr + self.Nw > 0:
            take("memory/init", (self.Nm, M))

    def memory0(self, B, P=None):
        """M_0 [..., B, Nm, M] of `constant` and `learned` (`random` is drawn by the caller)."""
        if self.init == "constant":
            return np.full((B, self.Nm, self.M), float(np.float32(1e-6)))
        if self.init == "learned":   # a stack of variants [V, 1, Nm, M] gives [V, B, Nm, M]
            init = (P or self.P)["memory/init"]
            return np.broadcast_to(init, np.broadcast_shapes(init.shape[:-2], (B,)) + (self.Nm, self.M))
        raise FormatProblem("memory_init random: M_0 is drawn by the caller")

    def address(self, act, mem, w_prev):
        """One head's weighting (Graves et al. eq. 5-9): act [..., P] activated, mem [..., Nm, M]."""
        M, Ns = self.M, self.Ns
        k, beta, g = act[..., :M], act[..., M:M + 1], act[..., M + 1:M + 2]
        s, gamma = act[..., M + 2:M + 2 + Ns], act[..., M + 2 + Ns:M + 3 + Ns]
        K = np.einsum("...m,...im->...i", k, mem) / \
            (np.linalg.norm(k, axis=-1)[..., None] * np.linalg.norm(mem, axis=-1) + 1e-8)
        w_c = softmax(beta * K)
        w_g = g * w_c + (1.0 - g) * w_prev
        w_s = np.zeros(np.broadcast_shapes(w_g.shape, s.shape[:-1] + (self.Nm,)))
        for jj in range(Ns):   # shift j = jj - r: w~_i += w_g[(i - j) mod Nm] s_j
            w_s = w_s + np.roll(w_g, jj - self.r, axis=-1) * s[..., jj:jj + 1]
        w = w_s ** gamma
        return w / w.sum(-1, keepdims=True)

    def forward(self, inputs, input_len, target_len, M0, variants=None):
        """Logits [..., B, T, O] of every step and every head's weighting [..., B, T, Nr + Nw, Nm]
        (write heads first), 0 once an example has ended."""
        P = {**self.P, **(variants or {})}
        B, Tin = inputs.shape[0], inputs.shape[1]
        lead = np.broadcast_shapes(*(v.shape[:-len(self.P[k].shape)] for k, v in P.items()), M0.shape[:-2], (B,))
        H, M, Nm, Nw, NH, Ns = self.H, self.M, self.Nm, self.Nw, self.Nw + self.Nr, self.Ns
        end = input_len + target_len
        T = int(end.max())
        hs = [np.zeros(lead + (H,)) for _ in range(self.L)]
        cs = [np.zeros(lead + (H,)) for _ in range(self.L)]
        mem = np.broadcast_to(M0, lead + (Nm, M))
        w_prev = np.zeros(lead + (NH, Nm))
        w_prev[..., 0] = 1.0                                   # one-hot on location 0
        r = np.concatenate([mem[..., 0, :]] * self.Nr, axis=-1) if self.Nr else np.zeros(lead + (0,))
        logits = np.zeros(lead + (T, self.O))
        weights = np.zeros(lead + (T, NH, Nm))
        for t in range(T):
            x = inputs[:, t] * (t < input_len)[:, None] if t < Tin else np.zeros((B, self.I))
            u = np.concatenate([np.broadcast_to(x, lead + (self.I,)), r], axis=-1)
            for l, (W, W_hh, b) in enumerate(self.layers):
                if self.lstm:   # gates i, f, g, o; one bias
                    a = lin(u, P[W], P[b]) + np.einsum("...i,...oi->...o", hs[l], P[W_hh])
                    i, f, o = sigmoid(a[..., :H]), sigmoid(a[..., H:2 * H]), sigmoid(a[..., 3 * H:])
                    cs[l] = f * cs[l] + i * np.tanh(a[..., 2 * H:3 * H])
                    hs[l] = o * np.tanh(cs[l])
                else:
                    hs[l] = np.tanh(lin(u, P[W], P[b]))
                u = hs[l]
            h = hs[-1]
            if NH:
                acts = []
                for W, b in self.heads:
                    pre = lin(h, P[W], P[b])
                    acts.append(np.concatenate([
                        np.tanh(pre[..., :M]), softplus(pre[..., M:M + 1]), sigmoid(pre[..., M + 1:M + 2]),
                        softmax(pre[..., M + 2:M + 2 + Ns]), 1.0 + softplus(pre[..., M + 2 + Ns:M + 3 + Ns]),
                        sigmoid(pre[..., M + 3 + Ns:2 * M + 3 + Ns]), np.tanh(pre[..., 2 * M + 3 + Ns:])], axis=-1))
                w = [None] * NH
                for hd in range(Nw):                           # every write head addresses M_{t-1}
                    w[hd] = self.address(acts[hd], mem, w_prev[..., hd, :])
                for hd in range(Nw):                           # then erases and adds, in head order
                    e, a = acts[hd][..., M + 3 + Ns:2 * M + 3 + Ns], acts[hd][..., 2 * M + 3 + Ns:]
                    mem = mem * (1.0 - w[hd][..., :, None] * e[..., None, :]) + w[hd][..., :, None] * a[..., None, :]
                for hd in range(Nw, NH):                       # read heads address M_t and read it
                    w[hd] = self.address(acts[hd], mem, w_prev[..., hd, :])
                r = np.concatenate([np.einsum("...i,...im->...m", w[hd], mem) for hd in range(Nw, NH)], axis=-1) \
                    if self.Nr else np.zeros(lead + (0,))
                w_prev = np.stack(w, axis=-2)
                weights[..., t, :, :] = w_prev * (t < end)[:, None, None]
            logits[..., t, :] = lin(np.concatenate([h, r], axis=-1), P[self.out[0]], P[self.out[1]])
        return logits, weights


def ntm_output_phase(logits, input_len, target_len, Tout):
    """Step input_len + u of example b is its output row u (u < target_len): [..., B, Tout, O],
    0 after."""
    T = logits.shape[-2]
    u = np.arange(Tout)[None, :]
    step = np.minimum(input_len[:, None] + u, T - 1)
    mask = (u < target_len[:, None])[:, :, None]
    return logits[..., np.arange(len(input_len))[:, None], step, :] * mask


def bce_with_logits(z, y):
    return np.maximum(z, 0.0) - z * y + np.log1p(np.exp(-np.abs(z)))


def ntm_loss_nats(z, targets, target_len):
    """The training objective: the mean over the batch of each sequence's summed binary
    cross-entropy, in nats (z: output-phase logits [..., B, Tout, O]; one value per leading index)."""
    mask = (np.arange(targets.shape[1])[None, :] < target_len[:, None])[:, :, None]
    return (bce_with_logits(z, targets) * mask).sum(axis=(-3, -2, -1)) / z.shape[-3]


# ---- checks ----------------------------------------------------------------------------------

def check_ntm_run(model, run, attrs, tol):
    """An `attn-ntm run` file: the outputs, every head's weighting and the cost in bits."""
    if attrs[""].get("kind") != "ntm-run":
        raise FormatProblem("the batch file is not the output of attn-ntm run, on which an NTM is checked")
    c = model.config
    p = Params(model.params)
    ntm = Ntm(c, p)
    p.check_all_used()
    inputs, targets = run["inputs"].astype(np.float64), run["targets"].astype(np.float64)
    input_len, target_len = run["input_len"].astype(np.int64), run["target_len"].astype(np.int64)
    N, Nm, M = inputs.shape[0], ntm.Nm, ntm.M
    note = ""
    if c["memory_init"] == "random" and ntm.Nr + ntm.Nw > 0:
        # Every batch of the run (--batch-size consecutive sequences) draws its M_0 from a fresh
        # stream Rng(0x4e544d): a sequence's M_0 depends on its place in its batch.
        size = int(attrs["config"]["batch_size"])
        parts, again = [], 0
        for first in range(0, N, size):
            m0, k = ntm_random_memory(Philox(NTM_EVALUATION_SEED), min(size, N - first), Nm, M)
            parts.append(m0)
            again += k
        M0 = np.concatenate(parts)
        note = f", M_0 drawn in batches of {size} ({again} values drawn again)"
    else:
        M0 = ntm.memory0(N)
    logits, weights = ntm.forward(inputs, input_len, target_len, M0)
    z = ntm_output_phase(logits, input_len, target_len, targets.shape[1])
    mask = (np.arange(targets.shape[1])[None, :] < target_len[:, None])[:, :, None]
    diffs = {"outputs": max_diff(sigmoid(z) * mask, run["outputs"], "outputs")}
    for name, heads in (("read_weights", slice(ntm.Nw, None)), ("write_weights", slice(0, ntm.Nw))):
        count = ntm.Nr if name == "read_weights" else ntm.Nw
        if count == 0:
            if name in run:
                raise FormatProblem(f"/{name} in a run of a model without such heads")
            continue
        diffs[name.replace("_", " ")] = max_diff(weights[:, :, heads], run[name], f"/{name}")
    bits = float(ntm_loss_nats(z, targets, target_len)) / np.log(2.0)
    diffs["bits per sequence"] = abs(bits - attrs["metrics"]["bits_per_sequence"])
    ok = all(d < tol for d in diffs.values())
    print(f"{model.path}: ntm {c['controller']} x{c['controller_layers']}, {ntm.Nr} read and {ntm.Nw} write heads, "
          f"memory_init {c['memory_init']}{note}: max |diff| " +
          ", ".join(f"{k} {v:.3g}" for k, v in diffs.items()) +
          f" over {N} sequences (tolerance {tol:g}): {verdict(ok)}")
    return 0 if ok else 1


def check_ntm_step(before, after, tol):
    """`after` is `before` plus one plain SGD step on the whole training split (batch_size and
    epoch_size cover it). The step, divided by the rate, must be the gradient of the documented
    objective (the mean over the batch of each sequence's summed cross-entropy, nats), found here
    by central differences, clipped as the trainer clips: by value, then by global norm."""
    c, ca = before.config, after.config
    if ca["optimizer"] != "sgd" or ca["momentum"] != 0 or ca["weight_decay"] != 0 or ca["lr_schedule"] != "constant":
        raise FormatProblem(f"{after.path}: the step check needs plain SGD (momentum and weight decay 0, constant rate)")
    if c["memory_init"] == "random":
        raise FormatProblem(f"{before.path}: memory_init random draws M_0 from the trainer's stream; no step check")
    data = train_split(after, ["inputs", "input_len", "targets", "target_len"])
    N = data["input_len"].shape[0]
    if ca["batch_size"] < N or ca["epoch_size"] not in (0, N):
        raise FormatProblem(f"{after.path}: a step must see the whole training split ({N} sequences) once")
    p = Params(before.params)
    ntm = Ntm(c, p)
    p.check_all_used()
    inputs, targets = data["inputs"].astype(np.float64), data["targets"].astype(np.float64)
    input_len, target_len = data["input_len"].astype(np.int64), data["target_len"].astype(np.int64)
    if set(after.params) != set(before.params):
        raise FormatProblem(f"{after.path}: other parameters than {before.path}")

    def objective(variants):   # one value per variant
        logits, _ = ntm.forward(inputs, input_len, target_len, ntm.memory0(N, {**ntm.P, **variants}), variants)
        nats = ntm_loss_nats(ntm_output_phase(logits, input_len, target_len, targets.shape[1]), targets, target_len)
        return nats / np.log(2.0) if "ntm-loss-bits" in BROKEN else nats

    # Central differences, every element of a parameter moved up and down as one stack of variants.
    h, chunk = 1e-5, 256
    grad = {}
    for name, value in ntm.P.items():
        g = np.zeros(value.size)
        for first in range(0, value.size, chunk):
            idx = np.arange(first, min(first + chunk, value.size))
            var = np.repeat(value.reshape(1, -1), 2 * len(idx), axis=0)
            var[2 * np.arange(len(idx)), idx] += h
            var[2 * np.arange(len(idx)) + 1, idx] -= h
            f = objective({name: var.reshape((-1, 1) + value.shape)})
            g[idx] = (f[0::2] - f[1::2]) / (2 * h)
        grad[name] = g.reshape(value.shape)

    limit, max_norm = float(ca["clip_value"]), float(ca["clip"])
    clamped = sum(int(np.sum(np.abs(g) > limit)) for g in grad.values()) if limit > 0 else 0

    def by_value(g):
        return {k: np.clip(v, -limit, limit) for k, v in g.items()} if limit > 0 else g

    def by_norm(g):
        norm = np.sqrt(sum(float(np.sum(v * v)) for v in g.values()))
        return ({k: v * (max_norm / norm) for k, v in g.items()} if max_norm > 0 and norm > max_norm else g), norm

    if "clip-norm-first" in BROKEN:
        clipped, norm = by_norm(grad)
        clipped = by_value(clipped)
    else:
        clipped, norm = by_norm(by_value(grad))
    lr = float(ca["lr"])
    diff = max(max_diff((before.params[k] - after.params[k]) / lr, clipped[k], k) for k in grad)
    ok = diff < tol
    count = sum(g.size for g in grad.values())
    if limit <= 0 and max_norm <= 0:
        clipping = "no clipping"
    else:
        clipping = f"{clamped} entries clamped to +-{limit:g}" if limit > 0 else "no clamping"
        if max_norm > 0:
            clipping += f", then the norm {norm:.4g} " + \
                (f"scaled to {max_norm:g}" if norm > max_norm else f"left (at most {max_norm:g})")
    print(f"{after.path}: ntm SGD step {before.state['step']} -> {after.state['step']} (lr {lr:g}) over {N} "
          f"sequences: the objective's gradient by central differences over {count} parameters, {clipping}; "
          f"max |step / lr - gradient| {diff:.3g} (tolerance {tol:g}): {verdict(ok)}")
    return 0 if ok else 1


# ---- what this module reads (tests/formats/reload.py) -------------------------------------------

READERS = {
    "ntm": check_ntm_run,
}
STEP_CHECKS = {
    "ntm": check_ntm_step,
}
BREAKS = {
    "ntm-loss-bits": "the NTM's objective in bits (instead of nats)",
    "clip-norm-first": "gradients clipped by norm, then by value (instead of value, then norm)",
}
