"""The captioner family's reader for tests/formats/reload.py (which imports it; its docstring says
how a family's module plugs in): rebuilds model files of kind "captioner" (any encoder, soft or
mean attention) with numpy, following docs/FORMATS.md.

BATCH.h5:
    /images, /tgt, /tgt_len          float32 [B, C, H, W], int32 [B, T], [B]
    /logits          float32 [B, T, V]      teacher-forced logits
    /attention       float32 [B, T, L]      the weights behind every word, 0 past tgt_len
    /captions/predictions, predictions_len, scores, attention
                                            what `attn-caption caption` wrote for these images
                                            (greedy; compared exactly, the rest to the tolerance),
                                            with the attribute /captions max_len
Or the model file one training step later, with batch_norm: the running statistics must have
moved towards the batch's.
--break: coords-centres, bn-batch-statistics, bn-biased-variance, scores-without-eos (BREAKS, at
the end).
"""

import numpy as np

from reload import (BOS, BROKEN, FormatProblem, Params, linear, max_diff, sigmoid, softmax, train_split,
                    verdict)


# ---- captioner ---------------------------------------------------------------------------------

PAD, EOS = 0, 2


def parse_encoder(spec):
    """"conv32x3,pool2" -> [("conv", 32, 3), ("pool", 0, 2)]."""
    layers = []
    for item in spec.split(","):
        if item.startswith("conv"):
            K, S = item[4:].split("x")
            layers.append(("conv", int(K), int(S)))
        elif item.startswith("pool"):
            layers.append(("pool", 0, int(item[4:])))
        else:
            raise FormatProblem(f"encoder item {item!r} is neither convKxS nor poolP")
    return layers


def conv2d(x, W, b):
    """Cross-correlation with zero padding S // 2 on every side, stride 1 (torch.nn.Conv2d):
    x [B, C, H, W], W [K, C, S, S] -> [B, K, H + 2 (S // 2) - S + 1, ...]."""
    S = W.shape[2]
    pad = S // 2
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    Ho, Wo = xp.shape[2] - S + 1, xp.shape[3] - S + 1
    y = np.zeros((x.shape[0], W.shape[0], Ho, Wo))
    for u in range(S):
        for v in range(S):
            y += np.einsum("kc,bcij->bkij", W[:, :, u, v], xp[:, :, u:u + Ho, v:v + Wo])
    return y if b is None else y + b[None, :, None, None]


def max_pool(x, P):
    """P x P windows, stride P; rows and columns past the last whole window are dropped (floor)."""
    B, C, H, W = x.shape
    Ho, Wo = H // P, W // P
    return x[:, :, :Ho * P, :Wo * P].reshape(B, C, Ho, P, Wo, P).max(axis=(3, 5))


def grid_coordinates(h, w):
    """[h w, 2]: location i = y w + x gets (x, y), each 2 i / (n - 1) - 1 over its axis (0 when n = 1),
    so the first and last locations are exactly -1 and 1. (--break coords-centres: cell centres.)"""
    def scaled(i, n):
        if "coords-centres" in BROKEN:
            return 2.0 * (i + 0.5) / n - 1.0
        return 2.0 * i / (n - 1) - 1.0 if n > 1 else np.zeros_like(i, dtype=np.float64)
    i = np.arange(h * w)
    return np.stack([scaled(i % w, w), scaled(i // w, h)], axis=1)


class Captioner:
    """The captioner (FORMATS.md, Captioner) from its /config, /params and /buffers."""

    def __init__(self, c, p, buffers):
        self.c = c
        V, m, Dd, A = c["vocab"], c["embed_dim"], c["hidden"], c["attention_dim"]
        self.bn, self.coords = bool(c["batch_norm"]), bool(c["coords"])
        self.soft, self.gate = c["attention"] == "soft", bool(c["gate"])
        self.layers = []
        C, h, w, k = c["channels"], c["height"], c["width"], 0
        for kind, K, S in parse_encoder(c["encoder"]):
            if kind == "conv":
                layer = {"kind": kind, "W": p(f"encoder/conv{k}/W", (K, C, S, S))}
                if self.bn:
                    layer.update(gamma=p(f"encoder/bn{k}/gamma", (K,)), beta=p(f"encoder/bn{k}/beta", (K,)),
                                 mean=buffers.get(f"encoder/bn{k}/running_mean"),
                                 var=buffers.get(f"encoder/bn{k}/running_var"), name=f"encoder/bn{k}")
                    if layer["mean"] is None or layer["var"] is None:
                        raise FormatProblem(f"no /buffers/encoder/bn{k}/running_mean or running_var")
                else:
                    layer["b"] = p(f"encoder/conv{k}/b", (K,))
                self.layers.append(layer)
                C, h, w, k = K, h + 2 * (S // 2) - S + 1, w + 2 * (S // 2) - S + 1, k + 1
            else:
                self.layers.append({"kind": kind, "P": S})
                h, w = h // S, w // S
        self.h, self.w, self.L = h, w, h * w
        self.D = D = C + (2 if self.coords else 0)
        self.init_h = (p("init_h/W", (Dd, D)), p("init_h/b", (Dd,)))
        self.init_c = (p("init_c/W", (Dd, D)), p("init_c/b", (Dd,)))
        self.E = p("embedding/table", (V, m))
        self.W_ih, self.W_hh, self.b = p("decoder/rnn/W_ih", (4 * Dd, m + D)), p("decoder/rnn/W_hh", (4 * Dd, Dd)), \
            p("decoder/rnn/b", (4 * Dd,))
        if self.soft:
            self.att = (p("decoder/attention/W", (A, Dd)), p("decoder/attention/U", (A, D)), p("decoder/attention/v", (A,)))
            if self.gate:
                self.gate_W, self.gate_b = p("decoder/gate/W", (1, Dd)), p("decoder/gate/b", (1,))
        self.deep = (p("deep/W", (m, Dd + D)), p("deep/b", (m,)))
        self.out = (p("output/W", (V, m)), p("output/b", (V,)))

    def encode(self, images, training=False):
        """Annotations [B, L, D]; with training, batch normalisation by the batch's statistics,
        which are returned too: {bn name: (mean, biased variance, n)}."""
        x, stats = images, {}
        for layer in self.layers:
            if layer["kind"] == "pool":
                x = max_pool(x, layer["P"])
                continue
            x = conv2d(x, layer["W"], layer.get("b"))
            if self.bn:
                if training or "bn-batch-statistics" in BROKEN:
                    mean, var = x.mean(axis=(0, 2, 3)), x.var(axis=(0, 2, 3))   # biased (1/n)
                    stats[layer["name"]] = (mean, var, x.shape[0] * x.shape[2] * x.shape[3])
                else:
                    mean, var = layer["mean"], layer["var"]
                x = (x - mean[None, :, None, None]) / np.sqrt(var[None, :, None, None] + 1e-5) \
                    * layer["gamma"][None, :, None, None] + layer["beta"][None, :, None, None]
            x = np.maximum(x, 0.0)
        B, K = x.shape[0], x.shape[1]
        a = x.transpose(0, 2, 3, 1).reshape(B, self.L, K)
        if self.coords:
            a = np.concatenate([a, np.broadcast_to(grid_coordinates(self.h, self.w), (B, self.L, 2))], axis=2)
        return a, stats

    def start(self, images):
        """The decoder's state after encoding: annotations, their mean, h_0, c_0."""
        a, _ = self.encode(images)
        mean = a.mean(axis=1)
        return {"a": a, "mean": mean, "h": np.tanh(linear(mean, *self.init_h)), "c": np.tanh(linear(mean, *self.init_c))}

    def step(self, st, ids):
        """Feeds ids [B] (BOS first); returns the next word's logits [B, V] and the weights [B, L]
        that made the context."""
        a, h, Dd = st["a"], st["h"], self.c["hidden"]
        e = self.E[ids]
        if self.soft:   # alpha = softmax_i(v . tanh(W h_{t-1} + U a_i)), from the state before the step
            W, U, v = self.att
            alpha = softmax(np.tanh((h @ W.T)[:, None, :] + a @ U.T) @ v)
            z = np.einsum("bl,bld->bd", alpha, a)
            if self.gate:
                z = sigmoid(linear(h, self.gate_W, self.gate_b)) * z
        else:
            alpha = np.full((a.shape[0], self.L), 1.0 / self.L)
            z = st["mean"]
        g = linear(np.concatenate([e, z], axis=1), self.W_ih, self.b) + h @ self.W_hh.T
        i, f, o = sigmoid(g[:, :Dd]), sigmoid(g[:, Dd:2 * Dd]), sigmoid(g[:, 3 * Dd:])
        st["c"] = f * st["c"] + i * np.tanh(g[:, 2 * Dd:3 * Dd])
        st["h"] = h = o * np.tanh(st["c"])
        hidden = np.tanh(linear(np.concatenate([h, z], axis=1), *self.deep) + e)
        return linear(hidden, *self.out), alpha

    def teacher_forced(self, images, tgt, tgt_len):
        """Logits [B, T, V] (position t fed BOS, tgt[0] .. tgt[t-1]) and the attention [B, T, L]
        that predicted every word, 0 past tgt_len (FORMATS.md: what `eval` scores)."""
        B, T = tgt.shape
        st = self.start(images)
        logits, attention = np.zeros((B, T, self.c["vocab"])), np.zeros((B, T, self.L))
        for t in range(T):
            logits[:, t], alpha = self.step(st, np.full(B, BOS) if t == 0 else tgt[:, t - 1])
            attention[:, t] = alpha * (t < tgt_len)[:, None]
        return logits, attention

    def greedy(self, images, max_len):
        """Greedy captions as `attn-caption caption` makes them: PAD and BOS barred (logit -inf
        before the log-softmax); the first most likely word; EOS ends a caption and its
        log-probability is in the score; a caption also ends after max_len words, without EOS.
        Returns the words, the scores and the attention [N, Tmax, L] behind every word."""
        N = images.shape[0]
        st = self.start(images)
        words, scores, rows = [[] for _ in range(N)], np.zeros(N), [[] for _ in range(N)]
        live = np.ones(N, dtype=bool)
        fed = np.full(N, BOS)
        while live.any():
            logits, alpha = self.step(st, fed)
            logits[:, [PAD, BOS]] = -np.inf
            lp = logits - (logits.max(1, keepdims=True) +
                           np.log(np.exp(logits - logits.max(1, keepdims=True)).sum(1, keepdims=True)))
            choice = np.argmax(lp, axis=1)   # the first maximum
            for n in np.flatnonzero(live):
                if choice[n] != EOS or "scores-without-eos" not in BROKEN:
                    scores[n] += lp[n, choice[n]]
                if choice[n] == EOS:
                    live[n] = False
                    continue
                words[n].append(int(choice[n]))
                rows[n].append(alpha[n])
                live[n] = len(words[n]) < max_len
            fed = choice
        T = max(1, max(len(w) for w in words))
        attention = np.zeros((N, T, self.L))
        for n in range(N):
            if rows[n]:
                attention[n, :len(rows[n])] = rows[n]
        return words, scores, attention


# ---- checks ----------------------------------------------------------------------------------

def check_captioner(model, batch, attrs, tol):
    """Teacher-forced logits and attention (the library's), and `attn-caption caption`'s greedy
    captions, scores and attention maps."""
    c = model.config
    p = Params(model.params)
    cap = Captioner(c, p, model.buffers)
    p.check_all_used()
    images = batch["images"].astype(np.float64)
    tgt, tgt_len = batch["tgt"].astype(np.int64), batch["tgt_len"].astype(np.int64)
    logits, attention = cap.teacher_forced(images, tgt, tgt_len)
    diffs = {"logits": max_diff(logits, batch["logits"], "logits"),
             "attention": max_diff(attention, batch["attention"], "attention")}
    max_len = int(attrs["captions"]["max_len"])
    words, scores, maps = cap.greedy(images, max_len)
    N = len(words)
    lengths = np.array([len(w) for w in words])
    predictions = np.zeros((N, max(1, lengths.max())), dtype=np.int64)
    for n, w in enumerate(words):
        predictions[n, :len(w)] = w
    same = predictions.shape == batch["captions/predictions"].shape and \
        bool(np.all(predictions == batch["captions/predictions"])) and \
        bool(np.all(lengths == batch["captions/predictions_len"]))
    if same:   # the scores and maps are compared only when the captions are the same
        diffs["scores"] = max_diff(scores, batch["captions/scores"], "scores")
        theirs = batch["captions/attention"]
        diffs["caption attention"] = max_diff(maps, theirs.reshape(theirs.shape[0], theirs.shape[1], -1),
                                              "caption attention")
    ok = same and all(d < tol for d in diffs.values())
    ended = int(np.sum(lengths < max_len))
    print(f"{model.path}: captioner {c['encoder']}{' batch_norm' if c['batch_norm'] else ''}"
          f"{' coords' if c['coords'] else ''} {c['attention']}{' gate' if c['gate'] else ''}, grid {cap.h} x {cap.w}: "
          f"max |diff| " + ", ".join(f"{k} {v:.3g}" for k, v in diffs.items()) +
          f"; greedy captions {'the same' if same else 'DIFFER'} ({ended} of {N} ended with EOS, max_len "
          f"{max_len}) (tolerance {tol:g}): {verdict(ok)}")
    return 0 if ok else 1


def check_captioner_step(before, after, tol):
    """`after` is `before` plus one training step on the whole training split: batch
    normalisation's running statistics must have moved by momentum 0.1 towards the statistics of
    that batch (the unbiased variance), computed here with the parameters of `before`."""
    if not before.config["batch_norm"]:
        raise FormatProblem(f"{before.path}: no batch normalisation, no running statistics to check")
    images = train_split(after, ["images"])["images"].astype(np.float64)
    if after.config["batch_size"] < images.shape[0]:
        raise FormatProblem(f"{after.path}: a step must see the whole training split ({images.shape[0]} images)")
    cap = Captioner(before.config, Params(before.params), before.buffers)
    _, stats = cap.encode(images, training=True)
    diffs = {}
    for name, (mean, var, n) in stats.items():
        want_mean = 0.9 * before.buffers[f"{name}/running_mean"] + 0.1 * mean
        unbias = 1.0 if "bn-biased-variance" in BROKEN else n / (n - 1)
        want_var = 0.9 * before.buffers[f"{name}/running_var"] + 0.1 * var * unbias
        diffs[name] = max(max_diff(want_mean, after.buffers[f"{name}/running_mean"], "running_mean"),
                          max_diff(want_var, after.buffers[f"{name}/running_var"], "running_var"))
    ok = all(d < tol for d in diffs.values())
    print(f"{after.path}: captioner step {before.state['step']} -> {after.state['step']} over {images.shape[0]} "
          f"images: max |running statistics diff| " + ", ".join(f"{k} {v:.3g}" for k, v in diffs.items()) +
          f" (tolerance {tol:g}): {verdict(ok)}")
    return 0 if ok else 1


# ---- what this module reads (tests/formats/reload.py) -------------------------------------------

READERS = {
    "captioner": check_captioner,
}
STEP_CHECKS = {
    "captioner": check_captioner_step,
}
BREAKS = {
    "coords-centres": "captioner coordinates of cell centres (instead of -1 .. 1 at the ends)",
    "bn-batch-statistics": "batch normalisation by the batch's statistics at evaluation",
    "bn-biased-variance": "running variance moved towards the biased batch variance",
    "scores-without-eos": "caption scores without the EOS log-probability",
}
