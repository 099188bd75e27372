"""The Transformer family's reader for tests/formats/reload.py (which imports it; its docstring
says how a family's module plugs in): rebuilds model files of kind "transformer" (arch encdec, lm,
mlm or cmlm) and "transformer-classifier" (attn-transformer finetune: an lm or mlm body and a linear
head) with numpy, following docs/FORMATS.md.

BATCH.h5 of a Transformer:
    /src, /src_len   int32 [B, S], [B]      encdec, mlm (inputs, [MASK] included)
    /tgt, /tgt_len   int32 [B, T], [B]      encdec, lm (targets ending with EOS)
    /logits          float32 [B, T, V]      teacher-forced logits (mlm: [B, S, V])
For a cmlm, /tgt is what the decoder reads (y with [MASK]s, no EOS), /tgt_len |y|, /logits the
decoder's logits at every position, and /length_logits float32 [B, 2 max_len + 1] the length
predictor's.
For a fine-tuned classifier, rows of a labelled data set (no [CLS], [SEP] or BOS: this reader
adds them as FORMATS.md says):
    /src, /src_len   int32 [B, L], [B]      the tokens of sentence A, then of sentence B
    /segments        integer [B, L]         0 (A) then 1 (B) within src_len; absent: A alone
    /logits          float32 [B, K]         the class logits
or the file `attn-transformer classify` wrote, whose /probabilities (the softmax of the logits)
and /predictions (compared exactly) are checked.
--break: sinusoid-halves, classifier-position, sep-segment (BREAKS, at the end).
"""

import numpy as np

from reload import (BOS, BROKEN, FormatProblem, Params, check_logits, layer_norm, linear, masked_softmax, max_diff,
                    softmax, verdict)


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
        cmlm = self.arch == "cmlm"   # + [MASK] (row V of the target table), + [LENGTH] (of the source table)
        if self.arch in ("encdec", "cmlm") and self.tie != "all":
            self.src_table = p("src_embed/table", (self.Vs + cmlm, D))
            self.tgt_table = p("tgt_embed/table", (self.V + cmlm, D))
            self.length_id = self.Vs
        elif self.arch in ("encdec", "lm", "mlm", "cmlm"):
            rows = self.V + 1 if self.arch == "mlm" else self.V + 2 if cmlm else self.V
            self.src_table = self.tgt_table = p("embed/table", (rows, D))
            self.length_id = self.V + 1
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

    def decoder(self, fed, lengths, memory=None, src_len=None, x=None):
        """The decoder's final states [B, T, D] for the ids it is fed [B, T] (BOS first; cmlm: y
        with [MASK]s), keys j < lengths[b] visible (and j <= i but for cmlm), cross-attending to
        `memory` when given. x: the embedded input when it is not the target table's (cmlm copy)."""
        B, T = fed.shape
        if x is None:
            x = self.embed(self.tgt_table, fed, "decoder")
        vis = visible_keys(lengths, T, T, causal=self.arch != "cmlm", window=self.window)
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
    """The logits of the batch, and a cmlm's length logits (None for the others)."""
    t = Transformer(c, p)
    if t.arch == "cmlm":   # [LENGTH] x, the non-causal decoder on the fed y, the offset classifier at [LENGTH]
        src, src_len = batch["src"], batch["src_len"]
        memory = t.encoder(np.concatenate([np.full((src.shape[0], 1), t.length_id), src], axis=1), src_len + 1)
        fed, tgt_len = batch["tgt"], batch["tgt_len"]
        x = t.embed(t.tgt_table, fed, "decoder")
        if c.get("decoder_inputs", "mask") == "copy":   # a [MASK] reads the uniformly copied source token
            B, T = fed.shape
            copied = np.zeros_like(fed)
            for b in range(B):
                for i in range(tgt_len[b]):
                    copied[b, i] = src[b, i * src_len[b] // tgt_len[b]]
            x = np.where((fed == t.V)[..., None], t.embed(t.src_table, copied, "decoder"), x)
        h = t.decoder(fed, tgt_len, memory, src_len + 1, x)
        C = 2 * t.L + 1
        return t.output(h), linear(memory[:, 0], p("length/W", (C, t.D)), p("length/b", (C,)))
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


# ---- checks ----------------------------------------------------------------------------------

def check_transformer(model, batch, attrs, tol):
    p = Params(model.params)
    logits, lengths = transformer_logits(model.config, p, batch)
    p.check_all_used()
    failed = check_logits(model, batch, logits, None, f"transformer {model.config['arch']}", tol)
    if lengths is not None:
        diff = max_diff(lengths, batch["length_logits"], "length_logits")
        print(f"{model.path}: transformer cmlm: max |length logits diff| {diff:.3g} over {list(lengths.shape)} "
              f"(tolerance {tol:g}): {verdict(diff < tol)}")
        failed = failed or diff >= tol
    return 1 if failed else 0


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


# ---- what this module reads (tests/formats/reload.py) -------------------------------------------

READERS = {
    "transformer": check_transformer,
    "transformer-classifier": check_classifier,
}
BREAKS = {
    "sinusoid-halves": "sin in the first D/2 columns and cos in the last (instead of interleaved)",
    "classifier-position": "the classifier reads the wrong position: lm the one before the last, mlm its final [SEP] "
                           "(instead of the last token, [CLS])",
    "sep-segment": "the mlm classifier's [SEP] after sentence A in segment 1 (instead of 0)",
}
