#!/usr/bin/env python3
"""make-activity.py -- synthetic activity data for `dpgd queries`: one row per user, one
column per day (a query), value 1 where the user took part in that day's activity, else
0. Most users are sparse (each takes part on a few days, 1 to --sparse-max, chosen at
random); a fraction --dense of them are dense (each day with probability --dense-rate).
Seeded: the same arguments give the same file. Python 3 standard library only.

  python3 data/make-activity.py --users 5000 --days 200 --seed 1 \
      --truth truth.csv > activity.csv

--truth FILE also writes the true answers (the full-data sum of each column, nothing
capped) as query,answer, for comparing the noisy answers with them."""
import argparse
import random
import sys


def positive_int(text):
    v = int(text)
    if v < 1:
        raise argparse.ArgumentTypeError("must be >= 1")
    return v


def fraction(text):
    v = float(text)
    if not 0 <= v <= 1:
        raise argparse.ArgumentTypeError("must lie in [0, 1]")
    return v


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--users", type=positive_int, required=True, help="number of users (rows)")
    p.add_argument("--days", type=positive_int, required=True,
                   help="number of days (columns, queries)")
    p.add_argument("--seed", type=int, default=1, help="random seed (default 1)")
    p.add_argument("--dense", type=fraction, default=0.005,
                   help="fraction of dense users (default 0.005)")
    p.add_argument("--dense-rate", type=fraction, default=0.5,
                   help="a dense user's chance to take part on each day (default 0.5)")
    p.add_argument("--sparse-max", type=positive_int, default=8,
                   help="a sparse user takes part on 1..this many days (default 8)")
    p.add_argument("--prefix", default="day", help="column name prefix (default 'day')")
    p.add_argument("--truth", metavar="FILE", help="also write the true answers here")
    return p.parse_args()


def user_days(rng, a):
    """The set of days one user takes part in."""
    if rng.random() < a.dense:
        return {d for d in range(a.days) if rng.random() < a.dense_rate}
    return set(rng.sample(range(a.days), rng.randint(1, min(a.sparse_max, a.days))))


def main():
    a = parse_args()
    rng = random.Random(a.seed)
    width = len(str(a.days))
    names = ["%s%0*d" % (a.prefix, width, d + 1) for d in range(a.days)]
    totals = [0] * a.days
    out = sys.stdout
    out.write(",".join(names) + "\n")
    for _ in range(a.users):
        days = user_days(rng, a)
        for d in days:
            totals[d] += 1
        out.write(",".join("1" if d in days else "0" for d in range(a.days)) + "\n")
    if a.truth:
        with open(a.truth, "w") as f:
            f.write("query,answer\n")
            for name, t in zip(names, totals):
                f.write("%s,%d\n" % (name, t))


if __name__ == "__main__":
    main()
