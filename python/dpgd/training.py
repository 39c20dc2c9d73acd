"""Training from Python: dpgd.train (the run of `dpgd train`) and dpgd.PrivateSum
(private full-batch sums of gradients computed by the caller)."""

import ctypes
import json
import math
import os
import warnings

import numpy as np

from . import _check
from ._lib import Error, PsumParams, c_double_p, c_float_p, call, lib
from .accounting import METHODS, Accountant, _methods


def _value_text(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return repr(v)  # the shortest text that reads back as the same double
    if isinstance(v, (int, str, os.PathLike)):
        return os.fspath(v) if isinstance(v, os.PathLike) else str(v)
    raise Error("config value %r: want a bool, number or string" % (v,))


def _assignments(config):
    """"section.key=value" texts from {"section": {"key": v}} or {"section.key": v}."""
    out = []
    for k, v in config.items():
        if not isinstance(k, str):
            raise Error("config keys must be strings (got %r)" % (k,))
        if isinstance(v, dict):
            for k2, v2 in v.items():
                out.append("%s.%s=%s" % (k, k2, _value_text(v2)))
        else:
            out.append("%s=%s" % (k, _value_text(v)))
    return out


def _config(config, sets):
    c = lib.dpgd_config_alloc()
    if not c:
        raise Error("out of memory", 2)
    try:
        if isinstance(config, dict):
            assigns = _assignments(config)
        elif isinstance(config, (str, bytes, os.PathLike)):
            call(lib.dpgd_config_load, c, os.fsencode(config))
            assigns = []
        else:
            raise Error("config must be a path or a dict (got %s)" % type(config).__name__)
        if isinstance(sets, dict):
            assigns += _assignments(sets)
        elif sets:
            assigns += [str(s) for s in sets]
        for a in assigns:
            call(lib.dpgd_config_set, c, a.encode())
        call(lib.dpgd_config_validate, c)
    except BaseException:
        lib.dpgd_config_free(c)
        raise
    return c


def _run_steps(r, progress):
    """Steps until done; on KeyboardInterrupt a checkpoint of the steps done is written
    (continue with `dpgd train --resume DIR`) and the interrupt goes on."""
    try:
        while not lib.dpgd_run_done(r):
            call(lib.dpgd_run_step, r)
            if progress:
                print("dpgd: step %d done" % lib.dpgd_run_step_index(r), flush=True)
    except KeyboardInterrupt:
        call(lib.dpgd_run_checkpoint, r)
        raise


def train(config, out=None, sets=None, progress=False):
    """Runs the training `dpgd train` runs and returns its summary.json as a dict.

    ``config``: an INI file path (as `dpgd train --config`), or a dict of keys, either
    {"section": {"key": value}} or {"section.key": value}, over the defaults (`dpgd
    train --help` lists every key). ``sets``: overrides as "section.key=value" strings
    or a dict (as --set). ``out``: the run directory (overrides output.dir). The run
    directory gets what `dpgd train` writes (train/RUN_FORMAT.md); points.csv there is
    SENSITIVE. A research-rng run warns that its eps holds only if train.seed has at
    least 128 bits of secret entropy and stays secret (summary.json's "caveat").
    """
    c = _config(config, sets)
    r = ctypes.c_void_p()
    try:
        call(lib.dpgd_run_open, ctypes.byref(r), c,
             None if out is None else os.fsencode(out))
    finally:
        lib.dpgd_config_free(c)
    try:
        _run_steps(r, progress)
        call(lib.dpgd_run_finish, r)
        run_dir = lib.dpgd_run_dir(r).decode()
    finally:
        lib.dpgd_run_free(r)
    with open(os.path.join(run_dir, "summary.json")) as f:
        summary = json.load(f)
    summary.setdefault("run_dir", run_dir)
    if summary.get("caveat"):
        warnings.warn("dpgd: " + summary["caveat"], stacklevel=2)
    return summary


class PrivateSum:
    """Private full-batch gradient sums for a model dpgd does not have.

    Each ``step(grads)`` takes every point's gradient at this step (an (n, dim) array,
    row i = point i; float32, other real dtypes are rounded to float32 first, the
    precision of dpgd's own models), clips row i to the point's cap with the engine's
    proven rule (model/SENSITIVITY.md), sums in double, charges the ledger, adds ONE draw
    of N(0, sigma^2 clip^2 I) and accounts the step: it returns the noisy sum (dim,).
    Full batch only: all n points take part in every step; ``budget`` (B_norm, squared
    norm units) turns on individual filtering (Algorithm 7), None is Algorithm 6.
    ``seed``: research rng (reproducible noise; an integer below 2^256 or its decimal
    or 0x-hex text): the guarantee holds only if the seed has at least 128 bits of
    secret entropy and stays secret (e.g. ``secrets.randbits(128)``; small seeds are
    public); None: secure mode, for anything you will release: the clipped rows are
    summed exactly in integers on a grid and an exact discrete Gaussian from the OS
    CSPRNG is added (docs/MATH.md section 18), proven as it runs; its steps have no
    exact curve, so ask ``epsilon(delta, "rdp_optimal")``.

    The guarantee (``epsilon``, ``account``) holds when row i depends only on point i
    and on public values (the noisy sums released so far, the model), and n is public
    (train/PRIVATE_SUM.md has the derivation and the caller's side of it).
    """

    def __init__(self, n, dim, clip, sigma, budget=None, seed=None):
        p = PsumParams()
        p.n = _check.count("n", n)
        p.dim = _check.count("dim", dim)
        p.clip = _check.real("clip", clip)
        p.sigma = _check.real("sigma", sigma)
        p.budget = math.inf if budget is None else _check.real("budget", budget)
        if budget is not None and not math.isfinite(p.budget):
            raise Error("budget must be finite (None: no filter)")
        p.rng = 1 if seed is None else 0
        if seed is not None:
            ctypes.memmove(p.seed, _check.seed(seed), 32)
        self._s = None
        h = ctypes.c_void_p()
        call(lib.dpgd_psum_open, ctypes.byref(h), ctypes.byref(p))
        self._s = h.value
        self.n, self.dim, self.clip, self.sigma = p.n, p.dim, p.clip, p.sigma
        self.budget = None if budget is None else p.budget

    def __del__(self):
        if getattr(self, "_s", None):
            lib.dpgd_psum_free(self._s)
            self._s = None

    def step(self, grads):
        """One private step; returns the noisy sum (a new float64 array of dim)."""
        g = _check.array("grads", grads, np.float32, (self.n, self.dim))
        out = np.empty(self.dim)
        call(lib.dpgd_psum_step, self._s, g.ctypes.data_as(c_float_p),
             out.ctypes.data_as(c_double_p))
        return out

    @property
    def steps(self):
        return lib.dpgd_psum_steps(self._s)

    def _ledger(self):
        return lib.dpgd_psum_ledger(self._s).contents

    def spent(self):
        """Every point's spend s(i) (sum of its charged squared norms). SENSITIVE."""
        led = self._ledger()
        return np.ctypeslib.as_array(led.spend, shape=(self.n,)).copy()

    @property
    def filter(self):
        """The ledger's individual filter as a dpgd.Filter (GDP, squared-norm units:
        budget B_norm or inf, charges against noise std 1; give unit = sigma * clip to
        its epsilon and report). Owned by this PrivateSum. SENSITIVE per point."""
        from .filter import Filter
        return Filter._borrow(self._ledger().filter, self)

    def active(self):
        """Boolean array of the points still active (s(i) < budget). Diagnostic, not
        private."""
        return self.filter.active()

    def account(self, delta=None, epsilon=None, methods=None):
        """The guarantee of the steps so far under every method (AccountResult)."""
        a = Accountant._borrow(lib.dpgd_psum_accountant(self._s), self)
        return a.account(delta=delta, epsilon=epsilon, methods=methods)

    def epsilon(self, delta, method="exact"):
        """eps at delta of the steps so far: the accountant's upper bound, its numerical
        error bound included (round it up, never down, to show it)."""
        r = self.account(delta=delta, methods=[method])[_methods_name(method)]
        if not r.ok:
            raise Error(r.reason)
        return r.value


def _methods_name(method):
    return METHODS[_methods(method)[0]]
