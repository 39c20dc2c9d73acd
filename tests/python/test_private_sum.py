"""dpgd.PrivateSum: the clipped sum against an independent clip in numpy, the noise's
scale, the ledger's invariants and the accounting against the GDP closed form."""

import math

import numpy as np
import pytest

import dpgd
from conftest import gdp_epsilon

SHRINK = 2.0 ** -20  # the engine's clip factor shrink (model/SENSITIVITY.md 3)


def _clip_ref(G, C):
    """Each row clipped to norm C (within the engine's relative shrink)."""
    G = G.astype(np.float32).astype(np.float64)
    norms = np.linalg.norm(G, axis=1)
    f = np.minimum(1.0, C / np.maximum(norms, 1e-300))
    return G * f[:, None], norms


def _pair(n, dim, clip, sigma, seed, budget=None):
    """Two sums with the same noise stream: the second gets zero gradients, so the
    difference of their outputs is the clipped sum alone."""
    return (dpgd.PrivateSum(n, dim, clip, sigma, budget=budget, seed=seed),
            dpgd.PrivateSum(n, dim, clip, sigma, budget=budget, seed=seed))


def test_clipped_sum_against_numpy():
    rng = np.random.default_rng(2385)
    n, dim, C = 40, 17, 1.375
    G = rng.normal(size=(n, dim)) * rng.uniform(0.01, 1.0, size=(n, 1))  # some unclipped
    a, b = _pair(n, dim, C, 2.5, seed=9)
    for _ in range(3):
        got = a.step(G) - b.step(np.zeros((n, dim)))
        clipped, norms = _clip_ref(G, C)
        assert np.any(norms < C) and np.any(norms > C)
        want = clipped.sum(axis=0)
        # Clipped rows lose a relative 2^-20 at most; the noise (std 2.5 C) cancels up
        # to its rounding.
        assert np.allclose(got, want, rtol=0, atol=n * C * 2 * SHRINK + 1e-9)


def test_each_contribution_within_its_cap_and_nan_rows_give_nothing():
    rng = np.random.default_rng(7)
    C = 0.8125
    for scale in [1e-3, 0.5, 3.0, 1e6]:
        g = rng.normal(size=(1, 33)) * scale
        a, b = _pair(1, 33, C, 1.5, seed=3)
        v = a.step(g) - b.step(np.zeros((1, 33)))
        assert np.linalg.norm(v) <= C * (1 + 1e-9)
        s = a.spent()[0]
        assert np.dot(v, v) * (1 - 1e-9) <= s <= C * C  # charged at least ||v||^2
    G = rng.normal(size=(3, 5))
    G[1, 2] = np.nan
    a, b = _pair(3, 5, C, 1.5, seed=4)
    v = a.step(G) - b.step(np.zeros((3, 5)))
    want = _clip_ref(G[[0, 2]], C)[0].sum(axis=0)
    assert np.allclose(v, want, atol=1e-9)
    assert a.spent()[1] == 0.0


def test_noise_scale_and_reproducibility():
    n, dim, C, sigma = 2, 40000, 1.5, 2.385
    out = dpgd.PrivateSum(n, dim, C, sigma, seed=11).step(np.zeros((n, dim)))
    # Sample std of 40000 normal draws: relative standard error 1/sqrt(80000) = 0.35%.
    assert abs(out.std() / (sigma * C) - 1) < 0.02
    assert abs(out.mean()) < 5 * sigma * C / math.sqrt(dim)
    again = dpgd.PrivateSum(n, dim, C, sigma, seed=11).step(np.zeros((n, dim)))
    assert np.array_equal(out, again)
    other = dpgd.PrivateSum(n, dim, C, sigma, seed=12).step(np.zeros((n, dim)))
    assert not np.array_equal(out, other)
    secure = dpgd.PrivateSum(n, 1000, C, sigma).step(np.zeros((n, 1000)))
    assert abs(secure.std() / (sigma * C) - 1) < 0.15
    # Secure: an exact integer sum plus a discrete Gaussian on a grid 2^-F, F <= 40, so
    # every coordinate is a multiple of 2^-40 (a float Gaussian draw almost never is).
    assert np.array_equal(secure * 2.0**40, np.round(secure * 2.0**40))


def test_secure_accounting_is_discrete():
    # Secure steps are discrete Gaussians: no exact curve; their Renyi curve is the
    # continuous Gaussian's (integer shifts), so rdp_optimal equals a Gaussian's.
    ps = dpgd.PrivateSum(4, 3, 2.0, 3.7)
    for _ in range(3):
        ps.step(np.ones((4, 3)))
    ref = dpgd.Accountant([dpgd.Gaussian(mu=1 / 3.7, count=3)])
    with pytest.raises(dpgd.Error):
        ps.epsilon(1e-5)  # exact
    got = ps.epsilon(1e-5, "rdp_optimal")
    assert got == ref.epsilon(1e-5, "rdp_optimal").value
    assert got > ref.epsilon(1e-5, "exact").value


def test_plain_accounting_is_k_gaussian_steps():
    ps = dpgd.PrivateSum(4, 3, 2.0, 3.7, seed=1)
    for _ in range(6):
        ps.step(np.ones((4, 3)))
    assert ps.steps == 6
    mine = ps.account(delta=1e-5)
    ref = dpgd.account([dpgd.Gaussian(mu=1 / 3.7, count=6)], delta=1e-5)
    for m in dpgd.METHODS:
        assert getattr(mine, m).eps == getattr(ref, m).eps
    mu = math.sqrt(6) / 3.7
    assert gdp_epsilon(mu, 1e-5) - 1e-12 <= ps.epsilon(1e-5) <= gdp_epsilon(mu, 1e-5) + 1e-9


def test_filtered_sum_stays_within_budget_and_accounts_the_filter():
    rng = np.random.default_rng(3)
    n, dim, C, sigma = 6, 8, 1.25, 2.0
    budget = 3.5 * C * C
    ps = dpgd.PrivateSum(n, dim, C, sigma, budget=budget, seed=5)
    G = rng.normal(size=(n, dim)) * 10  # every row clipped
    G[0] *= 0.01  # point 0 spends little per step
    for t in range(1, 7):
        ps.step(G)
        s = ps.spent()
        assert np.all(s <= budget)
        mu = math.sqrt(min(budget, t * C * C)) / (sigma * C)
        eps = ps.epsilon(1e-5)
        assert gdp_epsilon(mu, 1e-5) - 1e-12 <= eps <= gdp_epsilon(mu, 1e-5) + 1e-9
    act = ps.active()
    assert act[0] and not np.any(act[1:])  # the large rows spent their budget
    # An exhausted point contributes nothing: a step after exhaustion moves only by
    # point 0's clipped row.
    a, b = _pair(n, dim, C, sigma, 8, budget=budget)
    for _ in range(4):
        a.step(G)
        b.step(np.where(np.arange(n)[:, None] == 0, G, 0.0))
    assert np.array_equal(a.spent()[0], b.spent()[0])
    assert np.allclose(a.step(G), b.step(np.where(np.arange(n)[:, None] == 0, G, 0.0)),
                       atol=1e-9)


def test_gradient_of_norm_exactly_clip():
    # A row of norm exactly C (3-4-5 scaled: exact in float) is clipped by the engine's
    # rule, which cannot prove sq <= C^2 past its rounding: it loses at most 2^-19.
    C = 2.5
    g = np.zeros((1, 7))
    g[0, 1], g[0, 4] = 1.5, 2.0
    a, b = _pair(1, 7, C, 1.25, seed=21)
    v = a.step(g) - b.step(np.zeros((1, 7)))
    assert C * (1 - 2 * SHRINK) - 1e-12 <= np.linalg.norm(v) <= C * (1 + 1e-12)
    assert a.spent()[0] <= C * C


def test_filter_view_and_per_point_report():
    n, dim, C, sigma = 4, 3, 1.0, 2.5
    budget = 2.5 * C * C
    ps = dpgd.PrivateSum(n, dim, C, sigma, budget=budget, seed=2)
    G = np.zeros((n, dim))
    G[0, 0], G[1, 1], G[2, 2], G[3, 0] = 0.25, 0.5, 4.0, 8.0
    for _ in range(5):
        ps.step(G)
    f = ps.filter
    assert np.array_equal(f.spent(), ps.spent())
    assert f.budget == budget and f.currency == "gdp"
    unit = sigma * C
    # Everyone's guarantee is the run's: sqrt(B)/(sigma C)-GDP.
    assert f.epsilon(1e-5, unit=unit) == pytest.approx(ps.epsilon(1e-5), rel=1e-9)
    rep = f.report(1e-5, max_step_mu2=1 / sigma ** 2, unit=unit)
    assert np.all(rep["mu"] ** 2 >= ps.spent() / unit ** 2 * (1 - 1e-12))
    assert ps.spent()[0] < ps.spent()[3] == budget  # point 3 exhausted, point 0 not
    assert rep["eps"][0] <= rep["eps"][3]
    del ps  # the view keeps the sum alive
    assert f.n == n


def test_seed_keys_every_bit():
    """Seeds up to 2^256 (int or decimal/0x text); seeds equal in their low 64 bits
    give different noise, equal seeds (as int or text) the same."""
    n, dim = 2, 64
    z = np.zeros((n, dim))
    lo = 0x0123456789ABCDEF
    outs = [dpgd.PrivateSum(n, dim, 1.0, 1.0, seed=s).step(z)
            for s in (lo, lo + 2**64, lo + 2**255, hex(lo + 2**255), str(lo))]
    assert not np.array_equal(outs[0], outs[1])
    assert not np.array_equal(outs[0], outs[2])
    assert not np.array_equal(outs[1], outs[2])
    assert np.array_equal(outs[2], outs[3]) and np.array_equal(outs[0], outs[4])
    for bad in (2**256, -1, "0x", "12a", 1.5, True):
        with pytest.raises(dpgd.Error):
            dpgd.PrivateSum(n, dim, 1.0, 1.0, seed=bad)
