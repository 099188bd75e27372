#!/usr/bin/env python3
"""Rebuilds an attnlab model from its HDF5 file with h5py and numpy only and checks its logits.

    reload.py [--tol 1e-4] [--break CONVENTION] MODEL.h5 BATCH.h5 [MODEL.h5 BATCH.h5 ...]

MODEL.h5 is a model file of kind "transformer" (arch encdec, lm or mlm), "seq2seq" (any
variant) or "memnet" (any encoding and tying). Nothing of attnlab is imported: the model is rebuilt from the file's /config and /params
alone, following docs/FORMATS.md, which is what this script tests.

BATCH.h5 holds a batch as the model reads it and what attnlab computed on it:
    /src, /src_len   int32 [B, S], [B]      encdec, mlm (inputs, [MASK] included), seq2seq
    /tgt, /tgt_len   int32 [B, T], [B]      encdec, lm, seq2seq (targets ending with EOS)
    /logits          float32 [B, T, V]      teacher-forced logits (mlm: [B, S, V])
    /alignment       float32 [B, T, S]      seq2seq with attention: the decoder's weights
For a memnet, instead:
    /story, /story_len, /question   int32 [B, Ms, Ws], [B], [B, Wq]   a bAbI batch
    /attention       float32 [B, Nhop, Ms]  every hop's attention (0 outside the window)
    /predictions     int32 [B]              the predicted answer ids (compared exactly)
Every position is compared, padded ones included (their values are defined too).

Prints one line per pair (the largest differences) and exits 0 when every difference is below
the tolerance, 1 when one is not, 2 on a file that does not fit, 77 when h5py or numpy is missing.
--break applies a wrong convention on purpose (the test checks that it is noticed):
    gru-gates       swaps the GRU's r and z gates
    sinusoid-halves sin in the first D/2 columns and cos in the last (instead of interleaved)
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


def read_model(path):
    with h5py.File(path, "r") as f:
        root = {k: attribute(v) for k, v in f.attrs.items()}
        if root.get("format") != "attnlab/model":
            raise FormatProblem(f"{path}: root format is {root.get('format')!r}, not 'attnlab/model'")
        if int(root.get("format_version", 0)) != 2:
            raise FormatProblem(f"{path}: format_version {root.get('format_version')}, this reader knows 2")
        config = {k: attribute(v) for k, v in f["/config"].attrs.items()}
        params = {}
        f["/params"].visititems(
            lambda name, obj: params.__setitem__(name, np.asarray(obj[()], dtype=np.float64))
            if isinstance(obj, h5py.Dataset) else None)
        return str(root["kind"]), config, params


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


def transformer_logits(c, p, batch):
    arch, D, NH, F = c["arch"], c["d_model"], c["heads"], c["d_ff"]
    V, Vs, L = c["tgt_vocab"], c["src_vocab"], c["max_len"]
    pre = c["norm"] == "pre"
    tie = c["tie_embeddings"]
    window = c["attn_window"]

    if arch == "encdec" and tie != "all":
        src_table, tgt_table = p("src_embed/table", (Vs, D)), p("tgt_embed/table", (V, D))
    else:
        rows = V + 1 if arch == "mlm" else V     # mlm: row V is [MASK]
        src_table = tgt_table = p("embed/table", (rows, D))

    def positions(stack):
        if c["pos_encoding"] == "learned":
            return p(f"{stack}/positions/table", (L, D))
        return sinusoid(L, D)

    def embed(table, ids, stack):
        x = table[ids] * np.sqrt(D)
        if arch == "mlm":   # segment 0 everywhere: the batches here have no segments
            x = x + p("segment_embed/table", (2, D))[np.zeros_like(ids)]
        return x + positions(stack)[: ids.shape[1]]

    def norm(x, name):
        return layer_norm(x, p(f"{name}/gamma", (D,)), p(f"{name}/beta", (D,)))

    def sublayer(x, f, norm_name):
        if pre:
            return x + f(norm(x, norm_name))
        return norm(x + f(x), norm_name)

    def ffn(x, name):
        h = np.maximum(linear(x, p(f"{name}/in/W", (F, D)), p(f"{name}/in/b", (F,))), 0.0)
        return linear(h, p(f"{name}/out/W", (D, F)), p(f"{name}/out/b", (D,)))

    def encoder(ids, lengths):
        x = embed(src_table, ids, "encoder")
        S = ids.shape[1]
        vis = visible_keys(lengths, S, S, causal=False, window=window)
        for l in range(c["enc_layers"]):
            n = f"encoder/layer{l}"
            x = sublayer(x, lambda y: multi_head_attention(p, f"{n}/self_attn", y, y, vis, D, NH), f"{n}/norm1")
            x = sublayer(x, lambda y: ffn(y, f"{n}/ffn"), f"{n}/norm2")
        return norm(x, "encoder/final_norm") if pre else x

    def decoder(tgt, tgt_len, memory, src_len):
        B, T = tgt.shape
        fed = np.concatenate([np.full((B, 1), BOS), tgt[:, :-1]], axis=1)   # BOS, y_0 .. y_{T-2}
        x = embed(tgt_table, fed, "decoder")
        vis = visible_keys(tgt_len, T, T, causal=True, window=window)
        cross = None if memory is None else visible_keys(src_len, T, memory.shape[1], causal=False, window=-1)
        for l in range(c["dec_layers"]):
            n = f"decoder/layer{l}"
            x = sublayer(x, lambda y: multi_head_attention(p, f"{n}/self_attn", y, y, vis, D, NH), f"{n}/norm1")
            if memory is not None:
                x = sublayer(x, lambda y: multi_head_attention(p, f"{n}/cross_attn", y, memory, cross, D, NH),
                             f"{n}/norm2")
            x = sublayer(x, lambda y: ffn(y, f"{n}/ffn"), f"{n}/norm3")
        return norm(x, "decoder/final_norm") if pre else x

    if arch == "encdec":
        h = decoder(batch["tgt"], batch["tgt_len"], encoder(batch["src"], batch["src_len"]), batch["src_len"])
    elif arch == "lm":
        h = decoder(batch["tgt"], batch["tgt_len"], None, None)
    elif arch == "mlm":
        h = encoder(batch["src"], batch["src_len"])
    else:
        raise FormatProblem(f"unknown arch {arch!r}")
    if tie == "none":
        return linear(h, p("output/W", (V, D)), p("output/b", (V,))), None
    return h @ tgt_table[:V].T, None


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


# ---- main ------------------------------------------------------------------------------------

def check(model_path, batch_path, tol):
    """Prints the report of one model and batch; returns the exit code (0, 1 or 2)."""
    try:
        kind, config, raw = read_model(model_path)
        p = Params(raw)
        with h5py.File(batch_path, "r") as f:
            batch = {k: f[k][()] for k in f.keys()}
        if kind == "memnet":
            attention, logits = memnet_outputs(config, p, batch)
            p.check_all_used()
            if attention.shape != batch["attention"].shape:
                raise FormatProblem(f"attention of shape {list(attention.shape)}, the batch file has "
                                    f"{list(batch['attention'].shape)}")
            diff = float(np.max(np.abs(attention - batch["attention"])))
            same = bool(np.all(np.argmax(logits, axis=1) == batch["predictions"]))
            ok = diff < tol and same
            print(f"{model_path}: memnet {config['encoding']} {config['tying']} temporal {config['temporal']}: "
                  f"max |attention diff| {diff:.3g} over {list(attention.shape)}, predictions "
                  f"{'the same' if same else 'DIFFER'} (tolerance {tol:g}): {'match' if ok else 'MISMATCH'}")
            return 0 if ok else 1
        if kind == "transformer":
            logits, alignment = transformer_logits(config, p, batch)
            what = f"transformer {config['arch']}"
        elif kind == "seq2seq":
            logits, alignment = seq2seq_logits(config, p, batch)
            what = f"seq2seq {config['cell']} {config['attention_style']} {config['attention']} {config['local']}"
        else:
            raise FormatProblem(f"unknown model kind {kind!r}")
        p.check_all_used()
        if logits.shape != batch["logits"].shape:
            raise FormatProblem(f"logits of shape {list(logits.shape)}, the batch file has {list(batch['logits'].shape)}")
    except (FormatProblem, KeyError) as e:
        print(f"{model_path}: {e}")
        return 2
    diff = float(np.max(np.abs(logits - batch["logits"])))
    line = f"{model_path}: {what}: max |logits diff| {diff:.3g} over {list(logits.shape)}"
    ok = diff < tol
    if alignment is not None and "alignment" in batch:
        adiff = float(np.max(np.abs(alignment - batch["alignment"])))
        line += f", max |alignment diff| {adiff:.3g}"
        ok = ok and adiff < tol
    print(f"{line} (tolerance {tol:g}): {'match' if ok else 'MISMATCH'}")
    return 0 if ok else 1


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("files", nargs="+", metavar="MODEL.h5 BATCH.h5")
    ap.add_argument("--tol", type=float, default=1e-4)
    ap.add_argument("--break", dest="broken", action="append", default=[],
                    choices=["gru-gates", "sinusoid-halves"])
    args = ap.parse_args()
    if len(args.files) % 2:
        ap.error("give pairs of MODEL.h5 BATCH.h5")
    BROKEN.update(args.broken)
    return max(check(m, b, args.tol) for m, b in zip(args.files[::2], args.files[1::2]))


if __name__ == "__main__":
    sys.exit(main())
