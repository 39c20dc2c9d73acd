"""dpgd.Filter from Python: the filter's property test (random charges never put a point
over its budget; a cap always fits), its boundaries, save/load and the odometer report."""

import math

import numpy as np
import pytest

import dpgd
from conftest import gdp_epsilon


def _property_run(f, rng, rounds, sigma):
    n = f.n
    budget = np.atleast_1d(f.budget)
    for _ in range(rounds):
        want = rng.uniform(0.05, 1.7, size=n)
        caps = f.cap(want, sigma)
        assert np.all(caps <= want) and np.all(caps >= 0)
        active = f.active()
        assert np.all((caps > 0) <= active)  # a halted point gets cap 0
        before = [f.spent(j) for j in range(len(budget))]
        # A cap always fits: every charge of cap^2 is made.
        assert np.all(f.charge(caps ** 2, sigma))
        for j, b in enumerate(budget):
            s = f.spent(j)
            assert np.all(s <= b) and np.all(s >= before[j])
        # Random charges beyond the caps: refused ones leave the point unchanged.
        before = [f.spent(j) for j in range(len(budget))]
        extra = rng.uniform(0, 0.6, size=n) ** 2
        done = f.charge(extra, sigma)
        for j, b in enumerate(budget):
            s = f.spent(j)
            assert np.all(s <= b)
            assert np.all(s[~done] == before[j][~done])
            assert np.all(s[done & (extra > 0)] > before[j][done & (extra > 0)])
        f.check()
        spent_all = np.stack([f.spent(j) for j in range(len(budget))])
        assert np.array_equal(f.active(), np.all(spent_all < budget[:, None], axis=0))
        assert f.n_active == int(f.active().sum())


def test_gdp_filter_property():
    rng = np.random.default_rng(2385)
    f = dpgd.Filter(37, budget=4.125, currency="gdp")
    _property_run(f, rng, 60, sigma=1.0)
    assert f.n_active < f.n  # the run did exhaust points


def test_zcdp_and_rdp_filters_property():
    rng = np.random.default_rng(17)
    _property_run(dpgd.Filter(23, budget=1.3, currency="zcdp"), rng, 40, sigma=0.85)
    f = dpgd.Filter(23, budget=[2.1, 3.7, 6.25], currency="rdp", orders=[2.5, 8, 32])
    _property_run(f, rng, 40, sigma=1.15)
    assert np.array_equal(f.budget, [2.1, 3.7, 6.25])


def test_boundaries():
    c = 2.375
    f = dpgd.Filter(3, budget=2 * c * c)
    # Remaining budget exactly one step's cost: the cap is C itself, no sqrt.
    assert np.all(f.cap(c) == c)
    assert np.all(f.charge(np.full(3, c * c)))
    assert np.all(f.cap(c) == c)
    assert np.all(f.charge([c * c, 0.0, c * c]))
    assert list(f.active()) == [False, True, False]  # exhausted on the last step
    assert list(f.cap(c)) == [0.0, c, 0.0]
    assert not f.charge([1e-300, 0, 0])[0]  # nothing fits an exhausted point
    # An infinite budget is an odometer: every charge is made, cap is always want.
    o = dpgd.Filter(2, budget=math.inf)
    assert np.all(o.charge([1e6, 3.5])) and np.all(o.cap(7.25) == 7.25)


def test_save_load_round_trip(tmp_path):
    rng = np.random.default_rng(5)
    f = dpgd.Filter(11, budget=3.3)
    f.charge(f.cap(rng.uniform(0.1, 1.5, 11)) ** 2)
    p = tmp_path / "filter.bin"
    f.save(p)
    g = dpgd.Filter.load(p)
    assert g.n == 11 and g.budget == 3.3 and g.currency == "gdp"
    assert np.array_equal(g.spent(), f.spent())
    assert np.array_equal(g.active(), f.active())
    raw = bytearray(f.to_bytes())
    raw[len(raw) // 2] ^= 0x40
    with pytest.raises(dpgd.Error):
        dpgd.Filter.from_bytes(bytes(raw))
    with pytest.raises(dpgd.Error):
        dpgd.Filter.from_bytes(b"DPGDFILT")


def test_guarantee_and_report():
    sigma_c, budget, delta = 23.5, 1200.0, 1e-5
    f = dpgd.Filter(5, budget=budget)
    # The run's guarantee: sqrt(B)/unit-GDP, the Gaussian closed form.
    mu = math.sqrt(budget) / sigma_c
    eps = f.epsilon(delta, "exact", unit=sigma_c)
    assert gdp_epsilon(mu, delta) - 1e-12 <= eps <= gdp_epsilon(mu, delta) + 1e-9
    # Spends of 0, a quarter, half, almost all and all of the budget.
    for i, frac in enumerate([0, 0.25, 0.5, 0.99, 1.0]):
        if frac:
            assert f.charge(np.where(np.arange(5) == i, frac * budget, 0.0))[i]
    rep = f.report(delta, max_step_mu2=10.0 / sigma_c ** 2, unit=sigma_c)
    assert np.all(np.diff(rep["eps"]) >= 0)  # never decreases with the spend
    assert np.all(rep["mu"] ** 2 >= f.spent() / sigma_c ** 2 * (1 - 1e-12))
    # A point that spent everything is reported at its level's statement, which is
    # no better than the run's guarantee at the top level's share (0.9 delta).
    assert rep["eps"][4] >= eps
    assert rep["eps"][4] <= gdp_epsilon(mu, 0.9 * delta) + 1e-9
    assert rep["levels"] >= 1
