"""How well can the captioner's training digits teach a classifier? A per-digit reference for the
goal "98% sequence accuracy on 3-digit strips", which needs about 0.98^(1/3) = 99.33% per digit.

attn-data mnist-strips splits the 10,000 MNIST test digits by image index (i mod 10: 0-7 train,
8 valid, 9 test), so every strip model learns from the same 8,000 digit images. This script
trains a plain convolutional classifier (PyTorch, standard nn modules) on exactly those 8,000
digits, with the same random affine warp as `--warp-rotate 10 --warp-scale 0.1 --warp-shear 0.2`
(drawn per image and epoch here, once per strip there), chooses the epoch on the 1,000
validation digits, and reports test accuracy on the 1,000 test digits, per seed, with the 3-digit
strip accuracy it would give if the three digits were read independently (accuracy cubed).
`--elastic ALPHA` adds the elastic distortion of `--warp-elastic ALPHA --warp-elastic-sigma S`
(Simard et al. 2003; uniform offsets smoothed by a Gaussian of S pixels, zero beyond the image,
times ALPHA pixels) to the affine map.

usage: digit_ceiling.py MNIST_DIR [--seeds 1 2 3] [--epochs 30] [--threads 2] [--width 32]
                        [--elastic ALPHA] [--elastic-sigma S]
"""
import argparse
import gzip
import math
import os
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


def read_idx(path):
    with gzip.open(path, "rb") as f:
        data = f.read()
    magic = int.from_bytes(data[0:4], "big")
    dims = [int.from_bytes(data[4 + 4 * k:8 + 4 * k], "big") for k in range(magic & 0xFF)]
    return np.frombuffer(data, np.uint8, offset=4 + 4 * len(dims)).reshape(dims)


def splits(mnist_dir):
    images = read_idx(os.path.join(mnist_dir, "t10k-images-idx3-ubyte.gz")).astype(np.float32) / 255.0
    labels = read_idx(os.path.join(mnist_dir, "t10k-labels-idx1-ubyte.gz")).astype(np.int64)
    r = np.arange(len(labels)) % 10   # datasets/src/mnist_strips.cpp, mnist_pool
    pick = {"train": r < 8, "valid": r == 8, "test": r == 9}
    return {k: (torch.from_numpy(images[m])[:, None], torch.from_numpy(labels[m])) for k, m in pick.items()}


def elastic_offsets(n, size, alpha, sigma, gen):
    """Simard et al.'s displacement fields [n, size, size, 2] (x, y) in pixels."""
    radius = math.ceil(3 * sigma)
    k = torch.exp(-0.5 * (torch.arange(-radius, radius + 1, dtype=torch.float32) / sigma) ** 2)
    k = (k / k.sum()).repeat(2, 1, 1, 1)   # one kernel per field, as a depthwise convolution
    f = torch.rand(n, 2, size, size, generator=gen) * 2 - 1
    f = F.conv2d(f, k.view(2, 1, 1, -1), padding=(0, radius), groups=2)   # along rows
    f = F.conv2d(f, k.view(2, 1, -1, 1), padding=(radius, 0), groups=2)   # along columns
    return alpha * f.permute(0, 2, 3, 1)


def warp(x, gen, rotate=10.0, scale=0.1, shear=0.2, elastic=0.0, elastic_sigma=4.0):
    """A random affine map per image about its centre: rotation, isotropic scale, x-shear; and
    with elastic > 0, an elastic displacement on top."""
    n = x.shape[0]
    u = lambda: torch.rand(n, generator=gen) * 2 - 1
    a, s, h = u() * math.radians(rotate), 1 + u() * scale, u() * shear
    cos, sin = torch.cos(a), torch.sin(a)
    # affine_grid samples: the map from output to input coordinates (random either way).
    m = torch.stack([torch.stack([cos, -sin + h * cos, torch.zeros(n)], 1),
                     torch.stack([sin, cos + h * sin, torch.zeros(n)], 1)], 1) / s[:, None, None]
    grid = F.affine_grid(m, x.shape, align_corners=False)
    if elastic > 0:   # pixels to grid_sample's [-1, 1] coordinates: 2 / size per pixel
        grid = grid + elastic_offsets(n, x.shape[-1], elastic, elastic_sigma, gen) * (2 / x.shape[-1])
    return F.grid_sample(x, grid, mode="bilinear", padding_mode="zeros", align_corners=False)


def classifier(width):
    w = width
    block = lambda i, o: [nn.Conv2d(i, o, 3, padding=1), nn.BatchNorm2d(o), nn.ReLU()]
    return nn.Sequential(*block(1, w), *block(w, w), nn.MaxPool2d(2),
                         *block(w, 2 * w), *block(2 * w, 2 * w), nn.MaxPool2d(2),
                         *block(2 * w, 4 * w), nn.MaxPool2d(2), nn.Flatten(),
                         nn.Dropout(0.3), nn.Linear(4 * w * 9, 10))


def accuracy(model, x, y):
    model.eval()
    with torch.no_grad():
        return (model(x).argmax(1) == y).float().mean().item()


def run(data, seed, epochs, width, elastic, elastic_sigma):
    torch.manual_seed(seed)
    gen = torch.Generator().manual_seed(seed)
    model = classifier(width)
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, epochs)
    x, y = data["train"]
    best = (-1.0, 0, 0.0)
    for epoch in range(1, epochs + 1):
        model.train()
        order = torch.randperm(len(y), generator=gen)
        for i in range(0, len(y), 64):
            idx = order[i:i + 64]
            loss = F.cross_entropy(model(warp(x[idx], gen, elastic=elastic, elastic_sigma=elastic_sigma)), y[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
        sched.step()
        valid = accuracy(model, *data["valid"])
        if valid > best[0]:
            best = (valid, epoch, accuracy(model, *data["test"]))
    return best, sum(p.numel() for p in model.parameters())


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("mnist_dir")
    ap.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    ap.add_argument("--epochs", type=int, default=30)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--width", type=int, default=32)
    ap.add_argument("--elastic", type=float, default=0.0)
    ap.add_argument("--elastic-sigma", type=float, default=4.0)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    data = splits(a.mnist_dir)
    print(f"train {len(data['train'][1])}, valid {len(data['valid'][1])}, test {len(data['test'][1])} digits")
    print("| seed | epoch (by valid) | valid acc. | test acc. | test acc.^3 (3 digits) | seconds |")
    print("|---|---|---|---|---|---|")
    tests = []
    for seed in a.seeds:
        t0 = time.time()
        (valid, epoch, test), params = run(data, seed, a.epochs, a.width, a.elastic, a.elastic_sigma)
        tests.append(test)
        print(f"| {seed} | {epoch} | {100 * valid:.1f} | {100 * test:.1f} | {100 * test ** 3:.1f} | "
              f"{time.time() - t0:.0f} |", flush=True)
    med = float(np.median(tests))
    print(f"| **median** | | | **{100 * med:.1f}** | **{100 * med ** 3:.1f}** | |")
    print(f"classifier: {params} parameters, width {a.width}, {a.epochs} epochs, elastic {a.elastic} "
          f"(sigma {a.elastic_sigma})")


if __name__ == "__main__":
    main()
