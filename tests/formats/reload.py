#!/usr/bin/env python3
"""Rebuilds an attnlab model from its HDF5 file with h5py and numpy only and checks its numbers.

    reload.py [--tol 1e-4] [--break CONVENTION] MODEL.h5 BATCH.h5 [MODEL.h5 BATCH.h5 ...]
    reload.py --kinds        prints the model kinds it rebuilds (the root `kind`), one a line

MODEL.h5 is a model file of kind "transformer" (arch encdec, lm or mlm), "transformer-classifier"
(attn-transformer finetune: an lm or mlm body and a linear head), "seq2seq" (any variant),
"memnet" (any encoding and tying), "ntm" (any controller, heads and memory_init) or "captioner"
(any encoder, soft or mean attention). Nothing of attnlab is imported: the model is
rebuilt from the file's /config, /params (and /buffers) alone, following docs/FORMATS.md, which
is what this script tests.

BATCH.h5 holds a batch as the model reads it and what attnlab computed on it:
    /src, /src_len   int32 [B, S], [B]      encdec, mlm (inputs, [MASK] included), seq2seq
    /tgt, /tgt_len   int32 [B, T], [B]      encdec, lm, seq2seq (targets ending with EOS)
    /logits          float32 [B, T, V]      teacher-forced logits (mlm: [B, S, V])
    /alignment       float32 [B, T, S]      seq2seq with attention: the decoder's weights
For a fine-tuned classifier, rows of a labelled data set (no [CLS], [SEP] or BOS: reload.py
adds them as FORMATS.md says):
    /src, /src_len   int32 [B, L], [B]      the tokens of sentence A, then of sentence B
    /segments        integer [B, L]         0 (A) then 1 (B) within src_len; absent: A alone
    /logits          float32 [B, K]         the class logits
or the file `attn-transformer classify` wrote, whose /probabilities (the softmax of the logits)
and /predictions (compared exactly) are checked.
For a memnet, instead:
    /story, /story_len, /question   int32 [B, Ms, Ws], [B], [B, Wq]   a bAbI batch
    /attention       float32 [B, Nhop, Ms]  every hop's attention (0 outside the window)
    /predictions     int32 [B]              the predicted answer ids (compared exactly)
For an NTM: the file `attn-ntm run` wrote (FORMATS.md, "Run"): its /outputs, /read_weights,
/write_weights and /metrics bits_per_sequence are compared (memory_init random: M_0 drawn as the
run drew it, in batches of its /config batch_size).
For a captioner:
    /images, /tgt, /tgt_len          float32 [B, C, H, W], int32 [B, T], [B]
    /logits          float32 [B, T, V]      teacher-forced logits
    /attention       float32 [B, T, L]      the weights behind every word, 0 past tgt_len
    /captions/predictions, predictions_len, scores, attention
                                            what `attn-caption caption` wrote for these images
                                            (greedy; compared exactly, the rest to the tolerance),
                                            with the attribute /captions max_len
BATCH.h5 may also be a model file one training step after MODEL.h5, trained on its whole training
split (its /config data, read from the working directory) in one batch:
    ntm        with plain SGD: the step divided by the rate must be the objective's gradient
               (central differences here), clipped by value and then by norm as /config says
    captioner  with batch_norm: the running statistics must have moved towards the batch's
Every position is compared, padded ones included (their values are defined too).

Prints one line per pair (the largest differences) and exits 0 when every difference is below
the tolerance, 1 when one is not, 2 on a file that does not fit, 77 when h5py or numpy is missing.
--break applies a wrong convention on purpose (the test checks that it is noticed):
    gru-gates            swaps the GRU's r and z gates
    sinusoid-halves      sin in the first D/2 columns and cos in the last (instead of interleaved)
    ntm-loss-bits        the NTM's objective in bits (instead of nats)
    clip-norm-first      gradients clipped by norm, then by value (instead of value, then norm)
    coords-centres       captioner coordinates of cell centres (instead of -1 .. 1 at the ends)
    bn-batch-statistics  batch normalisation by the batch's statistics at evaluation
    bn-biased-variance   running variance moved towards the biased batch variance
    scores-without-eos   caption scores without the EOS log-probability
    classifier-position  the classifier reads the wrong position: lm the one before the last, mlm
                         its final [SEP] (instead of the last token, [CLS])
    sep-segment          the mlm classifier's [SEP] after sentence A in segment 1 (instead of 0)
"""
import argparse
import sys

try:
    import h5py
    import numpy as np
except ImportError:
    sys.exit(77)

BOS = 1
BROKEN = set()


class FormatProblem(Exception):
    pass


# ---- reading ---------------------------------------------------------------------------------

def attribute(v):
    """An attribute's value in Python: attnlab stores strings fixed-length (h5py gives bytes)."""
    v = v.item() if hasattr(v, "item") else v
    return v.decode("utf-8") if isinstance(v, bytes) else v


def read_file(path):
    """Every dataset of an HDF5 file by path ("captions/scores") and the attributes of the root
    ("") and of every group, as numpy and Python values."""
    data, attrs = {}, {}
    with h5py.File(path, "r") as f:
        attrs[""] = {k: attribute(v) for k, v in f.attrs.items()}

        def visit(name, obj):
            if isinstance(obj, h5py.Dataset):
                data[name] = obj[()]
            else:
                attrs[name] = {k: attribute(v) for k, v in obj.attrs.items()}
        f.visititems(visit)
    return data, attrs


class Model:
    """A model file: its kind, /config, /params (float64), /buffers and /state."""

    def __init__(self, path):
        data, attrs = read_file(path)
        root = attrs[""]
        if root.get("format") != "attnlab/model":
            raise FormatProblem(f"{path}: root format is {root.get('format')!r}, not 'attnlab/model'")
        if int(root.get("format_version", 0)) != 2:
            raise FormatProblem(f"{path}: format_version {root.get('format_version')}, this reader knows 2")
        self.path, self.kind = path, str(root["kind"])
        self.config, self.state = attrs.get("config", {}), attrs.get("state", {})

        def under(group):
            return {k[len(group) + 1:]: np.asarray(v, dtype=np.float64) for k, v in data.items()
                    if k.startswith(group + "/")}
        self.params, self.buffers = under("params"), under("buffers")


class Params:
    """The /params of a model; every name looked up is checked off, so leftovers are reported."""

    def __init__(self, params):
        self.params = params
        self.used = set()

    def __call__(self, name, shape):
        if name not in self.params:
            raise FormatProblem(f"no /params/{name}")
        p = self.params[name]
        if tuple(p.shape) != tuple(shape):
            raise FormatProblem(f"/params/{name} has shape {list(p.shape)}, expected {list(shape)}")
        self.used.add(name)
        return p

    def check_all_used(self):
        left = sorted(set(self.params) - self.used)
        if left:
            raise FormatProblem("parameters this reader did not use: " + ", ".join(left))


# ---- shared pieces ---------------------------------------------------------------------------

def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def linear(x, W, b=None):
    """y = x W^T + b: W is [out, in]."""
    y = x @ W.T
    return y if b is None else y + b


def layer_norm(x, gamma, beta, eps=1e-5):
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)   # biased (1/D) variance
    return (x - mean) / np.sqrt(var + eps) * gamma + beta


def masked_softmax(scores, visible):
    """Softmax over the last axis among visible entries; exact zeros elsewhere, and a row with
    no visible entry is all zeros."""
    s = np.where(visible, scores, -np.inf)
    m = s.max(-1, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    e = np.where(visible, np.exp(s - m), 0.0)
    z = e.sum(-1, keepdims=True)
    return e / np.where(z > 0, z, 1.0)


# ---- Transformer -----------------------------------------------------------------------------

def sinusoid(L, D):
    pos = np.arange(L, dtype=np.float64)[:, None]
    col = np.arange(D)[None, :]
    angle = pos * np.power(10000.0, -2.0 * (col // 2) / D)
    if "sinusoid-halves" in BROKEN:
        half = (D + 1) // 2
        a = pos * np.power(10000.0, -2.0 * np.arange(half)[None, :] / D)
        return np.concatenate([np.sin(a), np.cos(a)], axis=1)[:, :D]
    return np.where(col % 2 == 0, np.sin(angle), np.cos(angle))


def visible_keys(lengths, T, S, causal, window):
    """[B, T, S]: key j is visible to query i when j < length, (causal) j <= i, (window) |i - j| <= P."""
    i = np.arange(T)[None, :, None]
    j = np.arange(S)[None, None, :]
    vis = j < np.asarray(lengths)[:, None, None]
    if causal:
        vis = vis & (j <= i)
    if window >= 0:
        vis = vis & (np.abs(i - j) <= window)
    return vis


def multi_head_attention(p, name, query, memory, visible, D, NH):
    B, T, _ = query.shape
    S = memory.shape[1]
    HD = D // NH

    def heads(x, w, b, L):   # head h is columns h*HD .. (h+1)*HD - 1 of the projection
        return linear(x, p(f"{name}/{w}", (D, D)), p(f"{name}/{b}", (D,))).reshape(B, L, NH, HD).transpose(0, 2, 1, 3)

    q, k, v = heads(query, "w_q", "b_q", T), heads(memory, "w_k", "b_k", S), heads(memory, "w_v", "b_v", S)
    weights = masked_softmax(q @ k.transpose(0, 1, 3, 2) / np.sqrt(HD), visible[:, None])
    context = (weights @ v).transpose(0, 2, 1, 3).reshape(B, T, D)
    return linear(context, p(f"{name}/w_o", (D, D)), p(f"{name}/b_o", (D,)))


class Transformer:
    """A Transformer's stacks and output layer (FORMATS.md, "Transformer"), the parameters looked
    up as they are used."""

    def __init__(self, c, p):
        self.c, self.p = c, p
        self.arch, self.D, self.NH, self.F = c["arch"], c["d_model"], c["heads"], c["d_ff"]
        self.V, self.Vs, self.L = c["tgt_vocab"], c["src_vocab"], c["max_len"]
        self.pre = c["norm"] == "pre"
        self.tie, self.window = c["tie_embeddings"], c["attn_window"]
        D = self.D
        if self.arch == "encdec" and self.tie != "all":
            self.src_table, self.tgt_table = p("src_embed/table", (self.Vs, D)), p("tgt_embed/table", (self.V, D))
        elif self.arch in ("encdec", "lm", "mlm"):
            rows = self.V + 1 if self.arch == "mlm" else self.V     # mlm: row V is [MASK]
            self.src_table = self.tgt_table = p("embed/table", (rows, D))
        else:
            raise FormatProblem(f"unknown arch {self.arch!r}")

    def positions(self, stack):
        if self.c["pos_encoding"] == "learned":
            return self.p(f"{stack}/positions/table", (self.L, self.D))
        return sinusoid(self.L, self.D)

    def embed(self, table, ids, stack, segments=None):
        """sqrt(D) table[ids] (+ segment_embed[segments], mlm: segment 0 when not given) + PE."""
        if ids.shape[1] > self.L:
            raise FormatProblem(f"{ids.shape[1]} positions, more than max_len {self.L}")
        x = table[ids] * np.sqrt(self.D)
        if self.arch == "mlm":
            seg = np.zeros_like(ids) if segments is None else segments
            x = x + self.p("segment_embed/table", (2, self.D))[seg]
        return x + self.positions(stack)[: ids.shape[1]]

    def norm(self, x, name):
        return layer_norm(x, self.p(f"{name}/gamma", (self.D,)), self.p(f"{name}/beta", (self.D,)))

    def sublayer(self, x, f, norm_name):
        if self.pre:
            return x + f(self.norm(x, norm_name))
        return self.norm(x + f(x), norm_name)

    def ffn(self, x, name):
        D, F, p = self.D, self.F, self.p
        h = np.maximum(linear(x, p(f"{name}/in/W", (F, D)), p(f"{name}/in/b", (F,))), 0.0)
        return linear(h, p(f"{name}/out/W", (D, F)), p(f"{name}/out/b", (D,)))

    def mha(self, name, query, memory, visible):
        return multi_head_attention(self.p, name, query, memory, visible, self.D, self.NH)

    def encoder(self, ids, lengths, segments=None):
        """The encoder's final states [B, S, D] for ids [B, S] (mlm: with segment ids)."""
        x = self.embed(self.src_table, ids, "encoder", segments)
        S = ids.shape[1]
        vis = visible_keys(lengths, S, S, causal=False, window=self.window)
        for l in range(self.c["enc_layers"]):
            n = f"encoder/layer{l}"
            x = self.sublayer(x, lambda y: self.mha(f"{n}/self_attn", y, y, vis), f"{n}/norm1")
            x = self.sublayer(x, lambda y: self.ffn(y, f"{n}/ffn"), f"{n}/norm2")
        return self.norm(x, "encoder/final_norm") if self.pre else x

    def decoder(self, fed, lengths, memory=None, src_len=None):
        """The decoder's final states [B, T, D] for the ids it is fed [B, T] (BOS first), keys
        j < lengths[b] visible (and j <= i), cross-attending to `memory` when given."""
        B, T = fed.shape
        x = self.embed(self.tgt_table, fed, "decoder")
        vis = visible_keys(lengths, T, T, causal=True, window=self.window)
        cross = None if memory is None else visible_keys(src_len, T, memory.shape[1], causal=False, window=-1)
        for l in range(self.c["dec_layers"]):
            n = f"decoder/layer{l}"
            x = self.sublayer(x, lambda y: self.mha(f"{n}/self_attn", y, y, vis), f"{n}/norm1")
            if memory is not None:
                x = self.sublayer(x, lambda y: self.mha(f"{n}/cross_attn", y, memory, cross), f"{n}/norm2")
            x = self.sublayer(x, lambda y: self.ffn(y, f"{n}/ffn"), f"{n}/norm3")
        return self.norm(x, "decoder/final_norm") if self.pre else x

    def output(self, h):
        """The logits over the V classes: tied, the first V rows of the target table, no bias."""
        if self.tie == "none":
            return linear(h, self.p("output/W", (self.V, self.D)), self.p("output/b", (self.V,)))
        return h @ self.tgt_table[: self.V].T


def teacher_forced(tgt):
    """What the decoder is fed for targets tgt [B, T]: BOS, y_0 .. y_{T-2}."""
    return np.concatenate([np.full((tgt.shape[0], 1), BOS), tgt[:, :-1]], axis=1)


def transformer_logits(c, p, batch):
    t = Transformer(c, p)
    if t.arch == "encdec":
        memory = t.encoder(batch["src"], batch["src_len"])
        h = t.decoder(teacher_forced(batch["tgt"]), batch["tgt_len"], memory, batch["src_len"])
    elif t.arch == "lm":
        h = t.decoder(teacher_forced(batch["tgt"]), batch["tgt_len"])
    else:   # mlm: segment 0 everywhere, the token batches here have no segments
        h = t.encoder(batch["src"], batch["src_len"])
    return t.output(h), None


# ---- fine-tuned Transformer classifier --------------------------------------------------------

CLS, SEP = BOS, 2   # [CLS] is BOS (1), [SEP] is EOS (2)


def classifier_inputs(arch, src, src_len, segments):
    """What the body of a classifier reads for rows of a labelled batch (FORMATS.md, "Fine-tuned
    Transformer classifier"): ids [B, L'] padded with 0, their lengths [B], their segment ids
    [B, L'] (mlm) and the position of h in each row [B].
        mlm: [CLS] A [SEP] (B [SEP]), segments 0 for [CLS], A and its [SEP], 1 for B and its [SEP];
             h at [CLS], position 0
        lm:  BOS A ([SEP] B); h at the last position, len - 1
    A is the row's tokens of segment 0, B those of segment 1 (after A), within src_len."""
    rows, segs, read_at = [], [], []
    for b in range(src.shape[0]):
        n = int(src_len[b])
        if not 1 <= n <= src.shape[1]:
            raise FormatProblem(f"src_len row {b} is {n}, outside [1, {src.shape[1]}]")
        tokens = [int(t) for t in src[b, :n]]
        seg = [0] * n if segments is None else [int(s) for s in segments[b, :n]]
        if seg[0] != 0 or any(s not in (0, 1) for s in seg) or seg != sorted(seg):
            raise FormatProblem(f"segments row {b} is not 0 (sentence A) then 1 (sentence B): {seg}")
        a = [t for t, s in zip(tokens, seg) if s == 0]
        second = [t for t, s in zip(tokens, seg) if s == 1]
        if arch == "mlm":
            ids, sg = [CLS] + a + [SEP], [0] * (len(a) + 2)
            if second:
                if "sep-segment" in BROKEN:
                    sg[-1] = 1
                ids, sg = ids + second + [SEP], sg + [1] * (len(second) + 1)
            at = len(ids) - 1 if "classifier-position" in BROKEN else 0
        elif arch == "lm":
            ids, sg = [BOS] + a + ([SEP] + second if second else []), None
            at = len(ids) - 2 if "classifier-position" in BROKEN else len(ids) - 1
        else:
            raise FormatProblem(f"a classifier's body is an lm or an mlm, not {arch!r}")
        rows.append(ids)
        segs.append(sg)
        read_at.append(at)
    L = max(len(r) for r in rows)
    ids = np.zeros((len(rows), L), dtype=np.int64)
    seg = np.zeros((len(rows), L), dtype=np.int64)
    for b, r in enumerate(rows):
        ids[b, :len(r)] = r
        if segs[b] is not None:
            seg[b, :len(r)] = segs[b]
    return ids, np.array([len(r) for r in rows]), seg, np.array(read_at)


def classifier_logits(c, p, src, src_len, segments):
    """Class logits [B, K] of a fine-tuned classifier on rows of a labelled batch."""
    t = Transformer(c, p)
    K, D = int(c["classes"]), t.D
    ids, lengths, seg, read_at = classifier_inputs(t.arch, src, src_len, segments)
    h = t.encoder(ids, lengths, seg) if t.arch == "mlm" else t.decoder(ids, lengths)
    pooled = h[np.arange(h.shape[0]), read_at]   # [B, D]
    logits = linear(pooled, p("classifier/W", (K, D)), p("classifier/b", (K,)))
    if t.tie == "none":   # the body's output layer is kept, unused here: only the auxiliary LM loss reads it
        p("output/W", (t.V, D)), p("output/b", (t.V,))
    return logits


# ---- RNN seq2seq -----------------------------------------------------------------------------

class Rnn:
    """A GRU or LSTM layer "<name>/W_ih [G, I]", "W_hh [G, H]", biases "b_ih", "b_hh" (GRU) or "b" (LSTM)."""

    def __init__(self, p, cell, name, I, H):
        G = (3 if cell == "gru" else 4) * H
        self.cell, self.H = cell, H
        self.W_ih, self.W_hh = p(f"{name}/W_ih", (G, I)), p(f"{name}/W_hh", (G, H))
        if cell == "gru":
            self.b_ih, self.b_hh = p(f"{name}/b_ih", (G,)), p(f"{name}/b_hh", (G,))
        else:
            self.b = p(f"{name}/b", (G,))

    def step(self, x, h, c):
        H = self.H
        if self.cell == "gru":   # gates r, z, n; b_hn stays inside r * (...)
            gx = linear(x, self.W_ih, self.b_ih)
            gh = linear(h, self.W_hh, self.b_hh)
            r = sigmoid(gx[:, :H] + gh[:, :H])
            z = sigmoid(gx[:, H:2 * H] + gh[:, H:2 * H])
            if "gru-gates" in BROKEN:
                r, z = z, r
            n = np.tanh(gx[:, 2 * H:] + r * gh[:, 2 * H:])
            return (1.0 - z) * n + z * h, None
        g = linear(x, self.W_ih, self.b) + h @ self.W_hh.T   # gates i, f, g, o; one bias
        i, f, o = sigmoid(g[:, :H]), sigmoid(g[:, H:2 * H]), sigmoid(g[:, 3 * H:])
        c = f * c + i * np.tanh(g[:, 2 * H:3 * H])
        return o * np.tanh(c), c


def reverse_within(x, lengths):
    """Each row reversed within its length, the padding left in place. x: [B, S, D]."""
    y = x.copy()
    for b, n in enumerate(lengths):
        y[b, :n] = x[b, :n][::-1]
    return y


def seq2seq_logits(c, p, batch):
    cell, E, H, Dd = c["cell"], c["embed_dim"], c["hidden"], c["dec_hidden"]
    V, Vs, A, Dwin = c["tgt_vocab"], c["src_vocab"], c["attention_dim"], c["attention_window"]
    dirs = 2 if c["bidirectional"] else 1
    Dv = dirs * H
    score, style, local = c["attention"], c["attention_style"], c["local"]
    self_attn = bool(c["encoder_self_attention"])
    Dc = 0 if score == "none" else Dv
    src, src_len, tgt = batch["src"], batch["src_len"], batch["tgt"]
    B, S = src.shape
    T = tgt.shape[1]

    # Encoder: layers of one or two directions; the backward one reads each sentence reversed.
    def run_direction(rnn, W_self, x):   # x: [B, S, I] in processing order -> [B, S, H]
        h, cst = np.zeros((B, H)), np.zeros((B, H))
        ys = []
        for t in range(x.shape[1]):
            inp = x[:, t]
            if W_self is not None:   # LSTMN: h~_t over h_0 .. h_{t-1}, query h_{t-1}, general score
                ctx = np.zeros((B, H))
                if t > 0:
                    keys = np.stack(ys, axis=1)
                    e = np.einsum("bk,bjk->bj", h @ W_self, keys)
                    ctx = np.einsum("bj,bjk->bk", masked_softmax(e, np.ones_like(e, dtype=bool)), keys)
                inp = np.concatenate([inp, ctx], axis=1)
            h, cst = rnn.step(inp, h, cst)
            ys.append(h)
        return np.stack(ys, axis=1)

    x = p("encoder/embedding/table", (Vs, E))[src]
    for l in range(c["layers"]):
        I = (E if l == 0 else Dv) + (H if self_attn else 0)
        outs = []
        for d, dname in enumerate(["fwd", "bwd"][:dirs]):
            name = f"encoder/layer{l}/{dname}"
            rnn = Rnn(p, cell, name, I, H)
            W_self = p(f"{name}/self_attn/W", (H, H)) if self_attn else None
            y = run_direction(rnn, W_self, x if d == 0 else reverse_within(x, src_len))
            outs.append(y if d == 0 else reverse_within(y, src_len))
        x = np.concatenate(outs, axis=2)
    memory = x   # [B, S, Dv]

    # Bridge: s_0 = tanh(W_b [h->_{len-1}; h<-_0] + b_b); an LSTM decoder starts from c_0 = 0.
    final = np.stack([memory[b, src_len[b] - 1, :H] for b in range(B)])
    if dirs == 2:
        final = np.concatenate([final, memory[:, 0, H:]], axis=1)
    s = np.tanh(linear(final, p("bridge/W", (Dd, Dv)), p("bridge/b", (Dd,))))
    s_c = np.zeros((B, Dd))

    j = np.arange(S)[None, :]
    if score == "general":
        W_att = p("decoder/attention/W", (Dd, Dv))
    elif score == "concat":
        W_att, U, v = p("decoder/attention/W", (A, Dd)), p("decoder/attention/U", (A, Dv)), p("decoder/attention/v", (A,))
        Uk = memory @ U.T
    elif score == "location":
        W_att = p("decoder/attention/W", (c["max_src_len"], Dd))
    if local == "predictive":
        W_p, v_p = p("decoder/local_p/W", (A, Dd)), p("decoder/local_p/v", (A,))

    def attend(q, t):   # q: [B, Dd] at target step t -> context [B, Dv], weights [B, S]
        if score in ("dot", "scaled-dot"):
            e = np.einsum("bd,bsd->bs", q, memory)
            if score == "scaled-dot":
                e = e / np.sqrt(Dv)
        elif score == "general":   # q^T W h_j
            e = np.einsum("bk,bsk->bs", q @ W_att, memory)
        elif score == "concat":    # v^T tanh(W q + U h_j)
            e = np.tanh((q @ W_att.T)[:, None, :] + Uk) @ v
        elif score == "location":  # (W q)_j
            e = q @ W_att[:S].T
        else:
            raise FormatProblem(f"unknown attention score {score!r}")
        vis = j < src_len[:, None]
        if local == "monotonic":
            vis = vis & (np.abs(t - j) <= Dwin)
        elif local == "predictive":
            pos = src_len * sigmoid(np.tanh(q @ W_p.T) @ v_p)
            vis = vis & (np.abs(j - pos[:, None]) <= Dwin)
        a = masked_softmax(e, vis)
        if local == "predictive":
            sigma = Dwin / 2.0
            a = a * np.exp(-((j - pos[:, None]) ** 2) / (2 * sigma * sigma))
        return np.einsum("bs,bsd->bd", a, memory), a

    extra = Dc if style == "bahdanau" else Dd
    dec = Rnn(p, cell, "decoder/rnn", E + extra, Dd)
    emb_table = p("decoder/embedding/table", (V, E))
    if style == "luong":
        W_c = p("decoder/combine/W", (Dd, Dc + Dd))
        feed = np.zeros((B, Dd))
    Do = Dd + Dc + E if style == "bahdanau" else Dd
    W_o, b_o = p("output/W", (V, Do)), p("output/b", (V,))

    logits = np.zeros((B, T, V))
    alignment = np.zeros((B, T, S)) if score != "none" else None
    for t in range(T):
        y_prev = np.full(B, BOS) if t == 0 else tgt[:, t - 1]
        e_t = emb_table[y_prev]
        if style == "bahdanau":   # c_t from s_{t-1}; s_t = RNN([e_t; c_t]); o_t = [s_t; c_t; e_t]
            ctx = np.zeros((B, 0))
            if score != "none":
                ctx, a = attend(s, t)
                alignment[:, t] = a
            s, s_c = dec.step(np.concatenate([e_t, ctx], axis=1), s, s_c)
            o = np.concatenate([s, ctx, e_t], axis=1)
        else:                     # s_t = RNN([e_t; h~_{t-1}]); c_t from s_t; o_t = h~_t = tanh(W_c [c_t; s_t])
            s, s_c = dec.step(np.concatenate([e_t, feed], axis=1), s, s_c)
            ctx = np.zeros((B, 0))
            if score != "none":
                ctx, a = attend(s, t)
                alignment[:, t] = a
            o = feed = np.tanh(linear(np.concatenate([ctx, s], axis=1), W_c))
        logits[:, t] = linear(o, W_o, b_o)
    return logits, alignment


# ---- memnet ----------------------------------------------------------------------------------

def memnet_outputs(config, p, batch):
    """Every hop's attention [B, Nhop, Ms] and the logits [B, V] of a MemN2N (FORMATS.md, MemN2N)."""
    V, E, K, Mm = (int(config[k]) for k in ("vocab_size", "embedding_size", "hops", "memory_size"))
    temporal = int(config["temporal"]) == 1
    if config["tying"] == "adjacent":
        tables = [p(f"A1", (V, E))] + [p(f"C{k}", (V, E)) for k in range(1, K + 1)]
        A = tables[:K]
        C = tables[1:]
        B_, W, H = tables[0], tables[K], None
        if temporal:
            t = [p("T_A1", (Mm, E))] + [p(f"T_C{k}", (Mm, E)) for k in range(1, K + 1)]
            TA, TC = t[:K], t[1:]
    else:
        B_, A1, C1 = p("B", (V, E)), p("A", (V, E)), p("C", (V, E))
        A, C = [A1] * K, [C1] * K
        if temporal:
            ta, tc = p("T_A", (Mm, E)), p("T_C", (Mm, E))
            TA, TC = [ta] * K, [tc] * K
        H, W = p("H", (E, E)), p("W", (V, E))

    empty_slots = int(config.get("empty_slots", 0))

    def embed(X, ids):
        words = []
        for w in ids:
            if w == 0:
                break
            words.append(int(w))
        J = len(words)
        out = np.zeros(E)
        for j, w in enumerate(words, start=1):
            k = np.arange(1, E + 1)
            if config["encoding"] == "position":
                out += ((1 - j / J) - (k / E) * (1 - 2 * j / J)) * X[w]
            elif config["encoding"] == "position-fixed":
                Jf = int(config["sentence_length"])
                out += (1 + 4 * (k - (E + 1) / 2) * (j - (Jf + 1) / 2) / (E * Jf)) * X[w]
            else:
                out += X[w]
        return out

    story, story_len, question = batch["story"], batch["story_len"], batch["question"]
    Bn, Ms = story.shape[0], story.shape[1]
    attention = np.zeros((Bn, K, Ms))
    logits = np.zeros((Bn, V))
    for b in range(Bn):
        n = int(story_len[b])
        window = range(max(0, n - Mm), n)
        u = embed(B_, question[b])
        for h in range(K):
            m = np.array([embed(A[h], story[b, i]) + (TA[h][n - 1 - i] if temporal else 0) for i in window])
            c = np.array([embed(C[h], story[b, i]) + (TC[h][n - 1 - i] if temporal else 0) for i in window])
            s = m @ u
            empties = max(0, empty_slots - len(window))   # the code's empty slots: score 0, read nothing
            top = max(s.max(), 0.0) if empties else s.max()
            e = np.exp(s - top)
            pr = e / (e.sum() + empties * np.exp(-top))
            attention[b, h, list(window)] = pr
            o = pr @ c
            u = (u if H is None else H @ u) + o
        logits[b] = W @ u
    return attention, logits


# ---- attnlab's random stream (Philox4x32-10) -------------------------------------------------

class Philox:
    """attnlab's Rng (lib/src/core/rng.cpp): value n of stream `seed` is lane n mod 4 of the
    Philox4x32-10 block n // 4 (counter = the block index, key = the seed); `counter` counts the
    32-bit values drawn."""
    M0, M1, W0, W1 = 0xD2511F53, 0xCD9E8D57, 0x9E3779B9, 0xBB67AE85
    MASK = 0xFFFFFFFF

    def __init__(self, seed):
        self.seed, self.counter = int(seed), 0

    def blocks(self, first, count):
        """Blocks first .. first + count - 1: uint64 [count, 4], each entry a 32-bit value."""
        index = np.arange(first, first + count, dtype=np.uint64)
        c0, c1 = index & np.uint64(self.MASK), index >> np.uint64(32)
        c2, c3 = np.zeros_like(index), np.zeros_like(index)
        k0, k1 = self.seed & self.MASK, self.seed >> 32
        for _ in range(10):
            p0, p1 = np.uint64(self.M0) * c0, np.uint64(self.M1) * c2
            c0, c1, c2, c3 = ((p1 >> np.uint64(32)) ^ c1 ^ np.uint64(k0), p1 & np.uint64(self.MASK),
                              (p0 >> np.uint64(32)) ^ c3 ^ np.uint64(k1), p0 & np.uint64(self.MASK))
            k0, k1 = (k0 + self.W0) & self.MASK, (k1 + self.W1) & self.MASK
        return np.stack([c0, c1, c2, c3], axis=1)

    @staticmethod
    def unit(x):
        """A 32-bit value as a float32 in [0, 1): its top 24 bits times 2^-24."""
        return (np.asarray(x, dtype=np.uint64) >> np.uint64(8)).astype(np.float32) * np.float32(2.0 ** -24)

    @staticmethod
    def box_muller(u1, u2):
        """Float32, as the C++ computes it: sqrt(-2 log u1) cos(2 pi u2), u1 in (0, 1]."""
        two_pi = np.float32(2.0) * np.float32(np.pi)
        return np.sqrt(np.float32(-2.0) * np.log(u1)) * np.cos(two_pi * u2)

    def fill_normal(self, n, mean, stddev):
        """Rng::fill_normal: element i from the next unused block + i (its lanes 0 and 1); the
        counter then moves past every block used."""
        first = (self.counter + 3) // 4
        b = self.blocks(first, n)
        u1 = np.float32(1.0) - self.unit(b[:, 0])
        u2 = self.unit(b[:, 1])
        self.counter = (first + n) * 4
        return np.float32(mean) + np.float32(stddev) * self.box_muller(u1, u2)

    def next_u32(self):
        v = int(self.blocks(self.counter // 4, 1)[0, self.counter % 4])
        self.counter += 1
        return v

    def normal(self):
        """Rng::normal: two consecutive values, u1 = 1 - uniform, u2 = uniform."""
        u1 = np.float32(1.0) - self.unit(self.next_u32())
        u2 = self.unit(self.next_u32())
        return self.box_muller(u1, u2)


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


# ---- NTM ---------------------------------------------------------------------------------------

def softplus(x):
    return np.logaddexp(0.0, x)


def softmax(x, axis=-1):
    e = np.exp(x - x.max(axis, keepdims=True))
    return e / e.sum(axis, keepdims=True)


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


# ---- main ------------------------------------------------------------------------------------

def max_diff(ours, theirs, what):
    """max |ours - theirs| over arrays of the same shape (a FormatProblem otherwise)."""
    theirs = np.asarray(theirs, dtype=np.float64)
    if ours.shape != theirs.shape:
        raise FormatProblem(f"{what} of shape {list(ours.shape)}, the file has {list(theirs.shape)}")
    return float(np.max(np.abs(ours - theirs))) if ours.size else 0.0


def verdict(ok):
    return "match" if ok else "MISMATCH"


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


def train_split(after, names):
    """The datasets `names` of /train of the data set that the model `after` was trained on
    (its /config data, a path relative to the working directory)."""
    with h5py.File(after.config["data"], "r") as f:
        return {n: f[f"/train/{n}"][()] for n in names}


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


def check_logits(model, batch, logits, alignment, what, tol):
    """Compares teacher-forced logits (and an alignment) with the batch file's."""
    if logits.shape != batch["logits"].shape:
        raise FormatProblem(f"logits of shape {list(logits.shape)}, the batch file has {list(batch['logits'].shape)}")
    diff = max_diff(logits, batch["logits"], "logits")
    line = f"{model.path}: {what}: max |logits diff| {diff:.3g} over {list(logits.shape)}"
    ok = diff < tol
    if alignment is not None and "alignment" in batch:
        adiff = max_diff(alignment, batch["alignment"], "alignment")
        line += f", max |alignment diff| {adiff:.3g}"
        ok = ok and adiff < tol
    print(f"{line} (tolerance {tol:g}): {verdict(ok)}")
    return 0 if ok else 1


def check_transformer(model, batch, attrs, tol):
    p = Params(model.params)
    logits, alignment = transformer_logits(model.config, p, batch)
    p.check_all_used()
    return check_logits(model, batch, logits, alignment, f"transformer {model.config['arch']}", tol)


def check_seq2seq(model, batch, attrs, tol):
    c = model.config
    p = Params(model.params)
    logits, alignment = seq2seq_logits(c, p, batch)
    p.check_all_used()
    return check_logits(model, batch, logits, alignment,
                        f"seq2seq {c['cell']} {c['attention_style']} {c['attention']} {c['local']}", tol)


def check_memnet(model, batch, attrs, tol):
    config = model.config
    p = Params(model.params)
    attention, logits = memnet_outputs(config, p, batch)
    p.check_all_used()
    diff = max_diff(attention, batch["attention"], "attention")
    same = bool(np.all(np.argmax(logits, axis=1) == batch["predictions"]))
    ok = diff < tol and same
    print(f"{model.path}: memnet {config['encoding']} {config['tying']} temporal {config['temporal']}: "
          f"max |attention diff| {diff:.3g} over {list(attention.shape)}, predictions "
          f"{'the same' if same else 'DIFFER'} (tolerance {tol:g}): {verdict(ok)}")
    return 0 if ok else 1


def check_classifier(model, batch, attrs, tol):
    """A fine-tuned classifier on the rows /src, /src_len (/segments) of a batch file, against its
    class logits /logits [B, K]; or on an `attn-transformer classify` file, against its
    /probabilities (the softmax of the logits) and /predictions (exactly)."""
    c = model.config
    p = Params(model.params)
    segments = batch.get("segments")
    logits = classifier_logits(c, p, batch["src"].astype(np.int64), batch["src_len"].astype(np.int64),
                               None if segments is None else segments.astype(np.int64))
    p.check_all_used()
    pairs = 0 if segments is None else int(np.sum(np.any(segments == 1, axis=1)))
    what = (f"transformer-classifier {c['arch']} ({c['norm']}-norm, {c['pos_encoding']} positions, "
            f"{c['classes']} classes; {logits.shape[0]} rows, {pairs} with a sentence B)")
    if attrs[""].get("kind") == "classification":   # what attn-transformer classify wrote
        probabilities = softmax(logits, axis=1)
        diff = max_diff(probabilities, batch["probabilities"], "/probabilities")
        same = bool(np.all(np.argmax(probabilities, axis=1) == batch["predictions"]))
        ok = diff < tol and same
        print(f"{model.path}: {what}, attn-transformer classify: max |probabilities diff| {diff:.3g}, predictions "
              f"{'the same' if same else 'DIFFER'} (tolerance {tol:g}): {verdict(ok)}")
        return 0 if ok else 1
    return check_logits(model, batch, logits, None, what, tol)


# The model kinds this reader rebuilds (`--kinds` lists them): root kind -> the check of a model
# file of that kind against a batch file (or a tool's output file).
READERS = {
    "transformer": check_transformer,
    "transformer-classifier": check_classifier,
    "seq2seq": check_seq2seq,
    "memnet": check_memnet,
    "ntm": check_ntm_run,
    "captioner": check_captioner,
}
# The kinds whose training conventions are checked on a model file and the one a step later.
STEP_CHECKS = {
    "ntm": check_ntm_step,
    "captioner": check_captioner_step,
}


def check(model_path, batch_path, tol):
    """Prints the report of one model and batch; returns the exit code (0, 1 or 2)."""
    try:
        model = Model(model_path)
        batch, attrs = read_file(batch_path)
        if attrs[""].get("format") == "attnlab/model":   # a step: the model's next checkpoint
            after = Model(batch_path)
            if after.kind != model.kind or int(after.state["step"]) != int(model.state["step"]) + 1:
                raise FormatProblem(f"{batch_path} is not the step after {model_path}")
            if model.kind not in STEP_CHECKS:
                raise FormatProblem(f"no step check for a {model.kind} model")
            return STEP_CHECKS[model.kind](model, after, tol)
        if model.kind not in READERS:
            raise FormatProblem(f"unknown model kind {model.kind!r}")
        return READERS[model.kind](model, batch, attrs, tol)
    except (FormatProblem, KeyError, OSError) as e:
        print(f"{model_path}: {type(e).__name__}: {e}" if not isinstance(e, FormatProblem) else f"{model_path}: {e}")
        return 2


BREAKS = ["gru-gates", "sinusoid-halves", "ntm-loss-bits", "clip-norm-first", "coords-centres", "bn-batch-statistics",
          "bn-biased-variance", "scores-without-eos", "classifier-position", "sep-segment"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("files", nargs="*", metavar="MODEL.h5 BATCH.h5")
    ap.add_argument("--tol", type=float, default=1e-4)
    ap.add_argument("--break", dest="broken", action="append", default=[], choices=BREAKS)
    ap.add_argument("--kinds", action="store_true", help="print the model kinds this reader rebuilds, one a line")
    args = ap.parse_args()
    if args.kinds:
        if args.files:
            ap.error("--kinds takes no files")
        print("\n".join(READERS))
        return 0
    if not args.files or len(args.files) % 2:
        ap.error("give pairs of MODEL.h5 BATCH.h5")
    BROKEN.update(args.broken)
    return max(check(m, b, args.tol) for m, b in zip(args.files[::2], args.files[1::2]))


if __name__ == "__main__":
    sys.exit(main())
