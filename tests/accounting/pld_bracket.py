#!/usr/bin/env python3
"""pld_bracket.py -- an independent cross-check (not a ctest test) of the exact accountant's
Poisson-subsampled Gaussian eps(delta): a numerical privacy-loss distribution, the loss
of each output interval rounded up (pessimistic) or down (optimistic) to a grid of step
H, composed n-fold by FFT, both neighbouring directions. The two roundings bracket the
truth within n*H (up to FFT aliasing and rounding, which this script does not bound).
Needs numpy (Debian: python3-numpy); about 1 GB of memory at H = 1e-6.

  H=1e-6 python3 tests/accounting/pld_bracket.py Q SIGMA DELTA N [N ...]
  e.g. H=1e-6 python3 tests/accounting/pld_bracket.py 0.001 1 1e-5 800 1000
  -> per N: eps of the "remove" and "add" directions, optimistic and pessimistic
     (dpgd account --subsampled q=Q,sigma=SIGMA,count=N --delta DELTA must lie within
     the larger direction's bracket, a little above the optimistic end).
L0 (default -3) and PP (default 16) set the loss window [L0, L0 + PP) of the n-fold sum:
L0 must lie below N log(1 - Q)."""
import math
import os
import sys

import numpy as np

q, sigma, delta = float(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3])
ns = [int(x) for x in sys.argv[4:]]
h = float(os.environ.get("H", "1e-4"))
L0, P = float(os.environ.get("L0", "-3")), float(os.environ.get("PP", "16"))
N = int(round(P / h))
erfc = np.frompyfunc(math.erfc, 1, 1)


def Phi(x):
    return 0.5 * erfc(-x / math.sqrt(2)).astype(float)


o = np.arange(-14.0, 20.0, 1e-4) * sigma


def loss(x):  # log of mixture / N(0, sigma^2) at output x
    return np.log1p(-q + q * np.exp((2 * x - 1) / (2 * sigma**2)))


def pmf(direction, rounding):
    a, b = o[:-1], o[1:]
    if direction == "remove":  # outputs ~ mixture, loss increasing in o: worst at b
        m = (1 - q) * (Phi(b / sigma) - Phi(a / sigma)) + q * (
            Phi((b - 1) / sigma) - Phi((a - 1) / sigma))
        l_hi, l_lo = loss(b), loss(a)
    else:  # outputs ~ N(0, sigma^2), loss = -log(mixture / N) decreasing: worst at a
        m = Phi(b / sigma) - Phi(a / sigma)
        l_hi, l_lo = -loss(a), -loss(b)
    k = np.ceil((l_hi - L0) / h) if rounding == "up" else np.floor((l_lo - L0) / h)
    k = k.astype(np.int64)
    inf = m[k >= N].sum() + (1 - m.sum()) if rounding == "up" else 0.0
    k = np.clip(k, 0, N - 1)
    return np.bincount(k[k < N], weights=m[k < N], minlength=N), inf


def eps_for(p1, inf1, n):
    pn = np.fft.irfft(np.fft.rfft(p1) ** n, N)
    pn[pn < 0] = 0
    lo = n * math.log1p(-q) - 1.0
    l = lo + np.mod(n * L0 + np.arange(N) * h - lo, P)
    dinf = 1 - (1 - inf1) ** n

    def d(e):
        return dinf + np.sum(pn * np.clip(1 - np.exp(e - l), 0, None))

    a, b = 0.0, 50.0
    if d(0) <= delta:
        return 0.0
    for _ in range(60):
        c = 0.5 * (a + b)
        a, b = (c, b) if d(c) > delta else (a, c)
    return b


for n in ns:
    out = []
    for direction in ("remove", "add"):
        lo_e = eps_for(*pmf(direction, "down"), n)
        hi_e = eps_for(*pmf(direction, "up"), n)
        out.append("%s [%.6f, %.6f]" % (direction, lo_e, hi_e))
    print(n, "  ".join(out), flush=True)
