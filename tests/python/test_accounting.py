"""dpgd.account and dpgd.calibrate against `dpgd account/calibrate --json` (the same
questions must give the same bits) and against the closed form of the Gaussian curve."""

import math

import pytest

import dpgd
from conftest import cli, cli_json, gdp_delta, gdp_epsilon

# (Python mechanisms, the same mechanisms as CLI flags, the question)
CASES = [
    ([dpgd.Gaussian(sigma=170, count=112)], ["--gaussian", "sigma=170,count=112"],
     ["--delta", "1e-5"]),
    ([dpgd.Gaussian(sigma=2.385, sensitivity=1.5, count=7), dpgd.Laplace(b=3.3, count=2),
      dpgd.RandomizedResponse(eps0=0.7, count=3)],
     ["--gaussian", "sigma=2.385,sensitivity=1.5,count=7", "--laplace", "b=3.3,count=2",
      "--rr", "eps0=0.7,count=3"], ["--delta", "1e-6"]),
    ([dpgd.Subsampled(q=0.013, sigma=1.1, count=40)], ["--subsampled",
                                                       "q=0.013,sigma=1.1,count=40"],
     ["--delta", "1e-5"]),
    ([dpgd.Discrete(p=[0.5, 0.3, 0.2], q=[0.2, 0.3, 0.5], count=4), dpgd.Gaussian(mu=0.3)],
     ["--discrete", "p=0.5:0.3:0.2,q=0.2:0.3:0.5,count=4", "--gaussian", "mu=0.3"],
     ["--delta", "1e-5"]),
    ([dpgd.WorGaussian(m=100, n=1000, sigma=2.5, sensitivity=2, relation="add-remove",
                      count=20)],
     ["--wor-gaussian", "m=100,n=1000,sigma=2.5,sensitivity=2,relation=add-remove,count=20"],
     ["--epsilon", "1.5"]),
    ([dpgd.WorLaplace(m=50, n=700, b=4.5, relation="replace-one", count=9)],
     ["--wor-laplace", "m=50,n=700,b=4.5,relation=replace-one,count=9"],
     ["--delta", "1e-5"]),
    ([dpgd.Laplace(a=0.5) * 3], ["--laplace", "a=0.5,count=3"], ["--epsilon", "0.9"]),
]


def _question(q):
    return {"delta": float(q[1])} if q[0] == "--delta" else {"epsilon": float(q[1])}


def _strip_times(d):
    for m in d["methods"].values():
        m.pop("time_ms", None)
        if m.get("err") is not None:
            m["err"] = "%.3g" % m["err"]  # the CLI prints the error bound with %.3g
    return d


@pytest.mark.parametrize("mechs,flags,question", CASES)
def test_account_matches_cli_bit_for_bit(mechs, flags, question):
    want = _strip_times(cli_json("account", *flags, *question))
    got = _strip_times(dpgd.account(mechs, **_question(question)).to_dict())
    assert got == want  # floats compare exactly: the CLI prints %.17g


def test_calibrate_matches_cli_bit_for_bit():
    for args, kw in [
        (["--epsilon", "0.3", "--steps", "112"], dict(epsilon=0.3, steps=112)),
        (["--epsilon", "0.3", "--sigma", "170", "--clip", "10"],
         dict(epsilon=0.3, sigma=170, clip=10)),
        (["--epsilon", "0.75", "--delta", "1e-6", "--steps", "60", "--gaussian",
          "sigma=600,count=8"],
         dict(epsilon=0.75, delta=1e-6, steps=60,
              mechanisms=[dpgd.Gaussian(sigma=600, count=8)])),
    ]:
        want = _strip_times(cli_json("calibrate", *args))
        got = _strip_times(dpgd.calibrate(**kw).to_dict())
        assert got == want


@pytest.mark.parametrize("sigma,count,delta", [(170, 112, 1e-5), (2.385, 13, 1e-6),
                                               (41.7, 900, 3e-7)])
def test_gaussian_exact_is_the_gdp_closed_form(sigma, count, delta):
    r = dpgd.account([dpgd.Gaussian(sigma=sigma, count=count)], delta=delta)
    mu = math.sqrt(count) / sigma
    want = gdp_epsilon(mu, delta)
    assert r.gdp_mu == pytest.approx(mu, rel=1e-14)
    # An upper bound: never below the closed form, above it by at most its error bound
    # and the bisection's resolution.
    assert r.exact.eps >= want - 1e-12
    assert r.exact.eps <= want + r.exact.err + 1e-9
    # delta at that eps, the other way round.
    d = dpgd.account([dpgd.Gaussian(sigma=sigma, count=count)], epsilon=want).exact.delta
    assert d >= gdp_delta(mu, want) * (1 - 1e-9)
    assert d <= gdp_delta(mu, want) * (1 + 1e-6) + 1e-15


def test_print_shows_exact_eps_rounded_up_beside_every_method():
    r = dpgd.account([dpgd.Gaussian(sigma=170, count=112)], delta=1e-5)
    text = str(r)
    want = math.ceil(gdp_epsilon(math.sqrt(112) / 170, 1e-5) * 1e4) / 1e4
    assert "%.4f" % want == "0.2033"  # docs/MATH.md's worked example
    lines = {ln.split()[0]: ln.split() for ln in text.splitlines()}
    assert lines["exact"][1] == "0.2033"
    for m in dpgd.METHODS:
        assert float(lines[m][1]) >= getattr(r, m).eps  # rounded up, never down
    # The CLI's table: the same methods in the same order.
    cli_methods = [ln.split()[0] for ln in cli("account", "--gaussian",
                                               "sigma=170,count=112")[1].splitlines()[3:]]
    assert [ln.split()[0] for ln in text.splitlines()[3:]] == cli_methods


def test_counts_compose():
    a = dpgd.account([dpgd.Gaussian(sigma=9.5)] * 4 + [dpgd.Gaussian(sigma=9.5, count=3)])
    b = dpgd.account([dpgd.Gaussian(sigma=9.5, count=7)])
    c = dpgd.account(7 * dpgd.Gaussian(sigma=9.5))
    assert a.releases == b.releases == c.releases == 7
    for m in dpgd.METHODS:
        assert getattr(a, m).eps == getattr(b, m).eps == getattr(c, m).eps


def test_methods_not_applying_say_why():
    r = dpgd.account([dpgd.Laplace(b=2.0)], delta=1e-5)
    assert r.zcdp.eps is None and r.zcdp.reason
    assert r.exact.eps > 0
    only = dpgd.account([dpgd.Gaussian(sigma=3)], methods=["zcdp"])
    assert list(only.methods) == ["zcdp"]
