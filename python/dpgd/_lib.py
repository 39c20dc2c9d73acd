"""Loading libdpgd and declaring the C functions the package calls (ctypes).

The library is looked up, in order, at the path in the environment variable DPGD_LIB,
inside this package (a wheel from `pip install .` carries dpgd/libdpgd.so.0), in the
prefix this package was installed into by `cmake --install` (PREFIX/lib/libdpgd.so.0
beside PREFIX/lib/python3.X/site-packages/dpgd), in the build tree beside this package
(build/lib/libdpgd.so of the repository that holds python/dpgd), and by the system's
library search (an installed libdpgd.so.0).
Every number the package returns comes from these C functions; nothing of the
accountant, the filter or the trainer is implemented again in Python.
"""

import ctypes
import ctypes.util
import os

__all__ = ["lib", "Error", "check", "path"]


class Error(Exception):
    """An error reported by libdpgd: the message is dpgd's one-line reason.

    ``status`` is dpgd's status code (1 invalid argument, 2 no memory, 3 I/O,
    4 format, 5 range, 6 no convergence); 1 for arguments the bindings refuse
    before calling the library.
    """

    def __init__(self, message, status=1):
        super().__init__(message)
        self.status = status


def _candidates():
    env = os.environ.get("DPGD_LIB")
    if env:
        return [env]
    here = os.path.dirname(os.path.abspath(__file__))
    out = [os.path.join(here, "libdpgd.so.0")]
    site = os.path.dirname(here)
    if os.path.basename(site) in ("site-packages", "dist-packages"):
        # PREFIX/lib/python3.X/site-packages/dpgd -> PREFIX/lib/libdpgd.so.0
        out.append(os.path.normpath(os.path.join(site, "..", "..", "libdpgd.so.0")))
    out.append(os.path.normpath(os.path.join(here, "..", "..", "build", "lib", "libdpgd.so")))
    found = ctypes.util.find_library("dpgd")
    if found:
        out.append(found)
    out.append("libdpgd.so.0")
    return out


def _load():
    tried = []
    for cand in _candidates():
        if os.sep in cand and not os.path.exists(cand):
            tried.append(cand + " (missing)")
            continue
        try:
            return ctypes.CDLL(cand), cand
        except OSError as e:
            tried.append("%s (%s)" % (cand, e))
    raise ImportError(
        "dpgd: cannot load libdpgd: tried " + "; ".join(tried) +
        ". Build it (cmake --build build) or set DPGD_LIB to its path")


lib, path = _load()

c_double_p = ctypes.POINTER(ctypes.c_double)
c_float_p = ctypes.POINTER(ctypes.c_float)
c_size_p = ctypes.POINTER(ctypes.c_size_t)
c_void_pp = ctypes.POINTER(ctypes.c_void_p)


class AcctValue(ctypes.Structure):
    """dpgd_acct_value: the reported bound and the numerical error already in it."""
    _fields_ = [("value", ctypes.c_double), ("err", ctypes.c_double)]


ODO_MAX = 64


class Odometer(ctypes.Structure):
    """dpgd_odometer (dpgd_accounting.h)."""
    _fields_ = [("level_mu2", ctypes.c_double), ("levels", ctypes.c_size_t),
                ("delta", ctypes.c_double), ("delta_top", ctypes.c_double),
                ("delta_low", ctypes.c_double),
                ("statement", ctypes.c_size_t * (ODO_MAX + 1)),
                ("eps", ctypes.c_double * (ODO_MAX + 1))]


class Ledger(ctypes.Structure):
    """dpgd_ledger (dpgd_train.h): read only."""
    _fields_ = [("n", ctypes.c_size_t), ("clip", ctypes.c_double),
                ("clip2", ctypes.c_double), ("budget", ctypes.c_double),
                ("slack", ctypes.c_double), ("spend", c_double_p),
                ("filter", ctypes.c_void_p)]


class PsumParams(ctypes.Structure):
    """dpgd_psum_params (dpgd_train.h)."""
    _fields_ = [("n", ctypes.c_size_t), ("dim", ctypes.c_size_t),
                ("clip", ctypes.c_double), ("sigma", ctypes.c_double),
                ("budget", ctypes.c_double), ("rng", ctypes.c_int),
                ("seed", ctypes.c_uint8 * 32)]


_I, _D, _Z, _U64, _P, _S = (ctypes.c_int, ctypes.c_double, ctypes.c_size_t,
                            ctypes.c_uint64, ctypes.c_void_p, ctypes.c_char_p)

_PROTOS = {
    # core
    "dpgd_error_last": (_S, []),
    "dpgd_error_clear": (None, []),
    "dpgd_error_str": (_S, [_I]),
    "dpgd_round_digits": (_D, [_D, _I, _I]),
    # accountant
    "dpgd_acct_method_name": (_S, [_I]),
    "dpgd_acct_alloc": (_P, []),
    "dpgd_free": (None, [ctypes.c_void_p]),
    "dpgd_acct_free": (None, [_P]),
    "dpgd_acct_add_gaussian": (_I, [_P, _D, _U64]),
    "dpgd_acct_add_laplace": (_I, [_P, _D, _U64]),
    "dpgd_acct_add_rr": (_I, [_P, _D, _U64]),
    "dpgd_acct_add_discrete": (_I, [_P, c_double_p, c_double_p, _Z, _U64]),
    "dpgd_acct_add_subsampled_gaussian": (_I, [_P, _D, _D, _U64]),
    "dpgd_acct_add_wor_gaussian": (_I, [_P, _U64, _U64, _D, _I, _U64]),
    "dpgd_acct_add_wor_laplace": (_I, [_P, _U64, _U64, _D, _I, _U64]),
    "dpgd_acct_gdp_mu": (_D, [_P]),
    "dpgd_acct_n_entries": (_Z, [_P]),
    "dpgd_acct_n_releases": (_U64, [_P]),
    "dpgd_acct_epsilon": (_I, [_P, _I, _D, ctypes.POINTER(AcctValue)]),
    "dpgd_acct_delta": (_I, [_P, _I, _D, ctypes.POINTER(AcctValue)]),
    "dpgd_acct_exact_note": (_S, []),
    "dpgd_calibrate_sigma": (_I, [_I, _D, _D, _U64, _P, c_double_p]),
    "dpgd_calibrate_budget": (_I, [_I, _D, _D, _D, _D, _P, c_double_p]),
    "dpgd_gdp_epsilon": (_I, [_D, _D, c_double_p]),
    # filter and odometer
    "dpgd_filter_alloc": (_P, [_Z, _I, _Z, c_double_p, c_double_p]),
    "dpgd_filter_free": (None, [_P]),
    "dpgd_filter_n": (_Z, [_P]),
    "dpgd_filter_n_orders": (_Z, [_P]),
    "dpgd_filter_currency_of": (_I, [_P]),
    "dpgd_filter_budget": (_D, [_P, _Z]),
    "dpgd_filter_cap": (_D, [_P, _Z, _D, _D]),
    "dpgd_filter_charge": (_I, [_P, _Z, _D, _D]),
    "dpgd_filter_active": (_I, [_P, _Z]),
    "dpgd_filter_n_active": (_Z, [_P]),
    "dpgd_filter_spent": (_D, [_P, _Z, _Z]),
    "dpgd_filter_spent_data": (c_double_p, [_P, _Z]),
    "dpgd_filter_check": (_I, [_P]),
    "dpgd_filter_point_mu2": (_D, [_P, _Z, _D]),
    "dpgd_filter_report": (_I, [_P, _Z, ctypes.POINTER(Odometer), _D, c_size_p, c_double_p,
                                c_double_p]),
    "dpgd_filter_epsilon": (_I, [_P, _I, _D, _D, c_double_p]),
    "dpgd_filter_serialize": (_I, [_P, c_void_pp, c_size_p]),
    "dpgd_filter_deserialize": (_I, [c_void_pp, ctypes.c_char_p, _Z]),
    "dpgd_odometer_init": (_I, [ctypes.POINTER(Odometer), _D, _D, _D]),
    # training
    "dpgd_config_alloc": (_P, []),
    "dpgd_config_free": (None, [_P]),
    "dpgd_config_load": (_I, [_P, _S]),
    "dpgd_config_set": (_I, [_P, _S]),
    "dpgd_config_validate": (_I, [_P]),
    "dpgd_run_open": (_I, [c_void_pp, _P, _S]),
    "dpgd_run_step": (_I, [_P]),
    "dpgd_run_done": (_I, [_P]),
    "dpgd_run_checkpoint": (_I, [_P]),
    "dpgd_run_finish": (_I, [_P]),
    "dpgd_run_free": (None, [_P]),
    "dpgd_run_dir": (_S, [_P]),
    "dpgd_run_step_index": (_Z, [_P]),
    "dpgd_psum_open": (_I, [c_void_pp, ctypes.POINTER(PsumParams)]),
    "dpgd_psum_free": (None, [_P]),
    "dpgd_psum_step": (_I, [_P, c_float_p, c_double_p]),
    "dpgd_psum_steps": (_Z, [_P]),
    "dpgd_psum_ledger": (ctypes.POINTER(Ledger), [_P]),
    "dpgd_psum_accountant": (_P, [_P]),
}

for _name, (_res, _args) in _PROTOS.items():
    _f = getattr(lib, _name)
    _f.restype = _res
    _f.argtypes = _args

# The buffers dpgd_*_serialize allocates are freed by the library's own allocator
# (dpgd_free), never by this process's free(): under a preloaded allocator (jemalloc)
# or a sanitizer runtime the two differ.
c_free = lib.dpgd_free


def last_error(status):
    """dpgd's message for the last failure on this thread (or the status's text)."""
    msg = lib.dpgd_error_last()
    msg = msg.decode("utf-8", "replace") if msg else ""
    if not msg:
        msg = lib.dpgd_error_str(status).decode()
    return msg


def check(status):
    """Raises Error with dpgd's one-line message when status is not DPGD_OK."""
    if status:
        msg = last_error(status)
        lib.dpgd_error_clear()
        raise Error(msg, status)


def call(fn, *args):
    """Calls a dpgd function that returns a status; raises Error on failure."""
    lib.dpgd_error_clear()
    check(fn(*args))


def round_up(v, digits):
    """dpgd_round_digits(v, digits, +1): the private direction for eps, delta, sigma."""
    return lib.dpgd_round_digits(float(v), int(digits), 1)


def round_down(v, digits):
    """dpgd_round_digits(v, digits, -1): the private direction for budgets."""
    return lib.dpgd_round_digits(float(v), int(digits), -1)
