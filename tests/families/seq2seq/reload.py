"""The RNN seq2seq family's reader for tests/formats/reload.py (which imports it; its docstring
says how a family's module plugs in): rebuilds model files of kind "seq2seq" (any variant) with
numpy, following docs/FORMATS.md.

BATCH.h5:
    /src, /src_len   int32 [B, S], [B]      the source sentences
    /tgt, /tgt_len   int32 [B, T], [B]      the targets, ending with EOS
    /logits          float32 [B, T, V]      teacher-forced logits
    /alignment       float32 [B, T, S]      with attention: the decoder's weights
--break: gru-gates (BREAKS, at the end).
"""

import numpy as np

from reload import BOS, BROKEN, FormatProblem, Params, check_logits, linear, masked_softmax, sigmoid

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


# ---- checks ----------------------------------------------------------------------------------

def check_seq2seq(model, batch, attrs, tol):
    c = model.config
    p = Params(model.params)
    logits, alignment = seq2seq_logits(c, p, batch)
    p.check_all_used()
    return check_logits(model, batch, logits, alignment,
                        f"seq2seq {c['cell']} {c['attention_style']} {c['attention']} {c['local']}", tol)


# ---- what this module reads (tests/formats/reload.py) -------------------------------------------

READERS = {
    "seq2seq": check_seq2seq,
}
BREAKS = {
    "gru-gates": "swaps the GRU's r and z gates",
}
