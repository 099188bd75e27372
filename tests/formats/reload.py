#!/usr/bin/env python3
"""Rebuilds an attnlab model from its HDF5 file with h5py and numpy only and checks its numbers.

    reload.py [--tol 1e-4] [--break CONVENTION] MODEL.h5 BATCH.h5 [MODEL.h5 BATCH.h5 ...]
    reload.py --kinds        prints the model kinds it rebuilds (the root `kind`), one a line

MODEL.h5 is a model file of a kind that a model family's reader rebuilds: every family of the
family list (ATTN_FAMILIES in cmake/Families.cmake) brings its own, tests/families/<family>/reload.py,
whose docstring says which kinds it reads and what their BATCH.h5 holds (today: transformer and
transformer-classifier, seq2seq, memnet, ntm, captioner). Nothing of attnlab is imported: the
model is rebuilt from the file's /config, /params (and /buffers) alone, following docs/FORMATS.md,
which is what this script tests.

BATCH.h5 holds a batch as the model reads it and what attnlab computed on it (or what a tool wrote
for it). It may also be a model file one training step after MODEL.h5 (the same kind, /state step
plus one), trained on its whole training split (its /config data, read from the working
directory) in one batch: the family's step check then tests its training conventions. Every
position is compared, padded ones included (their values are defined too).

Prints one line per pair (the largest differences) and exits 0 when every difference is below
the tolerance, 1 when one is not, 2 on a file that does not fit (or a family list or family
module that does not), 77 when h5py or numpy is missing. --break applies a wrong convention on
purpose (the tests check that it is noticed); the families declare them and --help lists them.

This file holds what the families share: reading a file (read_file, attribute, Model), the
parameter bookkeeping (Params: a parameter no reader looked up is a FormatProblem), the numpy
pieces several families use (linear, layer_norm, sigmoid, softmax, masked_softmax, attnlab's
random stream Philox), the comparisons (max_diff, verdict, check_logits), train_split, --break
(the set BROKEN), --kinds and the command line. A family's module plugs in so:
  - it is tests/families/<family>/reload.py for a <family> of ATTN_FAMILIES, read from the
    `set(ATTN_FAMILIES ...)` line of cmake/Families.cmake two folders above this file; the modules
    are imported in the order of that list. A family without one reads no kind (and the test that
    --kinds covers the library's registry fails for it);
  - it imports what it shares from this file as the module `reload` (`from reload import Params,
    linear, ...`; run as a script, this file is also registered under that name, so the driver
    and every module share one BROKEN and one FormatProblem) and numpy as np, nothing of attnlab;
  - it declares, at module level:
        READERS      {root kind: check(model, batch, attrs, tol)}   the kinds it rebuilds
        STEP_CHECKS  {root kind: check(before, after, tol)}         optional: a training step's check
        BREAKS       {name: the wrong convention}                   optional: its --break names,
                                                                    which its code tests as
                                                                    `name in BROKEN`
    model, before and after are Model objects, batch and attrs what read_file returns for BATCH.h5,
    tol the tolerance. A check prints one line ending with verdict(ok) and returns 0 (match) or 1,
    and raises FormatProblem (or KeyError) on a file that does not fit;
  - a kind, step check or break name declared by two modules is an error.
"""
import argparse
import importlib.util
import pathlib
import re
import sys

try:
    import h5py
    import numpy as np
except ImportError:
    sys.exit(77)

# Run as a script, this module is __main__: the family modules import it as `reload` and must get
# this very module, not a second copy with a BROKEN and a FormatProblem of its own.
sys.modules.setdefault("reload", sys.modules[__name__])


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


def softmax(x, axis=-1):
    e = np.exp(x - x.max(axis, keepdims=True))
    return e / e.sum(axis, keepdims=True)


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


# ---- comparing ---------------------------------------------------------------------------------

def max_diff(ours, theirs, what):
    """max |ours - theirs| over arrays of the same shape (a FormatProblem otherwise)."""
    theirs = np.asarray(theirs, dtype=np.float64)
    if ours.shape != theirs.shape:
        raise FormatProblem(f"{what} of shape {list(ours.shape)}, the file has {list(theirs.shape)}")
    return float(np.max(np.abs(ours - theirs))) if ours.size else 0.0


def verdict(ok):
    return "match" if ok else "MISMATCH"


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


def train_split(after, names):
    """The datasets `names` of /train of the data set that the model `after` was trained on
    (its /config data, a path relative to the working directory)."""
    with h5py.File(after.config["data"], "r") as f:
        return {n: f[f"/train/{n}"][()] for n in names}


# ---- the families' readers ---------------------------------------------------------------------

SOURCE_DIR = pathlib.Path(__file__).resolve().parents[2]   # tests/formats/reload.py -> the source tree

# What the family modules declare, merged by load_families() in the order of the family list.
READERS = {}       # root kind -> check(model, batch, attrs, tol)
STEP_CHECKS = {}   # root kind -> check(before, after, tol): a model file and the one a step later
BREAKS = {}        # --break name -> the wrong convention it applies


def family_list(source_dir=SOURCE_DIR):
    """The model families of the `set(ATTN_FAMILIES ...)` line of cmake/Families.cmake, in order."""
    path = source_dir / "cmake" / "Families.cmake"
    try:
        text = path.read_text()
    except OSError as e:
        raise FormatProblem(f"{path}: {e.strerror}: no family list")
    m = re.search(r"^\s*set\(\s*ATTN_FAMILIES\b([^)]*)\)", text, re.MULTILINE)
    if not m or not m.group(1).split():
        raise FormatProblem(f"{path}: no set(ATTN_FAMILIES ...) line naming the families")
    return m.group(1).split()


def load_families(source_dir=SOURCE_DIR):
    """Imports tests/families/<family>/reload.py of every family of the list that has one and
    merges its READERS, STEP_CHECKS and BREAKS into this module's."""
    declared = {}   # (table, key) -> the module that declared it
    sys.dont_write_bytecode = True   # no __pycache__ in the source tree: the tests run from it
    for family in family_list(source_dir):
        path = source_dir / "tests" / "families" / family / "reload.py"
        if not path.is_file():
            continue   # a family without a reader: none of its kinds is listed
        spec = importlib.util.spec_from_file_location("attn_reload_" + re.sub(r"\W", "_", family), path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        spec.loader.exec_module(module)
        if not isinstance(getattr(module, "READERS", None), dict) or not module.READERS:
            raise FormatProblem(f"{path}: no READERS {{root kind: check}}")
        for name, table in (("READERS", READERS), ("STEP_CHECKS", STEP_CHECKS), ("BREAKS", BREAKS)):
            for key, value in getattr(module, name, {}).items():
                if (name, key) in declared:
                    raise FormatProblem(f"{path} and {declared[name, key]} both declare {name} {key!r}")
                declared[name, key] = path
                table[key] = value


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


def main():
    try:
        load_families()
    except FormatProblem as e:
        print(f"{sys.argv[0]}: {e}", file=sys.stderr)
        return 2
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="kinds: " + ", ".join(READERS) + "\n--break conventions:\n" +
                                 "\n".join(f"  {k:20} {v}" for k, v in BREAKS.items()))
    ap.add_argument("files", nargs="*", metavar="MODEL.h5 BATCH.h5")
    ap.add_argument("--tol", type=float, default=1e-4)
    ap.add_argument("--break", dest="broken", action="append", default=[], choices=list(BREAKS),
                    metavar="CONVENTION", help="apply a wrong convention on purpose (listed below)")
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
