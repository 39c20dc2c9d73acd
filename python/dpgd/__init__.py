"""dpgd: differentially private training and exact privacy accounting (libdpgd).

A thin binding of the C library: every number comes from libdpgd, the code behind the
`dpgd` command line, never from a second implementation.

    import dpgd
    print(dpgd.account([dpgd.Gaussian(sigma=170, count=112)], delta=1e-5))

Accountant: the mechanisms Gaussian, Laplace, RandomizedResponse, Discrete, Subsampled
(Poisson), WorGaussian and WorLaplace (sampling without replacement); dpgd.account,
dpgd.calibrate, dpgd.Accountant. Individual filter: dpgd.Filter. Training:
dpgd.train (a config file or dict, as `dpgd train`) and dpgd.PrivateSum (private sums
of gradients computed by the caller). Errors raise dpgd.Error with dpgd's message.
"""

from ._lib import Error, path as library_path
from .accounting import (METHODS, Accountant, AccountResult, CalibrationResult,
                         Discrete, Gaussian, Laplace, MethodResult, RandomizedResponse,
                         Subsampled, WorGaussian, WorLaplace, account, calibrate)

# The filter and the trainers take numpy arrays; they are loaded on first use, so that
# the accountant works where numpy is not installed.
_LAZY = {"Filter": "filter", "PrivateSum": "training", "train": "training"}


def __getattr__(name):
    if name in _LAZY:
        import importlib
        try:
            import numpy  # noqa: F401  (the array-taking parts need it)
        except ImportError:
            raise ImportError("dpgd.%s needs numpy: pip install numpy (Debian: apt-get "
                              "install python3-numpy); the accountant works without it"
                              % name) from None
        mod = importlib.import_module("." + _LAZY[name], __name__)
        return getattr(mod, name)
    raise AttributeError("module 'dpgd' has no attribute %r" % (name,))


def __dir__():
    """Every public name, the lazily loaded ones (Filter, PrivateSum, train) included."""
    return sorted(set(globals()) | set(__all__))

__all__ = ["Error", "METHODS", "Accountant", "AccountResult", "CalibrationResult",
           "MethodResult", "Gaussian", "Laplace", "RandomizedResponse", "Discrete",
           "Subsampled", "WorGaussian", "WorLaplace", "account", "calibrate", "Filter",
           "PrivateSum", "train", "library_path"]
