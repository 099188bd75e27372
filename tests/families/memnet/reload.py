"""The memory network family's reader for tests/formats/reload.py (which imports it; its docstring
says how a family's module plugs in): rebuilds model files of kind "memnet" (any encoding and
tying) with numpy, following docs/FORMATS.md.

BATCH.h5:
    /story, /story_len, /question   int32 [B, Ms, Ws], [B], [B, Wq]   a bAbI batch
    /attention       float32 [B, Nhop, Ms]  every hop's attention (0 outside the window)
    /predictions     int32 [B]              the predicted answer ids (compared exactly)
"""

import numpy as np

from reload import Params, max_diff, verdict

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


# ---- checks ----------------------------------------------------------------------------------

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


# ---- what this module reads (tests/formats/reload.py) -------------------------------------------

READERS = {
    "memnet": check_memnet,
}
