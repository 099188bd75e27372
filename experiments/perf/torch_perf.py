"""Shared by the PyTorch sides of experiments/perf/*/ (torch_*.py): the benchmark batch and the
timed repetitions with their one line of key=value pairs, as bench/perf_util.hpp has them for
the attnlab side."""
import math
import statistics
import time

import torch

BOS, EOS, PAD = 1, 2, 0


def make_batch(B, L, vocab):
    """Deterministic regular tokens (ids >= 4), all sentences full length, targets ending in
    EOS: src, tgt [B, L], the formula of make_batch in bench/perf_util.hpp."""
    b = torch.arange(B).unsqueeze(1)
    t = torch.arange(L).unsqueeze(0)
    src = 4 + (b * 31 + t * 17) % (vocab - 4)
    tgt = 4 + (b * 13 + t * 29 + 7) % (vocab - 4)
    tgt[:, -1] = EOS
    return src, tgt


def sinusoidal_positions(max_len, d):
    """The sinusoidal position encodings [max_len, d] of attnlab's nn::sinusoidal_encoding
    (Vaswani et al. 2017, sec. 3.5): sin on the even columns, cos on the odd ones, computed in double
    as there."""
    pos = torch.arange(max_len, dtype=torch.float64).unsqueeze(1)
    div = torch.exp(torch.arange(0, d, 2, dtype=torch.float64) * (-math.log(10000.0) / d))
    pe = torch.zeros(max_len, d, dtype=torch.float64)
    pe[:, 0::2] = torch.sin(pos * div)
    pe[:, 1::2] = torch.cos(pos * div)
    return pe.float()


def add_tsmall_args(ap):
    """The options every Transformer twin shares (T-small by default, as bench/perf_transformer.cpp):
    threads, timed and warm-up repetitions, the model's sizes, the batch."""
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--steps", type=int, default=5, help="timed repetitions (median reported)")
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--vocab", type=int, default=8000)
    ap.add_argument("--d-model", type=int, default=256)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--d-ff", type=int, default=1024)
    ap.add_argument("--layers", type=int, default=3)
    ap.add_argument("--dropout", type=float, default=0.1)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--length", type=int, default=24)


def measure(run, *, impl, mode, threads, warmup, steps, tokens, params, unit="tokens", fields=""):
    """Calls run() `warmup` times, then times `steps` calls and prints impl, mode, threads,
    `fields` (more key=value pairs, as given), tokens_per_s (over the median time), median_s,
    min_s, max_s (seconds per call), cpu_tokens_per_s (over the process's median CPU time),
    params and tokens. With unit="sequences" the keys say sequences instead of tokens
    (sequences_per_s, cpu_sequences_per_s, sequences), and ms_per_sequence is added; with
    unit="questions" likewise, with us_per_question; with unit="images", ms_per_image."""
    for _ in range(warmup):
        run()
    times, cpu = [], []
    for _ in range(steps):
        t0, c0 = time.perf_counter(), time.process_time()
        run()
        cpu.append(time.process_time() - c0)
        times.append(time.perf_counter() - t0)
    med = statistics.median(times)
    extra = f" {fields}" if fields else ""
    per_item = {"sequences": f" ms_per_sequence={1e3 * med / tokens:.3f}",
                "questions": f" us_per_question={1e6 * med / tokens:.3f}",
                "images": f" ms_per_image={1e3 * med / tokens:.4f}"}.get(unit, "")
    print(f"impl={impl} mode={mode} threads={threads}{extra} {unit}_per_s={tokens / med:.1f}{per_item} "
          f"median_s={med:.4f} min_s={min(times):.4f} max_s={max(times):.4f} "
          f"cpu_{unit}_per_s={tokens / statistics.median(cpu):.1f} params={params} {unit}={tokens}", flush=True)
