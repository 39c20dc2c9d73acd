"""seed_fuzz_config.py CORPUS -- seeds the config fuzzer with the project's configs and
a few overrides, so it starts from valid INI and mutates toward the edge cases."""
import glob
import os
import sys

corpus = sys.argv[1]
root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
seeds = [open(p, "rb").read() for p in sorted(glob.glob(os.path.join(root, "configs", "**", "*.ini"), recursive=True))]
seeds += [
    b"[privacy]\nsigma = 170\nclip = 10\ndelta = 1e-5\n[filter]\nenabled = true\nk = 112\n",
    b"privacy.sigma=2.385",
    b"train.steps=112",
    b"[model]\ntype = softmax\nactivation = tanh\n",
    b"[data]\ndir = /tmp/x\n; comment\n# comment\n",
]
for i, s in enumerate(seeds):
    with open(os.path.join(corpus, "seed_%03d" % i), "wb") as f:
        f.write(s)
