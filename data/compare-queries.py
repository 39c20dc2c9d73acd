#!/usr/bin/env python3
"""compare-queries.py -- how many queries `dpgd queries` runs answered within a tolerance
of the true (full-data) answers that data/make-activity.py --truth wrote: one markdown
table row per run directory, for comparing individual filtering with plain composition
at the same guarantee (README, "Sparse linear queries"). Python 3 standard library only.

  python3 data/compare-queries.py truth.csv filtered=q-filtered plain=q-plain \
      plain-stop=q-stop

A run that answered fewer queries than the truth has (e.g. plain composition stopped
after floor(B/d) queries) counts the queries it did not answer as not within the
tolerance. The tolerance is --tol, or by default the accuracy bound (Corollary 4.7, at
the run's beta) in the summary.json of the first run."""
import argparse
import csv
import decimal
import json
import os
import statistics
import sys


def read_answers(path):
    """{query: [answer, ...]} of a query,answer... CSV."""
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    if not rows or rows[0][0] != "query":
        sys.exit("compare-queries.py: %s: no 'query' header" % path)
    return {r[0]: [float(x) for x in r[1:]] for r in rows[1:]}


def up(x, digits=4):
    """x rounded up to `digits` significant digits, as dpgd shows eps and sigma; "n/a"
    for null (a secure run has no exact eps)."""
    if x is None:
        return "n/a"
    d = decimal.Decimal(repr(x))
    q = decimal.Decimal(1).scaleb(d.adjusted() - digits + 1)
    return str(d.quantize(q, rounding=decimal.ROUND_CEILING))


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("truth", help="true answers (make-activity.py --truth)")
    p.add_argument("runs", nargs="+", metavar="LABEL=DIR", help="dpgd queries output dirs")
    p.add_argument("--tol", type=float, help="absolute tolerance (default: first run's bound)")
    return p.parse_args()


def run_row(label, d, truth, tol):
    s = json.load(open(os.path.join(d, "summary.json")))
    ans = read_answers(os.path.join(d, "answers.csv"))
    errs = [max(abs(a - t) for a, t in zip(ans[q], truth[q])) for q in truth if q in ans]
    within = sum(e <= tol for e in errs)
    med = "%.1f" % statistics.median(errs) if errs else "-"
    return "| %s | %s | %s | %s | %d of %d | %d of %d | %s |" % (
        label, s["filter"], up(s["sigma"]), up(s["eps"]["exact"]), len(errs), len(truth),
        within, len(truth), med)


def main():
    a = parse_args()
    truth = read_answers(a.truth)
    runs = [r.split("=", 1) if "=" in r else (os.path.basename(r), r) for r in a.runs]
    tol = a.tol
    if tol is None:
        tol = json.load(open(os.path.join(runs[0][1], "summary.json")))["accuracy"]["bound"]
    print("tolerance %s (|answer - true answer|, max over the answer's entries)\n" % up(tol))
    print("| run | filter | sigma | eps exact | answered | within tolerance | median error |")
    print("|---|---|---|---|---|---|---|")
    for label, d in runs:
        print(run_row(label, d, truth, tol))


if __name__ == "__main__":
    main()
