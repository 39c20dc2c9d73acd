#!/usr/bin/env python3
"""bench_opacus.py -- per-epoch time of DP-SGD in dpgd, Opacus and a functorch DP-SGD step,
side by side in one run on the same machine: the MNIST CNN of Feldman & Zrnic (the Opacus
example network, model/cnn.c), Poisson sampling at q = B/60000, per-example clipping,
Gaussian noise.

Usage (from the repository root, after the README's build):
  python3 tests/tools/bench_opacus.py --opacus-src DIR [--threads 1,2] [--batch 256,1024]
          [--steps 40] [--reps 3] [--dpgd build/train/dpgd] [--peers opacus,functorch]
          [--full] [--full-steps 4]

Every measurement runs in its own process whose thread count is fixed before torch loads
(OMP_NUM_THREADS, OPENBLAS_NUM_THREADS, MKL_NUM_THREADS and torch.set_num_threads:
set_num_threads alone does not reach Debian torch's OpenBLAS pool). With more than one
thread, each peer is timed with OMP_WAIT_POLICY active and passive (its OpenMP threads
spin-wait by default, which collapses on a shared machine) and the faster is reported,
with the policy. CPU time (user + system, from wait4) and peak RSS are per process.
Each peer is also timed with jemalloc preloaded (no decay; --peer-malloc), the faster
reported: with glibc's allocator Opacus page-faults its per-sample gradients back in
every step. The functorch step is written as its documentation shows (vmap of grad over a
functional call of the model; torch.func on torch >= 2, functorch on Debian's 1.13).

DIR holds Opacus' source (the `opacus` package of a release, e.g. v1.4.0, whose code
accepts Debian's python3-torch 1.13); Debian ships no opt_einsum, so a two-operand
stand-in that calls torch.einsum is put on the path (Opacus only contracts two operands,
where opt_einsum's contraction-order search has nothing to choose). Each measurement
times `--steps` steps (after a warm-up step) and scales to an epoch of 1/q steps;
figures are medians over `--reps` rounds, each round timing dpgd and every peer once,
in an order reversed every other round. dpgd's time per step is the difference of its own
`nonprivate.wall_s` between a run of 3S and a run of S steps, divided by 2S (S =
`--steps`; no test evaluation, no checkpoints, eps only at the last step), which cancels
what a run does once (the final test evaluation, the run directory's files), less the
difference of the two runs' last eps queries as `dpgd account` times them (at a small
rate one exact query can take a second, and its cost depends on the step count). Opacus is timed
without its accountant. Prints one table; compare within one run, the machines are
shared and noisy.

With --full, the table also has full-batch rows (batch 60000, every step over the whole
training set, one noise draw per step): dpgd with train.sampling = full, timed the same
way (runs of 3S and S steps, S = --full-steps), its pass against the same run's sgemm
(`dpgd bench grads`, pass / sgemm ratio); Opacus over physical batches of 1000 whose
clipped per-sample gradients it accumulates (DPOptimizer.signal_skip_step, as its
BatchMemoryManager does) before one noise draw and step; functorch the same, chunk by
chunk.
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


def cnn(torch):
    from torch import nn
    torch.manual_seed(1)
    return nn.Sequential(
        nn.Conv2d(1, 16, 8, 2, padding=3), nn.ReLU(), nn.MaxPool2d(2, 1),
        nn.Conv2d(16, 32, 4, 2), nn.ReLU(), nn.MaxPool2d(2, 1),
        nn.Flatten(), nn.Linear(32 * 4 * 4, 32), nn.ReLU(), nn.Linear(32, 10))


def timed(steps, step):
    times = []
    for k in range(steps + 1):
        t0 = time.perf_counter()
        step()
        if k:  # the first step warms up
            times.append(time.perf_counter() - t0)
    return sum(times) / len(times)


def opacus_private(x, y, batch, poisson, threads, sigma, clip):
    """The CNN, its SGD optimizer and a loader of `batch`, made private by Opacus."""
    import torch
    from torch import nn
    from opacus import PrivacyEngine

    torch.set_num_threads(threads)
    model = cnn(torch)
    data = torch.utils.data.TensorDataset(torch.from_numpy(x), torch.from_numpy(y))
    loader = torch.utils.data.DataLoader(data, batch_size=batch)
    opt = torch.optim.SGD(model.parameters(), lr=0.5)
    engine = PrivacyEngine(accountant="rdp")
    model, opt, loader = engine.make_private(module=model, optimizer=opt, data_loader=loader,
                                             noise_multiplier=sigma, max_grad_norm=clip,
                                             poisson_sampling=poisson)
    return model, opt, loader, nn.CrossEntropyLoss()


def opacus_steps(x, y, q, steps, threads, sigma, clip):
    model, opt, loader, loss_fn = opacus_private(x, y, int(round(q * len(x))), True, threads,
                                                 sigma, clip)
    # Opacus' Poisson loader yields about 1/q batches per pass (58 at q = 1024/60000), fewer
    # than the timed steps: a new pass starts when one ends, as a training loop does.
    state = {"it": iter(loader)}

    def step():
        try:
            xb, yb = next(state["it"])
        except StopIteration:
            state["it"] = iter(loader)
            xb, yb = next(state["it"])
        opt.zero_grad()
        loss_fn(model(xb), yb).backward()
        opt.step()
    return timed(steps, step)


PHYS = 1000  # the peers' physical batch in a full-batch step


def opacus_full(x, y, steps, threads, sigma, clip):
    """Seconds per full-batch step: every physical batch's clipped per-sample gradients
    accumulated, then one noise draw and one optimizer step."""
    model, opt, loader, loss_fn = opacus_private(x, y, PHYS, False, threads, sigma, clip)
    last = (len(x) + PHYS - 1) // PHYS - 1

    def step():
        for k, (xb, yb) in enumerate(loader):
            opt.zero_grad()
            loss_fn(model(xb), yb).backward()
            opt.signal_skip_step(do_skip=k < last)
            opt.step()
    return timed(steps, step)


def functorch_setup(torch, x, y):
    """The functorch per-example gradient function and the model's parameters."""
    import torch.nn.functional as F
    model = cnn(torch)
    try:  # torch >= 2
        from torch.func import functional_call, grad, vmap
        params = {k: v.detach() for k, v in model.named_parameters()}

        def fwd(p, xb):
            return functional_call(model, p, (xb,))
    except ImportError:  # Debian's torch 1.13
        from functorch import grad, make_functional, vmap
        fmodel, plist = make_functional(model)
        params = {str(i): v.detach() for i, v in enumerate(plist)}

        def fwd(p, xb):
            return fmodel(tuple(p[str(i)] for i in range(len(p))), xb)

    def loss_one(p, xi, yi):
        return F.cross_entropy(fwd(p, xi.unsqueeze(0)), yi.unsqueeze(0))
    return vmap(grad(loss_one), in_dims=(None, 0, 0)), params


def clipped_sum(torch, per_example, params, xb, yb, clip):
    g = per_example(params, xb, yb)
    sq = sum(v.flatten(1).pow(2).sum(1) for v in g.values())
    factor = (clip / (sq.sqrt() + 1e-6)).clamp(max=1.0)
    return {k: torch.einsum("i,i...->...", factor, v) for k, v in g.items()}


def functorch_full(x, y, steps, threads, sigma, clip):
    import torch
    torch.set_num_threads(threads)
    per_example, params = functorch_setup(torch, x, y)
    xt, yt = torch.from_numpy(x), torch.from_numpy(y)
    n, lr = len(xt), 0.5

    def step():
        acc = {k: torch.zeros_like(v) for k, v in params.items()}
        for i in range(0, n, PHYS):
            for k, v in clipped_sum(torch, per_example, params, xt[i:i + PHYS], yt[i:i + PHYS],
                                    clip).items():
                acc[k] += v
        for k, s in acc.items():
            s += sigma * clip * torch.randn_like(s)
            params[k] -= lr * s / n
    with torch.no_grad():
        return timed(steps, step)


def functorch_steps(x, y, q, steps, threads, sigma, clip):
    import torch
    torch.set_num_threads(threads)
    per_example, params = functorch_setup(torch, x, y)
    xt, yt = torch.from_numpy(x), torch.from_numpy(y)
    n, lr = len(xt), 0.5

    def step():
        idx = (torch.rand(n) < q).nonzero().squeeze(1)
        for k, s in clipped_sum(torch, per_example, params, xt[idx], yt[idx], clip).items():
            s += sigma * clip * torch.randn_like(s)
            params[k] -= lr * s / (q * n)
    with torch.no_grad():
        return timed(steps, step)


PEERS = {"opacus": opacus_steps, "functorch": functorch_steps}
PEERS_FULL = {"opacus": opacus_full, "functorch": functorch_full}


def child(a):
    """One peer measurement in this process (thread count fixed by the parent's env)."""
    if a.child == "opacus":
        sys.path.insert(0, os.path.abspath(a.opacus_src))
        sys.path.insert(0, opt_einsum_shim(tempfile.mkdtemp()))
    x, y = load_mnist(a.data)
    if a.q >= 1:
        t = PEERS_FULL[a.child](x, y, a.steps, a.threads_one, 1.0, 1.0)
    else:
        t = PEERS[a.child](x, y, a.q, a.steps, a.threads_one, 1.0, 1.0)
    print(json.dumps({"s_per_step": t}))


JEMALLOC = "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2"


def thread_env(threads, policy=None, malloc=None):
    env = dict(os.environ)
    for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        env[k] = str(threads)
    if policy:
        env["OMP_WAIT_POLICY"] = policy
    if malloc == "jemalloc":
        # Opacus allocates and zeroes new per-sample gradient tensors every step; glibc
        # returns such large blocks to the kernel at once, so every step page-faults them
        # back in (seen: 5x slower steps, mostly system time). jemalloc without decay keeps
        # the pages, which is how a tuned PyTorch deployment runs.
        env["LD_PRELOAD"] = JEMALLOC
        env["MALLOC_CONF"] = "background_thread:false,dirty_decay_ms:-1,muzzy_decay_ms:-1"
    return env


def run_measured(cmd, env):
    """Runs cmd; returns (stdout, peak RSS in MB, CPU seconds) of that process."""
    with tempfile.TemporaryFile() as err:
        p = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=err)
        out = p.stdout.read()
        _, status, ru = os.wait4(p.pid, 0)
        p.returncode = os.waitstatus_to_exitcode(status)
        if p.returncode:
            err.seek(0)
            tail = err.read().decode(errors="replace").strip().splitlines()[-3:]
            raise RuntimeError("%s failed (exit %d): %s" % (cmd[:4], p.returncode, " | ".join(tail)))
    return out, ru.ru_maxrss / 1024.0, ru.ru_utime + ru.ru_stime


def peer_once(a, peer, q, threads, steps, setting):
    """Seconds per step and peak RSS of one measured child process."""
    cmd = [sys.executable, os.path.abspath(__file__), "--child", peer, "--q", repr(q),
           "--threads-one", str(threads), "--steps", str(steps), "--data", a.data,
           "--opacus-src", a.opacus_src or ""]
    out, rss, _ = run_measured(cmd, thread_env(threads, *setting))
    return json.loads(out)["s_per_step"], rss


def best_policy(samples):
    """samples: {setting: [(s, rss), ...]} -> (median s, max RSS, setting) of the fastest."""
    got = [(statistics.median(r[0] for r in v), max(r[1] for r in v), k) for k, v in samples.items()]
    return min(got, key=lambda g: g[0])


def dpgd_wall(dpgd, data_dir, q, steps, threads, sigma, clip):
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "run")
        sampling = (["train.sampling=full"] if q >= 1 else
                    ["train.sampling=poisson", "train.sample_rate=%r" % q])
        sets = ["model.type=cnn"] + sampling + ["train.steps=%d" % steps, "train.eval_every=0", "train.lr=0.5",
                "privacy.sigma=%r" % sigma, "privacy.clip=%r" % clip,
                "output.checkpoint_every=0", "output.progress=false",
                "output.eps_every=1000000000", "model.threads=%d" % threads,
                "output.dir=" + out, "data.dir=" + data_dir]
        ini = os.path.join(tmp, "bench.ini")
        with open(ini, "w") as f:
            f.write("; dpgd's side of bench_opacus.py: every key is given by --set\n")
        cmd = [dpgd, "train", "--config", ini] + [a for s in sets for a in ("--set", s)]
        _, rss, cpu = run_measured(cmd, thread_env(threads))
        t0 = time.perf_counter()
        mech = (["--gaussian", "sigma=%r,count=%d" % (sigma, steps)] if q >= 1 else
                ["--subsampled", "q=%r,sigma=%r,count=%d" % (q, sigma, steps)])
        subprocess.run([dpgd, "account"] + mech + ["--delta", "1e-5"], check=True,
                       stdout=subprocess.DEVNULL)
        acct = time.perf_counter() - t0
        with open(os.path.join(out, "summary.json")) as f:
            return json.load(f)["nonprivate"]["wall_s"] - acct, cpu - acct, rss


def dpgd_steps(dpgd, data_dir, q, steps, threads, sigma, clip):
    """Seconds per step (wall, and CPU of the process) and the longer run's peak RSS."""
    short = dpgd_wall(dpgd, data_dir, q, steps, threads, sigma, clip)
    long = dpgd_wall(dpgd, data_dir, q, 3 * steps, threads, sigma, clip)
    return ((long[0] - short[0]) / (2 * steps), (long[1] - short[1]) / (2 * steps), long[2])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--opacus-src")
    ap.add_argument("--dpgd", default="build/train/dpgd")
    ap.add_argument("--data", default=os.environ.get("DPGD_MNIST_DIR", "data/mnist"))
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--batch", default="256,1024")
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--peers", default="opacus,functorch")
    ap.add_argument("--full", action="store_true",
                    help="add full-batch rows (one step over all 60000) and the pass/sgemm ratio")
    ap.add_argument("--full-steps", type=int, default=4)
    ap.add_argument("--peer-malloc", default="glibc,jemalloc" if os.path.exists(JEMALLOC) else "glibc",
                    help="allocators to time the peers with, the fastest reported: glibc, "
                         "jemalloc (" + JEMALLOC + ", no decay)")
    ap.add_argument("--child", choices=sorted(PEERS), help=argparse.SUPPRESS)
    ap.add_argument("--q", type=float, help=argparse.SUPPRESS)
    ap.add_argument("--threads-one", type=int, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        return child(a)
    peers = [p for p in a.peers.split(",") if p]
    if "opacus" in peers and not a.opacus_src:
        ap.error("--opacus-src DIR is needed to time Opacus (or --peers functorch)")
    n = 60000
    head = "| batch (expected) | threads | dpgd s/epoch (CPU s) | dpgd RSS MB |"
    for p in peers:
        head += " %s s/epoch (wait policy, allocator) | %s RSS MB | %s / dpgd |" % (p, p, p)
    print(head)
    print("|" + " --- |" * (4 + 3 * len(peers)))
    batches = [int(v) for v in a.batch.split(",") if v] + ([n] if a.full else [])
    for b in batches:
        q, steps = b / n, a.full_steps if b == n else a.steps
        for t in [int(v) for v in a.threads.split(",")]:
            # One round = one dpgd measurement and one of each peer (each wait policy);
            # the order is reversed every other round, so drifts in load hit both sides.
            jobs = [("dpgd", None)] + [(p, (pol, m)) for p in peers
                                       for pol in (["active", "passive"] if t > 1 else [None])
                                       for m in a.peer_malloc.split(",")]
            runs, samples = [], {p: {} for p in peers}
            for r in range(a.reps):
                for who, pol in (jobs if r % 2 == 0 else jobs[::-1]):
                    if who == "dpgd":
                        runs.append(dpgd_steps(a.dpgd, a.data, q, steps, t, 1.0, 1.0))
                    else:
                        samples[who].setdefault(pol, []).append(
                            peer_once(a, who, q, t, steps, pol))
            d = statistics.median(r[0] for r in runs) / q
            row = "| %s | %d | %.2f (%.2f) | %.0f |" % (
                "full" if b == n else b, t, d, statistics.median(r[1] for r in runs) / q,
                max(r[2] for r in runs))
            for p in peers:
                s, rss, (policy, m) = best_policy(samples[p])
                row += " %.2f (%s) | %.0f | %.1f |" % (s / q, ", ".join(filter(None, (policy, m))),
                                                     rss, s / q / d)
            print(row, flush=True)
    if a.full:
        print()
        print("| threads | dpgd CNN pass s (bench grads) | sgemm GFLOP/s | pass / sgemm |")
        print("| --- | --- | --- | --- |")
        for t in [int(v) for v in a.threads.split(",")]:
            out, _, _ = run_measured([a.dpgd, "bench", "grads", "--model", "cnn", "--threads",
                                      str(t), "--reps", str(max(a.reps, 3)), "--data", a.data,
                                      "--batch", "0"], thread_env(t))
            kv = {}
            for line in out.decode().splitlines():
                if line.startswith("bench grads "):
                    kv = dict(w.split("=", 1) for w in line.split()[2:])
            print("| %d | %s | %s | %s |" % (t, kv.get("s_per_pass"), kv.get("sgemm_gflops"),
                                            kv.get("ratio")), flush=True)

if __name__ == "__main__":
    main()
