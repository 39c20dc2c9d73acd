#!/usr/bin/env python3
"""bench_opacus.py -- per-epoch time of DP-SGD in dpgd and in Opacus, side by side in one
run on the same machine: the MNIST CNN of Feldman & Zrnic (the Opacus example network,
model/cnn.c), Poisson sampling at q = B/60000, per-example clipping, Gaussian noise.

Usage (from the repository root, after the README's build):
  python3 tests/tools/bench_opacus.py --opacus-src DIR [--threads 1,2] [--batch 256,1024]
                                      [--steps 40] [--reps 3] [--dpgd build/train/dpgd]

DIR holds Opacus' source (the `opacus` package of a release, e.g. v1.4.0, whose code
accepts Debian's python3-torch 1.13); Debian ships no opt_einsum, so a two-operand
stand-in that calls torch.einsum is put on the path (Opacus only contracts two operands,
where opt_einsum's contraction-order search has nothing to choose). Each measurement
times `--steps` steps (after a warm-up step) and scales to an epoch of 1/q steps;
figures are medians over `--reps`. dpgd's time per step is the difference of its own
`nonprivate.wall_s` between a run of 3S and a run of S steps, divided by 2S (S =
`--steps`; no test evaluation, no checkpoints, eps only at the last step), which cancels
what a run does once (the final test evaluation, the run directory's files), less the
difference of the two runs' last eps queries as `dpgd account` times them (at a small
rate one exact query can take a second, and its cost depends on the step count). Opacus is timed
without its accountant. Prints one table; compare within one run, the machines are
shared and noisy.
"""
import argparse
import gzip
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time


def opt_einsum_shim(where):
    d = os.path.join(where, "opt_einsum")
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "__init__.py"), "w") as f:
        f.write("import torch\n\ndef contract(eq, *ops, **kw):\n    return torch.einsum(eq, *ops)\n")
    with open(os.path.join(d, "contract.py"), "w") as f:
        f.write("from . import contract\n")
    return where


def load_mnist(data_dir):
    import numpy as np
    with gzip.open(os.path.join(data_dir, "train-images-idx3-ubyte.gz")) as f:
        x = np.frombuffer(f.read(), np.uint8, offset=16).reshape(-1, 1, 28, 28)
    with gzip.open(os.path.join(data_dir, "train-labels-idx1-ubyte.gz")) as f:
        y = np.frombuffer(f.read(), np.uint8, offset=8)
    x = (x.astype(np.float32) / 255.0 - 0.1307) / 0.3081
    return x, y.astype(np.int64)


def opacus_steps(x, y, q, steps, threads, sigma, clip):
    import torch
    from torch import nn
    from opacus import PrivacyEngine

    torch.set_num_threads(threads)
    torch.manual_seed(1)
    model = nn.Sequential(
        nn.Conv2d(1, 16, 8, 2, padding=3), nn.ReLU(), nn.MaxPool2d(2, 1),
        nn.Conv2d(16, 32, 4, 2), nn.ReLU(), nn.MaxPool2d(2, 1),
        nn.Flatten(), nn.Linear(32 * 4 * 4, 32), nn.ReLU(), nn.Linear(32, 10))
    data = torch.utils.data.TensorDataset(torch.from_numpy(x), torch.from_numpy(y))
    loader = torch.utils.data.DataLoader(data, batch_size=int(round(q * len(x))))
    opt = torch.optim.SGD(model.parameters(), lr=0.5)
    engine = PrivacyEngine(accountant="rdp")
    model, opt, loader = engine.make_private(module=model, optimizer=opt, data_loader=loader,
                                             noise_multiplier=sigma, max_grad_norm=clip,
                                             poisson_sampling=True)
    loss_fn = nn.CrossEntropyLoss()
    it = iter(loader)
    times = []
    for k in range(steps + 1):
        t0 = time.perf_counter()
        xb, yb = next(it)
        opt.zero_grad()
        loss_fn(model(xb), yb).backward()
        opt.step()
        if k:  # the first step warms up
            times.append(time.perf_counter() - t0)
    return sum(times) / len(times)


def dpgd_wall(dpgd, data_dir, q, steps, threads, sigma, clip):
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "run")
        sets = ["model.type=cnn", "train.sampling=poisson", "train.sample_rate=%r" % q,
                "train.steps=%d" % steps, "train.eval_every=0", "train.lr=0.5",
                "privacy.sigma=%r" % sigma, "privacy.clip=%r" % clip,
                "output.checkpoint_every=0", "output.progress=false",
                "output.eps_every=1000000000", "model.threads=%d" % threads,
                "output.dir=" + out, "data.dir=" + data_dir]
        ini = os.path.join(tmp, "bench.ini")
        with open(ini, "w") as f:
            f.write("; dpgd's side of bench_opacus.py: every key is given by --set\n")
        cmd = [dpgd, "train", "--config", ini] + [a for s in sets for a in ("--set", s)]
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        t0 = time.perf_counter()
        subprocess.run([dpgd, "account", "--subsampled", "q=%r,sigma=%r,count=%d" % (q, sigma, steps),
                        "--delta", "1e-5"], check=True, stdout=subprocess.DEVNULL)
        acct = time.perf_counter() - t0
        with open(os.path.join(out, "summary.json")) as f:
            return json.load(f)["nonprivate"]["wall_s"] - acct


def dpgd_steps(dpgd, data_dir, q, steps, threads, sigma, clip):
    short = dpgd_wall(dpgd, data_dir, q, steps, threads, sigma, clip)
    long = dpgd_wall(dpgd, data_dir, q, 3 * steps, threads, sigma, clip)
    return (long - short) / (2 * steps)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--opacus-src", required=True)
    ap.add_argument("--dpgd", default="build/train/dpgd")
    ap.add_argument("--data", default=os.environ.get("DPGD_MNIST_DIR", "data/mnist"))
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--batch", default="256,1024")
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--reps", type=int, default=3)
    a = ap.parse_args()
    sys.path.insert(0, os.path.abspath(a.opacus_src))
    sys.path.insert(0, opt_einsum_shim(tempfile.mkdtemp()))
    x, y = load_mnist(a.data)
    n = len(x)
    print("| batch (expected) | threads | dpgd s/epoch | Opacus s/epoch | Opacus / dpgd |")
    print("| --- | --- | --- | --- | --- |")
    for b in [int(v) for v in a.batch.split(",")]:
        q = b / n
        for t in [int(v) for v in a.threads.split(",")]:
            d = statistics.median(dpgd_steps(a.dpgd, a.data, q, a.steps, t, 1.0, 1.0)
                                  for _ in range(a.reps)) / q
            o = statistics.median(opacus_steps(x, y, q, a.steps, t, 1.0, 1.0)
                                  for _ in range(a.reps)) / q
            print("| %d | %d | %.2f | %.2f | %.1f |" % (b, t, d, o, o / d), flush=True)


if __name__ == "__main__":
    main()
