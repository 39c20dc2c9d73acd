"""Bad arguments raise dpgd.Error carrying dpgd's one-line message; none crashes."""

import math

import numpy as np
import pytest

import dpgd
from conftest import cli

NAN = float("nan")


@pytest.mark.parametrize("make", [
    lambda: dpgd.Gaussian(sigma=NAN),
    lambda: dpgd.Gaussian(sigma=-1.5),
    lambda: dpgd.Gaussian(sigma=0),
    lambda: dpgd.Gaussian(sigma=2, mu=0.5),
    lambda: dpgd.Gaussian(),
    lambda: dpgd.Gaussian(sigma="3"),
    lambda: dpgd.Gaussian(sigma=3, count=0),
    lambda: dpgd.Gaussian(sigma=3, count=2.5),
    lambda: dpgd.Gaussian(sigma=3, count=-4),
    lambda: dpgd.Laplace(b=-2.0),
    lambda: dpgd.Discrete(p=[0.5, 0.5], q=[1.0]),
    lambda: dpgd.Discrete(p=[["a"]], q=[1.0]),
    lambda: dpgd.WorGaussian(m=5, n=10, sigma=1, sensitivity=2, relation="swap"),
    lambda: dpgd.WorGaussian(m=5, n=10, sigma=1, relation="replace-one"),
    lambda: dpgd.WorGaussian(m=5, n=10, sigma=1, sensitivity=2),
])
def test_bad_mechanisms_raise(make):
    with pytest.raises(dpgd.Error) as e:
        make()
    assert str(e.value) and "\n" not in str(e.value)


@pytest.mark.parametrize("mech,flag,spec", [
    (lambda: dpgd.Gaussian(mu=-0.5), "--gaussian", "mu=-0.5"),
    (lambda: dpgd.RandomizedResponse(eps0=-1.0), "--rr", "eps0=-1"),
    (lambda: dpgd.Subsampled(q=1.5, sigma=1.0), "--subsampled", "q=1.5,sigma=1"),
    (lambda: dpgd.Subsampled(q=0.1, sigma=-1.0), "--subsampled", "q=0.1,sigma=-1"),
    (lambda: dpgd.WorGaussian(m=20, n=10, sigma=1.0, sensitivity=1, relation="add-remove"),
     "--wor-gaussian", "m=20,n=10,sigma=1,sensitivity=1,relation=add-remove"),
    (lambda: dpgd.Discrete(p=[0.5, 0.6], q=[0.5, 0.5]), "--discrete", "p=0.5:0.6,q=0.5:0.5"),
])
def test_library_refusals_carry_the_c_message(mech, flag, spec):
    with pytest.raises(dpgd.Error) as e:
        dpgd.account([mech()])
    rc, _, err = cli("account", flag, spec, check=False)
    assert rc != 0
    assert str(e.value) in err  # the CLI prints the same library message


def test_nan_parameters_reach_the_library_and_are_refused():
    for m in [dpgd.Gaussian(mu=NAN), dpgd.Laplace(a=NAN), dpgd.Subsampled(q=NAN, sigma=1),
              dpgd.RandomizedResponse(eps0=NAN)]:
        with pytest.raises(dpgd.Error) as e:
            dpgd.account([m])
        assert "nan" in str(e.value)


@pytest.mark.parametrize("kw", [dict(delta=0), dict(delta=1), dict(delta=NAN),
                                dict(delta=-1e-5), dict(delta=1e-5, epsilon=1.0),
                                dict(epsilon=-0.5), dict(epsilon=NAN),
                                dict(methods=["exakt"]), dict(methods=[])])
def test_bad_questions_raise(kw):
    with pytest.raises(dpgd.Error):
        dpgd.account([dpgd.Gaussian(sigma=3.5)], **kw)


@pytest.mark.parametrize("kw", [dict(epsilon=0, steps=10), dict(epsilon=NAN, steps=10),
                                dict(epsilon=1, delta=1, steps=10), dict(epsilon=1),
                                dict(epsilon=1, steps=0), dict(epsilon=1, sigma=3),
                                dict(epsilon=1, sigma=-3, clip=1),
                                dict(epsilon=1, sigma=3, clip=1, steps=4)])
def test_bad_calibrations_raise(kw):
    with pytest.raises(dpgd.Error):
        dpgd.calibrate(**kw)


def test_filter_bad_input():
    for args in [dict(n=0, budget=1.0), dict(n=3, budget=-1.0), dict(n=3, budget=NAN),
                 dict(n=3, budget=1.0, currency="usd"), dict(n=3, budget=1.0,
                                                            currency="rdp"),
                 dict(n=3, budget=[1.0, 2.0], currency="rdp", orders=[0.5, 2.0])]:
        with pytest.raises(dpgd.Error):
            dpgd.Filter(**args)
    f = dpgd.Filter(4, budget=2.0)
    for bad in [np.ones(3), np.ones((4, 1)), [1, 2, NAN, 0], [1, -2, 0, 0],
                [math.inf, 0, 0, 0], np.array(["a"] * 4)]:
        with pytest.raises(dpgd.Error):
            f.charge(bad)
    assert np.all(f.spent() == 0)  # nothing was charged by a refused call
    for bad in [0.0, -1.0, NAN, np.ones(5)]:
        with pytest.raises(dpgd.Error):
            f.cap(bad)
    with pytest.raises(dpgd.Error):
        f.cap(1.0, sigma=0)
    with pytest.raises(dpgd.Error):
        f.epsilon(0.0)
    with pytest.raises(dpgd.Error):
        f.spent(order=1)
    # Non-contiguous arrays are accepted and give the contiguous result.
    x = np.arange(8, dtype=np.float64)[::2] * 0.25
    g = dpgd.Filter(4, budget=2.0)
    assert np.array_equal(f.charge(x), g.charge(np.ascontiguousarray(x)))
    assert np.array_equal(f.spent(), g.spent())


def test_private_sum_bad_input():
    for kw in [dict(n=0, dim=3, clip=1, sigma=1), dict(n=2, dim=0, clip=1, sigma=1),
               dict(n=2, dim=3, clip=-1, sigma=1), dict(n=2, dim=3, clip=1, sigma=-1),
               dict(n=2, dim=3, clip=1, sigma=NAN), dict(n=2, dim=3, clip=NAN, sigma=1),
               dict(n=2, dim=3, clip=1, sigma=1, budget=0),
               dict(n=2, dim=3, clip=1, sigma=1, budget=math.inf),
               dict(n=2, dim=3, clip=1, sigma=1, seed=-1)]:
        with pytest.raises(dpgd.Error):
            dpgd.PrivateSum(**kw)
    ps = dpgd.PrivateSum(2, 3, 1.0, 1.0, seed=1)
    for bad in [np.ones((3, 2)), np.ones(6), np.ones((2, 3, 1)), [[1, 2], [3]],
                np.array([["x"] * 3] * 2)]:
        with pytest.raises(dpgd.Error):
            ps.step(bad)
    assert ps.steps == 0 and np.all(ps.spent() == 0)  # nothing released or charged
    # A transposed (non-contiguous) view is copied and gives the contiguous result.
    g = np.arange(6, dtype=np.float64).reshape(3, 2).T * 0.1
    a, b = dpgd.PrivateSum(2, 3, 1.0, 1.0, seed=2), dpgd.PrivateSum(2, 3, 1.0, 1.0, seed=2)
    assert np.array_equal(a.step(g), b.step(np.ascontiguousarray(g)))


def test_bad_training_configs_raise_with_the_key(tmp_path):
    with pytest.raises(dpgd.Error) as e:
        dpgd.train({"privacy": {"sigma": -1.0}}, out=tmp_path / "a")
    assert "privacy.sigma" in str(e.value)
    with pytest.raises(dpgd.Error) as e:
        dpgd.train({"privacy.delta": 1.0}, out=tmp_path / "b")
    assert "privacy.delta" in str(e.value)
    with pytest.raises(dpgd.Error) as e:
        dpgd.train({"train": {"nonsense": 1}}, out=tmp_path / "c")
    assert "nonsense" in str(e.value)
    with pytest.raises(dpgd.Error) as e:
        dpgd.train(str(tmp_path / "missing.ini"))
    assert "missing.ini" in str(e.value)
    for bad in [42, {"train": {"steps": [1, 2]}}]:
        with pytest.raises(dpgd.Error):
            dpgd.train(bad)
