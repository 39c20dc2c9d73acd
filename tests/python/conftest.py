"""Shared helpers of the Python tests: the CLI to compare with, and the closed form of
the Gaussian (GDP) privacy curve computed here, independently of libdpgd."""

import json
import math
import os
import subprocess

import pytest

ROOT = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", ".."))


def dpgd_bin():
    b = os.environ.get("DPGD_BIN") or os.path.join(ROOT, "build", "train", "dpgd")
    if not os.path.exists(b):
        pytest.fail("dpgd binary not found at %s (set DPGD_BIN)" % b)
    return b


def cli(*args, check=True):
    """Runs `dpgd ARGS`; returns (exit status, stdout, stderr)."""
    p = subprocess.run([dpgd_bin()] + [str(a) for a in args], capture_output=True,
                       text=True)
    if check and p.returncode != 0:
        pytest.fail("dpgd %s failed: %s" % (" ".join(map(str, args)), p.stderr))
    return p.returncode, p.stdout, p.stderr


def cli_json(*args):
    return json.loads(cli(*args, "--json")[1])


def phi(x):
    return 0.5 * math.erfc(-x / math.sqrt(2.0))


def gdp_delta(mu, eps):
    """delta(eps) of mu-GDP (Dong, Roth & Su 2022, Corollary 2.13; docs/MATH.md
    "The Gaussian curve")."""
    return phi(-eps / mu + mu / 2) - math.exp(eps) * phi(-eps / mu - mu / 2)


def gdp_epsilon(mu, delta):
    """The eps with gdp_delta(mu, eps) = delta, by bisection (delta decreases in eps)."""
    lo, hi = 0.0, 100.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if gdp_delta(mu, mid) > delta:
            lo = mid
        else:
            hi = mid
    return hi


def mnist_dir():
    for d in (os.environ.get("DPGD_MNIST_DIR"), os.environ.get("DPGD_MNIST_DIR_DEFAULT"),
              os.path.join(ROOT, "data", "mnist")):
        if d and any(os.path.exists(os.path.join(d, "train-images-idx3-ubyte" + ext))
                     for ext in (".gz", "")):
            return d
    pytest.fail("MNIST not found (run data/fetch-mnist.sh, or set DPGD_MNIST_DIR)")
