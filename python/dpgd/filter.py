"""dpgd.Filter: libdpgd's individual privacy filter (accounting/FILTER.md) on numpy
arrays of per-point values."""

import ctypes
import math

import numpy as np

from . import _check
from ._lib import Error, Odometer, c_double_p, c_free, call, check, lib
from .accounting import METHODS, _methods

_CURRENCIES = {"gdp": 0, "zcdp": 1, "rdp": 2}


class Filter:
    """An individual privacy filter over ``n`` points (Feldman & Zrnic, NeurIPS 2021).

    Each point has its own privacy loss in one currency, charged by Gaussian releases
    of squared sensitivity ``sens2`` against noise std ``sigma``; a point whose budget
    is spent is dropped (cap 0). Currencies: "gdp" (budget of sum mu^2; the trainer's
    Algorithm 7 with sigma = 1 and budget B_norm), "zcdp" (sum rho) and "rdp" (one
    budget per order: ``budget`` and ``orders`` are then arrays). ``budget`` may be
    inf (an odometer without a filter).

    The spends are SENSITIVE: each point's values belong to that point's owner.
    """

    def __init__(self, n, budget, currency="gdp", orders=None, _handle=None):
        if _handle is not None:
            self._f = _handle
            return
        n = _check.count("n", n)
        if currency not in _CURRENCIES:
            raise Error("currency must be gdp, zcdp or rdp (got %r)" % (currency,))
        cur = _CURRENCIES[currency]
        if cur == 2:
            if orders is None:
                raise Error("an rdp filter needs orders (and one budget per order)")
            orders = _check.array("orders", orders, np.float64, (None,))
            budgets = _check.array("budget", budget, np.float64, (len(orders),))
        else:
            if orders is not None:
                raise Error("orders go with currency='rdp' only")
            budgets = np.array([_check.real("budget", budget)], dtype=np.float64)
        k = len(budgets)
        lib.dpgd_error_clear()
        f = lib.dpgd_filter_alloc(
            n, cur, k, orders.ctypes.data_as(c_double_p) if orders is not None else None,
            budgets.ctypes.data_as(c_double_p))
        if not f:
            from ._lib import last_error
            msg = last_error(2)
            lib.dpgd_error_clear()
            raise Error(msg, 2)
        self._f = f

    @classmethod
    def _borrow(cls, handle, owner):
        """A view of a filter that owner keeps (and frees)."""
        f = cls.__new__(cls)
        f._f, f._owner = handle, owner
        return f

    def __del__(self):
        if getattr(self, "_f", None) and getattr(self, "_owner", None) is None:
            lib.dpgd_filter_free(self._f)
        self._f = None

    @property
    def n(self):
        return lib.dpgd_filter_n(self._f)

    @property
    def currency(self):
        return ("gdp", "zcdp", "rdp")[lib.dpgd_filter_currency_of(self._f)]

    @property
    def budget(self):
        """The budget (an array of one per order for rdp)."""
        k = lib.dpgd_filter_n_orders(self._f)
        b = [lib.dpgd_filter_budget(self._f, j) for j in range(k)]
        return np.array(b) if self.currency == "rdp" else b[0]

    def _per_point(self, name, v, dtype=np.float64):
        """A scalar broadcast to (n,), or an array of shape (n,)."""
        if np.ndim(v) == 0:
            return np.full(self.n, _check.real(name, v), dtype=dtype)
        return _check.array(name, v, dtype, (self.n,))

    def cap(self, want, sigma=1.0):
        """The largest sensitivity <= want each point may still spend in one release
        against noise std sigma (array of n; 0 for a halted point). ``want`` is a
        scalar or one value per point."""
        want = self._per_point("want", want)
        sigma = _check.positive("sigma", sigma)
        if not np.all(np.isfinite(want)) or not np.all(want > 0):
            raise Error("cap: want must be finite and > 0 for every point")
        return np.array([lib.dpgd_filter_cap(self._f, i, want[i], sigma)
                         for i in range(self.n)])

    def charge(self, sens2, sigma=1.0):
        """Charges every point i a Gaussian release of squared sensitivity sens2[i]
        (a scalar or an array of n values >= 0; 0 charges nothing) against noise std
        sigma. A charge that would exceed a point's budget is refused and leaves that
        point unchanged: the returned boolean array says which charges were made.
        Squared caps from cap() always fit. NaN, negative or infinite values raise
        before anything is charged."""
        s2 = self._per_point("sens2", sens2)
        sigma = _check.positive("sigma", sigma)
        if not np.all(np.isfinite(s2)) or not np.all(s2 >= 0):
            bad = int(np.flatnonzero(~(np.isfinite(s2) & (s2 >= 0)))[0])
            raise Error("charge: sens2 of point %d is %r (want finite and >= 0)" %
                        (bad, float(s2[bad])))
        done = np.ones(self.n, dtype=bool)
        for i in range(self.n):
            st = lib.dpgd_filter_charge(self._f, i, s2[i], sigma)
            if st == 5:  # DPGD_ERANGE: over the budget, the point is unchanged
                done[i] = False
            elif st:
                check(st)
        lib.dpgd_error_clear()
        return done

    def active(self):
        """Boolean array: point i is active while every order has spent < budget."""
        return np.array([bool(lib.dpgd_filter_active(self._f, i)) for i in range(self.n)])

    @property
    def n_active(self):
        """Active points (a non-private diagnostic: never publish it as private)."""
        return lib.dpgd_filter_n_active(self._f)

    def spent(self, order=0):
        """Every point's spend in order ``order``'s currency (array of n)."""
        k = lib.dpgd_filter_n_orders(self._f)
        order = _check.count("order", order, 0)
        if order >= k:
            raise Error("order index %d out of range (the filter has %d)" % (order, k))
        data = lib.dpgd_filter_spent_data(self._f, order)
        return np.ctypeslib.as_array(data, shape=(self.n,)).copy()

    def check(self):
        """Raises dpgd.Error unless 0 <= spent <= budget for every point and order."""
        call(lib.dpgd_filter_check, self._f)

    def epsilon(self, delta, method="exact", unit=1.0):
        """The guarantee every point has (the run's eps at delta) under ``method``,
        the budgets divided by unit^2 (unit: the noise std the charges were made
        against, in the caller's unit)."""
        m = _methods(method)[0]
        out = ctypes.c_double()
        call(lib.dpgd_filter_epsilon, self._f, m, _check.positive("unit", unit),
             _check.delta(delta), ctypes.byref(out))
        return out.value

    def report(self, delta, max_step_mu2, unit=1.0):
        """The per-point odometer report (docs/MATH.md "Per-point odometer"): each
        point's (level, mu_i, eps_i) at delta, with the levels of an odometer whose
        top level is the whole budget (GDP currency, finite budget) and whose largest
        one-step charge is max_step_mu2 (in GDP mu^2 units). Returns a dict of arrays
        ``level``, ``mu``, ``eps`` and the split ``delta_level``. SENSITIVE per point."""
        if self.currency != "gdp":
            raise Error("report: the odometer reports GDP filters only")
        unit = _check.positive("unit", unit)
        b = self.budget
        if not math.isfinite(b):
            raise Error("report: the filter's budget is infinite (no top level)")
        o = Odometer()
        # Padded as the trainer pads it (train/plan.c), so that a point's total, rounded
        # up, never lands above the top level.
        mu_max = math.sqrt(b) / unit * (1 + 2.0 ** -40)
        call(lib.dpgd_odometer_init, ctypes.byref(o), mu_max,
             _check.positive("max_step_mu2", max_step_mu2), _check.delta(delta))
        n = self.n
        level, mu, eps = np.zeros(n, dtype=np.int64), np.zeros(n), np.zeros(n)
        lv, m, e = ctypes.c_size_t(), ctypes.c_double(), ctypes.c_double()
        for i in range(n):
            call(lib.dpgd_filter_report, self._f, i, ctypes.byref(o), unit,
                 ctypes.byref(lv), ctypes.byref(m), ctypes.byref(e))
            level[i], mu[i], eps[i] = lv.value, m.value, e.value
        dl = np.array([o.delta_top if int(x) == o.levels else o.delta_low for x in level])
        return {"level": level, "mu": mu, "eps": eps, "delta_level": dl,
                "levels": o.levels, "level_mu2": o.level_mu2}

    def to_bytes(self):
        """The filter as dpgd's versioned, checksummed byte string ("DPGDFILT")."""
        buf, ln = ctypes.c_void_p(), ctypes.c_size_t()
        call(lib.dpgd_filter_serialize, self._f, ctypes.byref(buf), ctypes.byref(ln))
        try:
            return ctypes.string_at(buf, ln.value)
        finally:
            c_free(buf)

    @classmethod
    def from_bytes(cls, data):
        """A filter from to_bytes(); corrupt input raises dpgd.Error."""
        if not isinstance(data, (bytes, bytearray)):
            raise Error("from_bytes needs bytes (got %s)" % type(data).__name__)
        out = ctypes.c_void_p()
        call(lib.dpgd_filter_deserialize, ctypes.byref(out), bytes(data), len(data))
        return cls(0, 0, _handle=out.value)

    def save(self, path):
        """Writes the filter to path (to_bytes)."""
        with open(path, "wb") as f:
            f.write(self.to_bytes())

    @classmethod
    def load(cls, path):
        """Reads a filter written by save()."""
        with open(path, "rb") as f:
            return cls.from_bytes(f.read())

    def __repr__(self):
        return "<dpgd.Filter n=%d currency=%s budget=%r>" % (self.n, self.currency,
                                                              self.budget)
