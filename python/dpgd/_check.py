"""Argument checks shared by the modules: what would crash or silently mislead the C code
(a NaN where a count goes, an array of the wrong shape, a non-number) is refused here
with dpgd.Error; every range the C library checks itself is left to it, so that its
message is the one users see."""

import math
import numbers

from ._lib import Error


def real(name, v):
    """A Python float from a real number (NaN and inf pass: the C code judges them)."""
    if isinstance(v, bool) or not isinstance(v, numbers.Real):
        raise Error("%s must be a real number (got %r)" % (name, v))
    return float(v)


def positive(name, v):
    """A finite real number > 0."""
    x = real(name, v)
    if not (x > 0) or not math.isfinite(x):
        raise Error("%s must be finite and > 0 (got %r)" % (name, v))
    return x


def count(name, v, least=1):
    """An integer >= least that fits in 64 bits."""
    if isinstance(v, bool) or not isinstance(v, numbers.Integral):
        raise Error("%s must be an integer (got %r)" % (name, v))
    v = int(v)
    if v < least or v >= 2**64:
        raise Error("%s must be an integer >= %d (got %d)" % (name, least, v))
    return v


def seed(v):
    """A research seed: an integer in [0, 2^256) (or its text, decimal or 0x-hex), as
    the 32 big-endian bytes of dpgd_seed."""
    if isinstance(v, str):
        try:
            v = int(v, 16) if v[:2] in ("0x", "0X") else int(v, 10)
        except ValueError:
            raise Error("seed must be an integer or its decimal or 0x-hex text (got %r)"
                        % (v,)) from None
    if isinstance(v, bool) or not isinstance(v, numbers.Integral):
        raise Error("seed must be an integer (got %r)" % (v,))
    v = int(v)
    if v < 0 or v >= 2**256:
        raise Error("seed must lie in [0, 2^256) (got %d)" % v)
    return v.to_bytes(32, "big")


def delta(v):
    """delta in (0, 1)."""
    x = real("delta", v)
    if not (0 < x < 1):
        raise Error("delta must lie in (0, 1) (got %r)" % (v,))
    return x


def array(name, a, dtype, shape):
    """A C-contiguous copy-free (when possible) array of dtype with the given shape.

    shape holds ints or None (any length). Non-numeric arrays are refused, other real
    dtypes are converted (float64 -> float32 rounds to nearest), non-contiguous arrays
    are copied."""
    import numpy as np  # only the array-taking parts of the package need numpy
    try:
        arr = np.asarray(a)
    except Exception as e:  # ragged lists and the like
        raise Error("%s: not an array (%s)" % (name, e))
    if arr.dtype.kind not in "biuf":
        raise Error("%s must hold real numbers (dtype %s)" % (name, arr.dtype))
    if arr.ndim != len(shape) or any(s is not None and s != d
                                     for s, d in zip(shape, arr.shape)):
        want = "(" + ", ".join("*" if s is None else str(s) for s in shape) + ")"
        raise Error("%s has shape %s, want %s" % (name, arr.shape, want))
    return np.ascontiguousarray(arr, dtype=dtype)


def reals(name, a):
    """A ctypes array of doubles from a sequence of real numbers, without numpy (a numpy
    array is a sequence too). Non-real entries and nested sequences are refused."""
    import ctypes
    try:
        items = list(a)
    except TypeError:
        raise Error("%s must be a sequence of real numbers (got %r)" % (name, a))
    out = (ctypes.c_double * len(items))()
    for i, v in enumerate(items):
        if hasattr(v, "item") and not hasattr(v, "__len__"):
            v = v.item()  # a numpy scalar
        if isinstance(v, bool) or not isinstance(v, numbers.Real):
            raise Error("%s[%d] must be a real number (got %r)" % (name, i, v))
        out[i] = float(v)
    return out
