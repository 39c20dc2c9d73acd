"""dpgd.train runs the training `dpgd train` runs: a 2-step softmax run on the first
1000 MNIST images from a dict and from an INI file gives the model and the guarantee of
the CLI's run, bit for bit (research rng, same seed, same build and threads)."""

import math
import os

import numpy as np
import pytest

import dpgd
from conftest import cli, gdp_epsilon, mnist_dir

SIGMA, CLIP = 3.7, 2.375


def _config():
    return {"data": {"dir": mnist_dir(), "n_train": 1000, "n_test": 500},
            "model": {"type": "softmax"}, "train": {"steps": 2, "seed": 5},
            "privacy": {"sigma": SIGMA, "clip": CLIP}, "output": {"progress": False}}


def _ini(cfg, path):
    with open(path, "w") as f:
        for sec, kv in cfg.items():
            f.write("[%s]\n" % sec)
            for k, v in kv.items():
                f.write("%s = %s\n" % (k, str(v).lower() if isinstance(v, bool) else v))


def _read(path):
    with open(path, "rb") as f:
        return f.read()


def test_two_step_softmax_equals_the_cli(tmp_path):
    cfg = _config()
    with pytest.warns(UserWarning, match="research rng"):
        s_dict = dpgd.train(cfg, out=tmp_path / "py-dict")
    ini = tmp_path / "run.ini"
    _ini(cfg, ini)
    with pytest.warns(UserWarning):
        s_file = dpgd.train(str(ini), out=tmp_path / "py-file")
    cli("train", "--config", ini, "--out", tmp_path / "cli", "--quiet")
    model = _read(tmp_path / "cli" / "model.bin")
    assert _read(tmp_path / "py-dict" / "model.bin") == model
    assert _read(tmp_path / "py-file" / "model.bin") == model
    import json
    with open(tmp_path / "cli" / "summary.json") as f:
        s_cli = json.load(f)
    for s in (s_dict, s_file):
        assert s["steps"] == 2 and s["algorithm"] == "plain"
        assert s["eps"] == s_cli["eps"] and s["test_acc"] == s_cli["test_acc"]
    # The guarantee is 2 Gaussian steps, mu = sqrt(2)/sigma (docs/MATH.md "Private
    # gradient descent").
    mu = math.sqrt(2) / SIGMA
    assert s_dict["mu"] == pytest.approx(mu, rel=1e-9)
    want = gdp_epsilon(mu, 1e-5)
    assert want - 1e-12 <= s_dict["eps"]["exact"] <= want + 1e-8


def test_overrides_and_filtered_run(tmp_path):
    cfg = _config()
    with pytest.warns(UserWarning):
        s = dpgd.train(cfg, out=tmp_path / "f",
                       sets=["filter.enabled=true", "filter.k=1.5", "train.steps=3"])
    assert s["algorithm"].startswith("filtered") and s["steps"] == 3
    # B_norm = 1.5 C^2: mu = sqrt(B_norm)/(sigma C) whatever the number of steps.
    mu = math.sqrt(1.5) / SIGMA
    assert s["mu"] == pytest.approx(mu, rel=1e-9)
    assert os.path.exists(tmp_path / "f" / "points.csv")
