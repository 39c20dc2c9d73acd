#!/usr/bin/env python3
"""Writes tests/data/scatter_kymatio.h: reference values of kymatio's Scattering2D for
test_scatter.c, from kymatio itself (https://github.com/kymatio/kymatio, commit 11552ed5).

Run once, by hand (numpy and scipy needed, not by the tests):
    git clone https://github.com/kymatio/kymatio /tmp/kym && git -C /tmp/kym checkout 11552ed5
    python3 tests/data/scatter_kymatio.py /tmp/kym > tests/data/scatter_kymatio.h

Two references:
  1. kymatio's own test data (tests/scattering2d/test_data_2d.npz: J = 4, 32 x 32, L = 8,
     417 channels of 2 x 2): the input x[1, 2] and every 7th output coefficient.
  2. kymatio's numpy frontend on a closed-form 28 x 28 image (J = 2, L = 8: 81 channels
     of 7 x 7), the image formula repeated in test_scatter.c: every 11th coefficient,
     and the Littlewood-Paley sum of kymatio's filter bank on the 36 x 36 grid (min, max).
"""
import io
import math
import sys

import numpy as np

root = sys.argv[1]
sys.path.insert(0, root)
from kymatio.numpy import Scattering2D  # noqa: E402
from kymatio.scattering2d.filter_bank import filter_bank  # noqa: E402


def image28(i, j):
    """The closed-form test image (test_scatter.c image28)."""
    r2 = (i - 13.2) ** 2 + (j - 14.7) ** 2
    return math.exp(-r2 / 40.0) * math.cos(0.9 * i + 0.4 * j) + 0.25 * math.sin(0.31 * i * j / 7.0)


def emit(name, vals, fmt="%.9e"):
    print("static const double %s[%d] = {" % (name, len(vals)))
    for k in range(0, len(vals), 4):
        print("    " + ", ".join(fmt % v for v in vals[k:k + 4]) + ",")
    print("};")


print("/* scatter_kymatio.h -- made by tests/data/scatter_kymatio.py from kymatio commit")
print(" * 11552ed5 (its test data test_data_2d.npz and its numpy frontend); do not edit. */")
with open(root + "/tests/scattering2d/test_data_2d.npz", "rb") as f:
    d = np.load(io.BytesIO(f.read()))
assert int(d["J"]) == 4 and not bool(d["pre_pad"])
x = d["x"][1, 2].astype(np.float64)
S = d["Sx"][1, 2].astype(np.float64).ravel()
emit("kym_npz_x", x.ravel(), "%.9e")
idx = list(range(0, S.size, 7))
print("#define KYM_NPZ_STEP 7")
emit("kym_npz_S", S[idx])

img = np.array([[image28(i, j) for j in range(28)] for i in range(28)])
S28 = Scattering2D(J=2, shape=(28, 28), L=8)(img).ravel()
print("#define KYM_28_STEP 11")
emit("kym_28_S", S28[0::11])

fb = filter_bank(36, 36, 2, 8)
lp = fb["phi"]["levels"][0].astype(np.float64) ** 2
for p in fb["psi"]:
    h = p["levels"][0].astype(np.float64)
    flip = np.roll(h[::-1, ::-1], 1, axis=(0, 1))  # h(-w)
    lp += 0.5 * (h ** 2 + flip ** 2)
print("#define KYM_LP_MIN %.9e" % lp.min())
print("#define KYM_LP_MAX %.9e" % lp.max())
