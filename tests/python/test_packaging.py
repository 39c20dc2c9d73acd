"""The package as users meet it: the accountant without numpy, a one-line message where
numpy is needed, dir(dpgd), and buffers freed by libdpgd's own allocator (a program
whose malloc is jemalloc's must be able to save a filter)."""

import os
import subprocess
import sys

import pytest

import dpgd
from conftest import gdp_epsilon

# Run in a child interpreter in which `import numpy` fails, as on a machine without it.
NO_NUMPY = "import sys; sys.modules['numpy'] = None\n"


def _child(code, env=None):
    e = dict(os.environ)
    e.update(env or {})
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=e)


def test_accountant_without_numpy():
    code = NO_NUMPY + (
        "import dpgd\n"
        "r = dpgd.account([dpgd.Gaussian(sigma=1.7, count=3),\n"
        "                  dpgd.Discrete(p=[0.5, 0.3, 0.2], q=[0.2, 0.3, 0.5], count=2)],\n"
        "                 delta=1e-5)\n"
        "print(r.exact.value)\n"
        "r = dpgd.account([dpgd.Discrete(p=(0.6, 0.4), q=(0.4, 0.6))], delta=1e-5)\n"
        "print(r.exact.value)\n")
    p = _child(code)
    assert p.returncode == 0, p.stderr
    e1, e2 = (float(x) for x in p.stdout.split())
    # Randomized response at eps0 = log(1.5) is (log 1.5, 0)-DP: a pure bound, and the
    # exact answer at delta 1e-5 cannot exceed it.
    assert 0 < e2 <= 0.4054652 + 1e-9
    assert e1 > 0
    # The same answer with numpy present (the arrays go to the same C call).
    r = dpgd.account([dpgd.Gaussian(sigma=1.7, count=3),
                      dpgd.Discrete(p=[0.5, 0.3, 0.2], q=[0.2, 0.3, 0.5], count=2)],
                     delta=1e-5)
    assert r.exact.value == e1


@pytest.mark.parametrize("name", ["Filter", "PrivateSum", "train"])
def test_numpy_parts_say_so_in_one_line(name):
    p = _child(NO_NUMPY + "import dpgd\ndpgd.%s\n" % name)
    assert p.returncode != 0
    last = p.stderr.strip().splitlines()[-1]
    assert last.startswith("ImportError: dpgd.%s needs numpy: pip install numpy" % name), \
        p.stderr


def test_discrete_refuses_non_reals():
    with pytest.raises(dpgd.Error, match=r"p\[1\] must be a real number"):
        dpgd.Discrete(p=[0.5, "x"], q=[0.5, 0.5])
    with pytest.raises(dpgd.Error, match="p must be a sequence"):
        dpgd.Discrete(p=0.5, q=[1.0])


def test_dir_lists_every_public_name():
    names = dir(dpgd)
    for n in dpgd.__all__:
        assert n in names, n
    assert "Filter" in names and "train" in names and "PrivateSum" in names


def test_gaussian_matches_closed_form():
    r = dpgd.account([dpgd.Gaussian(sigma=170, count=112)], delta=1e-5)
    mu = (112 ** 0.5) / 170
    assert r.exact.value >= gdp_epsilon(mu, 1e-5) - 1e-12


JEMALLOC = "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2"


def test_filter_save_under_jemalloc(tmp_path):
    if not os.path.exists(JEMALLOC):
        pytest.fail("libjemalloc2 is not installed (cmake/deps.sh installs it)")
    out = tmp_path / "f.bin"
    code = ("import dpgd\n"
            "f = dpgd.Filter(5, budget=2.5, currency='gdp')\n"
            "f.save(%r)\n"
            "g = dpgd.Filter.load(%r)\n"
            "print(g.n)\n" % (str(out), str(out)))
    p = _child(code, {"LD_PRELOAD": JEMALLOC})
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == "5"
