"""The accountant: mechanisms, dpgd.account and dpgd.calibrate.

Each mechanism object is a description; its numbers are computed by libdpgd's accountant
(accounting/dpgd_accounting.h) exactly as `dpgd account` computes them, including the
conversion of a scale and a sensitivity into the mechanism's ratio (mu = sensitivity /
sigma in double), so that the same question gives the same bits.
"""

import ctypes
import time

from . import _check
from ._lib import AcctValue, Error, c_double_p, call, lib, round_up

__all__ = ["METHODS", "Gaussian", "Laplace", "RandomizedResponse", "Discrete",
           "Subsampled", "WorGaussian", "WorLaplace", "Accountant", "account",
           "calibrate", "AccountResult", "CalibrationResult", "MethodResult"]

#: The accounting methods in dpgd's order (dpgd_acct_method).
METHODS = tuple(lib.dpgd_acct_method_name(m).decode() for m in range(5))

_RELATIONS = {"add-remove": 0, "replace-one": 1}


class Mechanism:
    """A mechanism composed `count` times. ``m * k`` composes it k times more."""

    def __init__(self, count):
        self.count = _check.count("count", count)

    def __mul__(self, k):
        import copy
        out = copy.copy(self)
        out.count = _check.count("count", self.count * _check.count("factor", k))
        return out

    __rmul__ = __mul__

    def _add(self, acct):
        raise NotImplementedError

    def __repr__(self):
        args = ", ".join("%s=%r" % kv for kv in self._describe())
        return "%s(%s)" % (type(self).__name__, args)

    def _describe(self):
        return [(k, v) for k, v in vars(self).items() if not k.startswith("_")]


def _ratio(kind, scale_name, scale, ratio_name, ratio, sensitivity):
    """The ratio of a Gaussian (mu) or Laplace (a) given either the ratio or a scale and
    a sensitivity, as `dpgd account` forms it: sensitivity / scale."""
    if (scale is None) == (ratio is None):
        raise Error("%s: give exactly one of %s= and %s=" % (kind, scale_name, ratio_name))
    if ratio is not None:
        if sensitivity is not None:
            raise Error("%s: sensitivity= goes with %s=, not %s=" %
                        (kind, scale_name, ratio_name))
        return _check.real(ratio_name, ratio)
    x = _check.real(scale_name, scale)
    d = 1.0 if sensitivity is None else _check.real("sensitivity", sensitivity)
    if not (x > 0) or not (d > 0):
        raise Error("%s: %s and sensitivity must be > 0" % (kind, scale_name))
    return d / x


class Gaussian(Mechanism):
    """Gaussian mechanism: noise std ``sigma`` for a query of the given ``sensitivity``
    (mu = sensitivity / sigma), or given directly by its GDP parameter ``mu``."""

    def __init__(self, sigma=None, mu=None, sensitivity=None, count=1):
        super().__init__(count)
        self.mu = _ratio("Gaussian", "sigma", sigma, "mu", mu, sensitivity)

    def _add(self, acct):
        call(lib.dpgd_acct_add_gaussian, acct, self.mu, self.count)


class Laplace(Mechanism):
    """Laplace mechanism: scale ``b`` for a query of the given ``sensitivity`` (a =
    sensitivity / b), or given by ``a`` directly."""

    def __init__(self, b=None, a=None, sensitivity=None, count=1):
        super().__init__(count)
        self.a = _ratio("Laplace", "b", b, "a", a, sensitivity)

    def _add(self, acct):
        call(lib.dpgd_acct_add_laplace, acct, self.a, self.count)


class RandomizedResponse(Mechanism):
    """Binary randomized response with parameter ``eps0``."""

    def __init__(self, eps0, count=1):
        super().__init__(count)
        self.eps0 = _check.real("eps0", eps0)

    def _add(self, acct):
        call(lib.dpgd_acct_add_rr, acct, self.eps0, self.count)


class Discrete(Mechanism):
    """A dominating pair of discrete distributions ``p``, ``q`` (removal direction; the
    reversed pair is also accounted)."""

    def __init__(self, p, q, count=1):
        super().__init__(count)
        # Plain sequences or numpy arrays: the accountant needs no numpy.
        self.p = _check.reals("p", p)
        self.q = _check.reals("q", q)
        if len(self.p) != len(self.q):
            raise Error("Discrete: p has %d outcomes but q has %d" % (len(self.p), len(self.q)))
        if len(self.p) == 0:
            raise Error("Discrete: p and q need at least one outcome")

    def _add(self, acct):
        call(lib.dpgd_acct_add_discrete, acct, ctypes.cast(self.p, c_double_p),
             ctypes.cast(self.q, c_double_p), len(self.p), self.count)


class Subsampled(Mechanism):
    """Poisson-subsampled Gaussian (a DP-SGD step): rate ``q``, noise multiplier
    ``sigma``."""

    def __init__(self, q, sigma, count=1):
        super().__init__(count)
        self.q = _check.real("q", q)
        self.sigma = _check.real("sigma", sigma)

    def _add(self, acct):
        call(lib.dpgd_acct_add_subsampled_gaussian, acct, self.q, self.sigma, self.count)


def _relation(r):
    if r not in _RELATIONS:
        raise Error("relation must be add-remove or replace-one (got %r)" % (r,))
    return r


class WorGaussian(Mechanism):
    """Gaussian on a uniformly random subset of exactly ``m`` of ``n`` points (sampling
    without replacement): noise std ``sigma`` in the units of ``sensitivity``, the base
    query's replace-one sensitivity (2C for a sum of gradients clipped to C: sigma = std/C,
    sensitivity=2). ``relation``: "add-remove" (exact) or "replace-one" (RDP upper bound
    only). Both are required: a default would halve a clipped sum's sensitivity."""

    def __init__(self, m, n, sigma, sensitivity=None, relation=None, count=1):
        super().__init__(count)
        self.m = _check.count("m", m, 0)
        self.n = _check.count("n", n, 0)
        if sensitivity is None or relation is None:
            raise Error("WorGaussian: give relation= (add-remove or replace-one) and "
                        "sensitivity=, the base sum's replace-one sensitivity in sigma's "
                        "units (2 for gradients clipped to 1)")
        self.sigma = _check.real("sigma", sigma) / _check.real("sensitivity", sensitivity)
        self.relation = _relation(relation)

    def _add(self, acct):
        call(lib.dpgd_acct_add_wor_gaussian, acct, self.m, self.n, self.sigma,
             _RELATIONS[self.relation], self.count)


class WorLaplace(Mechanism):
    """Laplace on a uniformly random subset of exactly ``m`` of ``n`` points: scale ``b``
    (a = sensitivity / b) or ``a``; see WorGaussian for the relation."""

    def __init__(self, m, n, b=None, a=None, sensitivity=None, relation="add-remove",
                 count=1):
        super().__init__(count)
        self.m = _check.count("m", m, 0)
        self.n = _check.count("n", n, 0)
        if (b is None) == (a is None) or (a is not None and sensitivity is not None):
            raise Error("WorLaplace: give m, n and one of b= (with optional "
                        "sensitivity=) and a=")
        if a is not None:
            self.a = _check.real("a", a)
        else:
            x = _check.real("b", b)
            d = 1.0 if sensitivity is None else _check.real("sensitivity", sensitivity)
            self.a = d / x if d > 0 and x > 0 else -1.0  # the C code refuses -1
        self.relation = _relation(relation)

    def _add(self, acct):
        call(lib.dpgd_acct_add_wor_laplace, acct, self.m, self.n, self.a,
             _RELATIONS[self.relation], self.count)


def _mechanisms(mechs):
    if isinstance(mechs, Mechanism):
        return [mechs]
    try:
        mechs = list(mechs)
    except TypeError:
        raise Error("mechanisms must be a mechanism or a list of them (got %r)" % (mechs,))
    for m in mechs:
        if not isinstance(m, Mechanism):
            raise Error("not a dpgd mechanism: %r" % (m,))
    return mechs


def _methods(methods):
    if methods is None:
        return list(range(len(METHODS)))
    if isinstance(methods, str):
        methods = [methods]
    out = []
    for name in methods:
        if name not in METHODS:
            raise Error("unknown method %r (%s)" % (name, ", ".join(METHODS)))
        out.append(METHODS.index(name))
    if not out:
        raise Error("methods: give at least one method")
    return sorted(set(out))


class Accountant:
    """A composition of mechanisms (libdpgd's dpgd_accountant).

    ``add(mechanism)`` composes more; ``epsilon(delta, method)`` and ``delta(eps,
    method)`` return a MethodResult; ``account(delta=...)`` every method at once."""

    def __init__(self, mechanisms=()):
        self._a = lib.dpgd_acct_alloc()
        if not self._a:
            raise Error("out of memory", 2)
        for m in _mechanisms(mechanisms):
            self.add(m)

    @classmethod
    def _borrow(cls, handle, owner):
        """A view of an accountant that owner keeps (and frees)."""
        a = cls.__new__(cls)
        a._a, a._owner = handle, owner
        return a

    def __del__(self):
        if getattr(self, "_a", None) and getattr(self, "_owner", None) is None:
            lib.dpgd_acct_free(self._a)
        self._a = None

    def add(self, mechanism):
        """Composes the mechanism (its count times)."""
        for m in _mechanisms(mechanism):
            m._add(self._a)
            if isinstance(m, (WorGaussian, WorLaplace)):
                self._relations = getattr(self, "_relations", set()) | {m.relation}
        return self

    @property
    def relation(self):
        """The neighbouring relation the without-replacement entries assume (None
        without such entries; "replace-one" if any assumes it)."""
        rel = getattr(self, "_relations", set())
        return None if not rel else "replace-one" if "replace-one" in rel else "add-remove"

    @property
    def releases(self):
        """The number of releases composed."""
        return lib.dpgd_acct_n_releases(self._a)

    @property
    def entries(self):
        return lib.dpgd_acct_n_entries(self._a)

    @property
    def gdp_mu(self):
        """sqrt(sum mu^2) when every mechanism is Gaussian, else None."""
        mu = lib.dpgd_acct_gdp_mu(self._a)
        return None if mu != mu else mu

    def _query(self, method, what, x):
        m = _methods(method)[0]
        v = AcctValue()
        fn = lib.dpgd_acct_epsilon if what == "eps" else lib.dpgd_acct_delta
        lib.dpgd_error_clear()
        t0 = time.perf_counter()
        st = fn(self._a, m, x, ctypes.byref(v))
        ms = (time.perf_counter() - t0) * 1e3
        if st:
            from ._lib import last_error
            why = last_error(st)
            lib.dpgd_error_clear()
            return MethodResult(METHODS[m], what, None, None, why, "", ms)
        how = lib.dpgd_acct_exact_note().decode() if m == 0 else ""
        return MethodResult(METHODS[m], what, v.value, v.err, None, how, ms)

    def epsilon(self, delta, method="exact"):
        """eps at delta under one method (MethodResult; .value is None where the method
        does not apply, with the reason in .reason)."""
        return self._query(method, "eps", _check.delta(delta))

    def delta(self, epsilon, method="exact"):
        """delta at epsilon under one method (MethodResult)."""
        return self._query(method, "delta", _check.real("epsilon", epsilon))

    def account(self, delta=None, epsilon=None, methods=None):
        """Every requested method side by side (AccountResult)."""
        if delta is not None and epsilon is not None:
            raise Error("give delta or epsilon, not both")
        if epsilon is not None:
            x, what = _check.real("epsilon", epsilon), "delta"
            if not (x >= 0):
                raise Error("epsilon must be >= 0 (got %r)" % (epsilon,))
        else:
            x, what = _check.delta(1e-5 if delta is None else delta), "eps"
        rows = [self._query(METHODS[m], what, x) for m in _methods(methods)]
        return AccountResult(self.releases, self.entries, self.gdp_mu,
                             "epsilon" if what == "delta" else "delta", x, rows,
                             self.relation)


class MethodResult:
    """One method's answer: ``value`` (eps or delta, an upper bound that already
    includes the numerical error ``err``), or None with the ``reason`` it does not
    apply; ``algorithm`` names the exact method's algorithm when it is not the
    characteristic function; ``time_ms`` the query's time."""

    def __init__(self, method, what, value, err, reason, algorithm, time_ms):
        self.method, self.what, self.value, self.err = method, what, value, err
        self.reason, self.algorithm, self.time_ms = reason, algorithm, time_ms

    @property
    def ok(self):
        return self.value is not None

    @property
    def eps(self):
        return self.value if self.what == "eps" else None

    @property
    def delta(self):
        return self.value if self.what == "delta" else None

    def to_dict(self):
        """The method's entry of `dpgd account --json`."""
        if not self.ok:
            return {self.what: None, "na": self.reason}
        d = {self.what: self.value, "err": self.err, "time_ms": self.time_ms}
        if self.algorithm:
            d["algorithm"] = self.algorithm
        return d

    def __repr__(self):
        if not self.ok:
            return "<%s: n/a (%s)>" % (self.method, self.reason)
        return "<%s: %s %.10g, error bound %.3g>" % (
            self.method, self.what, round_up(self.value, 10), round_up(self.err, 3))


class AccountResult:
    """dpgd.account's answer: every method side by side.

    Attributes: one MethodResult per method by name (``r.exact``, ``r.zcdp``,
    ``r.rdp_classic``, ``r.rdp_balle``, ``r.rdp_optimal``; also ``r["exact"]``),
    ``releases``, ``entries``, ``gdp_mu`` (None unless Gaussian only), and the question
    (``delta``, or ``epsilon`` when delta was asked for). ``to_dict()`` has the shape of
    `dpgd account --json`. Printed, it is the CLI's table with every value rounded UP to
    4 significant digits (the error bounds to 3)."""

    def __init__(self, releases, entries, gdp_mu, given, x, rows, relation=None):
        self.releases, self.entries, self.gdp_mu = releases, entries, gdp_mu
        self.relation = relation
        self.given, self.x = given, x
        self.methods = {r.method: r for r in rows}

    @property
    def delta(self):
        return self.x if self.given == "delta" else None

    @property
    def epsilon(self):
        return self.x if self.given == "epsilon" else None

    def __getitem__(self, name):
        return self.methods[name]

    def __getattr__(self, name):
        methods = self.__dict__.get("methods", {})
        if name in methods:
            return methods[name]
        raise AttributeError(name)

    def to_dict(self):
        d = {"releases": self.releases, "entries": self.entries, "gdp_mu": self.gdp_mu,
             self.given: self.x}
        if self.relation:
            d["relation"] = self.relation
        d["methods"] = {k: v.to_dict() for k, v in self.methods.items()}
        return d

    def __str__(self):
        what = "delta" if self.given == "epsilon" else "eps"
        lines = ["releases     %d in %d %s%s" % (
            self.releases, self.entries, "entry" if self.entries == 1 else "entries",
            "" if self.gdp_mu is None else " (Gaussian only: mu = %.10g)" % self.gdp_mu),
            "%-12s %.10g" % (self.given, self.x)]
        if self.relation:
            lines.append("relation     without replacement, " + self.relation)
        lines += [
            "%-12s %-10s %s" % ("method", what, "error bound")]
        for r in self.methods.values():
            if r.ok:
                lines.append("%-12s %-10s %-12s%s" % (
                    r.method, "%#.4g" % round_up(r.value, 4), "%.3g" % round_up(r.err, 3),
                    "  " + r.algorithm if r.algorithm else ""))
            else:
                lines.append("%-12s %-10s (%s)" % (r.method, "n/a", r.reason))
        return "\n".join(x.rstrip() for x in lines)

    __repr__ = __str__


def account(mechanisms, delta=None, epsilon=None, methods=None):
    """eps at ``delta`` (default 1e-5), or delta at ``epsilon``, of the composition of
    ``mechanisms`` under every accounting method (or those named in ``methods``),
    side by side, as `dpgd account` prints them. Returns an AccountResult.

    >>> dpgd.account([dpgd.Gaussian(sigma=170, count=112)], delta=1e-5).exact.eps
    """
    return Accountant(mechanisms).account(delta=delta, epsilon=epsilon, methods=methods)


class CalibrationResult:
    """dpgd.calibrate's answer: per method, the noise multiplier ``sigma`` (rounded
    up) for ``steps`` Gaussian steps, or the filter budget ``B_norm`` (rounded down)
    and its full steps floor(B_norm / clip^2); None where a method cannot calibrate
    (``reasons`` says why). ``to_dict()`` has the shape of `dpgd calibrate --json`."""

    def __init__(self, head, what, clip, values, reasons, times):
        self.head, self.what, self.clip = head, what, clip
        self.values, self.reasons, self.times = values, reasons, times

    def __getitem__(self, name):
        return self.values[name]

    def __getattr__(self, name):
        values = self.__dict__.get("values", {})
        if name in values:
            return values[name]
        raise AttributeError(name)

    def full_steps(self, method):
        import math
        v = self.values[method]
        return None if v is None else math.floor(v / (self.clip * self.clip))

    def to_dict(self):
        d = dict(self.head)
        d["methods"] = {}
        for m, v in self.values.items():
            if v is None:
                d["methods"][m] = {self.what: None, "na": self.reasons[m]}
            elif self.what == "B_norm":
                d["methods"][m] = {"B_norm": v, "full_steps": self.full_steps(m),
                                   "time_ms": self.times[m]}
            else:
                d["methods"][m] = {"sigma": v, "time_ms": self.times[m]}
        return d

    def __str__(self):
        lines = ["target       eps %.10g at delta %.10g (+ %d other releases)" % (
            self.head["epsilon"], self.head["delta"], self.head["extra_releases"])]
        budget = self.what == "B_norm"
        lines.append("sigma %.10g, clip %.10g" % (self.head["sigma"], self.clip) if budget
                     else "steps        %d" % self.head["steps"])
        lines.append("%-12s %-18s %s" % ("method", self.what, "full steps" if budget else ""))
        for m, v in self.values.items():
            if v is None:
                lines.append("%-12s %-18s (%s)" % (m, "n/a", self.reasons[m]))
            elif budget:
                lines.append("%-12s %-18.10g %d" % (m, lib.dpgd_round_digits(v, 10, -1),
                                                     self.full_steps(m)))
            else:
                lines.append("%-12s %-18.10g" % (m, round_up(v, 10)))
        return "\n".join(lines)

    __repr__ = __str__


def calibrate(epsilon, delta=1e-5, steps=None, sigma=None, clip=None, mechanisms=(),
              methods=None):
    """Noise calibration, per method, as `dpgd calibrate` computes it.

    With ``steps``: the smallest noise multiplier sigma such that ``steps`` Gaussian
    steps (mu = 1/sigma each), composed with ``mechanisms`` (e.g. stopping queries),
    give eps(delta) <= epsilon. With ``sigma`` and ``clip``: the largest squared-norm
    budget B_norm of the individual filter (Algorithm 7). Returns a CalibrationResult.
    """
    eps = _check.real("epsilon", epsilon)
    if not (eps > 0):
        raise Error("epsilon must be > 0 (got %r)" % (epsilon,))
    delta = _check.delta(delta)
    budget = sigma is not None or clip is not None
    if budget and steps is not None:
        raise Error("give steps, or sigma and clip, not both")
    if not budget and steps is None:
        raise Error("give steps, or sigma and clip")
    extra = Accountant(mechanisms)
    head = {"epsilon": eps, "delta": delta, "extra_releases": extra.releases}
    if budget:
        if sigma is None or clip is None:
            raise Error("%s is required with %s" % (("clip", "sigma") if clip is None
                                                     else ("sigma", "clip")))
        sigma, clip = _check.real("sigma", sigma), _check.real("clip", clip)
        if not (sigma > 0):
            raise Error("sigma must be > 0 (got %r)" % (sigma,))
        if not (clip > 0):
            raise Error("clip must be > 0 (got %r)" % (clip,))
        head.update(sigma=sigma, clip=clip)
    else:
        steps = _check.count("steps", steps)
        head["steps"] = steps
    ext = extra._a if extra.entries else None
    values, reasons, times = {}, {}, {}
    for m in _methods(methods):
        name, out = METHODS[m], ctypes.c_double()
        lib.dpgd_error_clear()
        t0 = time.perf_counter()
        if budget:
            st = lib.dpgd_calibrate_budget(m, eps, delta, sigma, clip, ext, ctypes.byref(out))
        else:
            st = lib.dpgd_calibrate_sigma(m, eps, delta, steps, ext, ctypes.byref(out))
        times[name] = (time.perf_counter() - t0) * 1e3
        if st:
            from ._lib import last_error
            values[name], reasons[name] = None, last_error(st)
            lib.dpgd_error_clear()
        else:
            values[name], reasons[name] = out.value, None
    return CalibrationResult(head, "B_norm" if budget else "sigma", clip, values, reasons,
                             times)
