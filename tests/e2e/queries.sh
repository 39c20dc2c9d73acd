# queries.sh -- 'dpgd queries' end to end: synthetic activity data from
# data/make-activity.py answered with individual filtering and with plain composition;
# the files and their headers, the same guarantee for both (same kappa), answers within
# the accuracy bound of the true sums when nothing is capped, vector queries, secure
# rng, and one-line errors with a non-zero exit for every bad input.
. "$(dirname "$0")/lib.sh"
SRC=${DPGD_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
GEN=$SRC/data/make-activity.py
CMP=$SRC/data/compare-queries.py

# py CHECKNAME SCRIPT: runs SCRIPT (python3) in $TMP; a non-zero exit fails.
py() {
  checks=$((checks + 1))
  (cd "$TMP" && python3 - >"$TMP/py" 2>&1 <<PYEOF) || fail "$1: $(tail -c 400 "$TMP/py")"
import csv, json, math, sys
def summary(d): return json.load(open(d + "/summary.json"))
def rows(p): return list(csv.reader(open(p)))
$2
PYEOF
}

# Sparse users only (at most 4 days each, budget 4): nothing is ever capped, so the
# filtered answers are the true sums plus noise. Then dense users too.
expect_ok gen python3 "$GEN" --users 300 --days 30 --seed 7 --dense 0 --sparse-max 4 \
  --truth "$TMP/truth.csv"
cp "$TMP/out" "$TMP/sparse.csv"
expect_ok gen-dense python3 "$GEN" --users 300 --days 30 --seed 8 --dense 0.05 --truth "$TMP/truth-d.csv"
cp "$TMP/out" "$TMP/dense.csv"
expect_ok gen-same python3 "$GEN" --users 300 --days 30 --seed 7 --dense 0 --sparse-max 4
checks=$((checks + 1))
cmp -s "$TMP/out" "$TMP/sparse.csv" || fail "gen-same: the generator is not reproducible from its seed"

expect_ok help "$DPGD" queries --help
expect_out help-usage '^usage: dpgd queries --data FILE.csv --budget B_NORM --kappa K --out DIR'
expect_out help-plain '^  --plain '
expect_ok top-help "$DPGD" --help
expect_out top-help-lists '^  queries '

Q=("$DPGD" queries --kappa 0.5 --delta 1e-6)
expect_ok filtered "${Q[@]}" --data "$TMP/sparse.csv" --budget 4 --out "$TMP/f"
expect_out filtered-table '^queries +30 answered \(dim 1\), 300 users'
expect_out filtered-eps 'eps exact [0-9.]+, zcdp [0-9.]+'
checks=$((checks + 1))
grep -q 'diagnostic' "$TMP/out" && fail "filtered: a diagnostic printed without --diagnostics"
checks=$((checks + 1))
grep -q '^dpgd: warning: research rng' "$TMP/err" || fail "filtered: no research caveat on stderr"
expect_ok plain "${Q[@]}" --data "$TMP/sparse.csv" --plain --out "$TMP/p" --diagnostics
expect_out plain-diag '^diagnostic \(not private\): [0-9]+ of 300 users ended inactive'

py files '
for d, filt, clip, budget in (("f", "individual", 1, 4), ("p", "plain", 1, 30)):
    a = rows(d + "/answers.csv")
    assert a[0] == ["query", "answer"], a[0]
    assert [r[0] for r in a[1:]] == ["day%02d" % k for k in range(1, 31)], a[:3]
    assert all(math.isfinite(float(r[1])) for r in a[1:])
    u = open(d + "/users.csv").read().splitlines()
    assert u[0].startswith("#") and "SENSITIVE" in u[0], u[0]
    assert "delta_level is the share of delta" in u[0] and "not a delta on its own" in u[0], u[0]
    assert u[1].split(",")[:4] == ["user", "spend", "spend_frac", "active"], u[1]
    assert len(u) == 302, len(u)
    s = summary(d)
    assert s["command"] == "queries" and s["filter"] == filt, s
    assert s["users"] == 300 and s["queries"] == 30 and s["dim"] == 1, s
    assert s["clip"] == clip and s["budget"] == budget and s["kappa"] == 0.5, s
    assert s["delta"] == 1e-6 and s["rng"] == "research" and "caveat" in s, s
    assert abs(s["sigma"] - math.sqrt(budget / 1.0)) <= 1e-9 * s["sigma"], s["sigma"]
    assert s["sigma"] >= math.sqrt(budget / 1.0), s["sigma"]
    assert s["mu"] >= 1 and s["mu"] - 1 < 1e-9, s["mu"]
    b = s["accuracy"]
    assert b["beta"] == 0.05 and b["norm"] == "inf", b
    ref = s["sigma"] * math.sqrt(2 * math.log(1 / 0.05))
    assert b["bound"] >= ref * (1 - 1e-9) and b["bound"] <= ref * (1 + 1e-6), (b, ref)
    assert set(s["eps"]) == {"exact", "zcdp", "rdp_classic", "rdp_balle", "rdp_optimal"}
    assert s["odometer"]["levels"] >= 1, s["odometer"]
assert summary("f")["eps"] == summary("p")["eps"], (summary("f")["eps"], summary("p")["eps"])
'
# eps of 1-GDP at delta 1e-6 (kappa 0.5): the Gaussian curve, recomputed here.
py eps-exact '
Phi = lambda x: 0.5 * math.erfc(-x / math.sqrt(2))
d = lambda e: Phi(-e + 0.5) - math.exp(e) * Phi(-e - 0.5)
lo, hi = 0.0, 20.0
for _ in range(200):
    m = (lo + hi) / 2
    lo, hi = (m, hi) if d(m) > 1e-6 else (lo, m)
e = summary("f")["eps"]["exact"]
assert hi <= e <= hi * (1 + 1e-8), (e, hi)
z = 0.5 + 2 * math.sqrt(0.5 * math.log(1e6))
assert z <= summary("f")["eps"]["zcdp"] <= z * (1 + 1e-8), summary("f")["eps"]
'
# Nothing capped: |answer - true sum| <= bound for about 95% of the queries (the run is
# seeded, so this is deterministic; 80% leaves room for any seed).
py accuracy '
t = {r[0]: float(r[1]) for r in rows("truth.csv")[1:]}
for d in ("f", "p"):
    b = summary(d)["accuracy"]["bound"]
    ok = sum(abs(float(r[1]) - t[r[0]]) <= b for r in rows(d + "/answers.csv")[1:])
    assert ok >= 24, (d, ok)
'
# Reproducible in research mode; a new draw in secure mode (no caveat).
expect_ok again "${Q[@]}" --data "$TMP/sparse.csv" --budget 4 --out "$TMP/f2"
checks=$((checks + 1))
cmp -s "$TMP/f/answers.csv" "$TMP/f2/answers.csv" || fail "again: same seed, other answers"
expect_ok secure "${Q[@]}" --data "$TMP/sparse.csv" --budget 4 --rng secure --out "$TMP/s"
checks=$((checks + 1))
grep -q 'warning' "$TMP/err" && fail "secure: a research caveat in secure mode"
# Secure mode: exact discrete Gaussian noise on the integer sums, eps from the discrete
# Gaussian's proven zCDP bound (the theorem named), no floating-point caveat; research
# mode says its sampler is the continuous one.
expect_out secure-noise '^noise +exact discrete Gaussian N_Z\(0, [0-9]+\) on the int64 sums in units of 2\^-[0-9]+'
expect_out secure-theorem '^guarantee .*eps zcdp [0-9.]+, rdp_optimal [0-9.]+ \(exact n/a.*docs/MATH.md section 18'
checks=$((checks + 1))
grep -q '^caveat' "$TMP/out" && fail "secure: a floating-point caveat on discrete noise"
expect_ok research-noise "${Q[@]}" --data "$TMP/sparse.csv" --budget 4 --out "$TMP/f3"
expect_out research-noise-line '^noise +Gaussian, sigma = 2, continuous sampler in floating point, rng research'
py secure '
s = summary("s"); assert s["rng"] == "secure" and "caveat" not in s, s
assert "noise_caveat" not in s, s
n = s["noise"]
assert n["mechanism"] == "discrete_gaussian" and n["sum"] == "int64, exact", n
assert n["theorem"].startswith("docs/MATH.md section 18, proven there"), n
F = n["grid_bits"]; assert s["quantum"] == 2.0 ** -F, (s["quantum"], F)
# sigma_grid^2 = ceil((sigma 2^F)^2), sigma 2^F <= 2^31
from fractions import Fraction
sg = Fraction(s["sigma"]) * 2 ** F
assert sg <= 2 ** 31 and n["sigma2_grid"] >= sg * sg and n["sigma2_grid"] - 1 < sg * sg * (1 + Fraction(1, 10**9)), n
# released answers: integers in units of 2^-F (the exact sum plus integer noise)
for r in rows("s/answers.csv")[1:]:
    u = Fraction(float(r[1])) * 2 ** F
    assert u.denominator == 1, (r, u)
# eps: the discrete Gaussian of mu = sqrt(2 kappa) = 1: exact null, zcdp = rho + 2 sqrt(rho log 1/delta)
assert s["eps"]["exact"] is None and s["mu"] is None and s["odometer"] is None, s
z = 0.5 + 2 * math.sqrt(0.5 * math.log(1e6))
assert z <= s["eps"]["zcdp"] <= z * (1 + 1e-8), s["eps"]
r = summary("f")
for m in ("zcdp", "rdp_classic", "rdp_balle", "rdp_optimal"):
    assert abs(s["eps"][m] - r["eps"][m]) <= 1e-8 * r["eps"][m], (m, s["eps"], r["eps"])
assert abs(n["eps_continuous"] - r["eps"]["exact"]) <= 1e-8 * r["eps"]["exact"], (n, r["eps"])
assert r["noise"]["mechanism"] == "gaussian" and "continuous" in r["noise"]["sampler"], r
assert rows("s/answers.csv") != rows("f/answers.csv")
u = open("s/users.csv").read().splitlines()
assert u[2].endswith(",,,,"), u[2]
'
# A 128-bit seed (0x and 32 hex digits) keys the noise with every bit: one equal to the
# default seed 1 in its low 64 bits gives other answers, and summary.json leaves it out;
# a seed that is not one is refused with one line.
expect_ok long-seed "${Q[@]}" --data "$TMP/sparse.csv" --budget 4 --out "$TMP/l" \
  --seed 0x8f3a0000000000000000000000000001
py long-seed '
s = summary("l"); assert s["seed"] is None and "128 bits" in s["caveat"], s
assert rows("l/answers.csv") != rows("f/answers.csv")
'
expect_fail bad-seed "--seed: '0x12g' is not a seed" "${Q[@]}" --data "$TMP/sparse.csv" \
  --budget 4 --out "$TMP/bs" --seed 0x12g
expect_fail big-decimal-seed "is below 2.64" "${Q[@]}" --data "$TMP/sparse.csv" --budget 4 \
  --out "$TMP/bs" --seed 18446744073709551616
# Dense users are capped; the comparison table of the README runs.
expect_ok dense "${Q[@]}" --data "$TMP/dense.csv" --budget 4 --out "$TMP/df"
expect_ok dense-plain "${Q[@]}" --data "$TMP/dense.csv" --plain --out "$TMP/dp"
expect_ok compare python3 "$CMP" "$TMP/truth-d.csv" filtered="$TMP/df" plain="$TMP/dp"
expect_out compare-row '^\| filtered \| individual \| [0-9.]+ \| [0-9.]+ \| 30 of 30 \| [0-9]+ of 30 \|'

# Vector queries: a.0, a.1 and b.0, b.1 are two queries of dim 2.
printf 'a.0,a.1,b.0,b.1\n1,0,0.5,0.25\n0,1,1,1\n0.125,0,0,0\n' >"$TMP/vec.csv"
expect_ok vector "${Q[@]}" --data "$TMP/vec.csv" --budget 2 --out "$TMP/v"
py vector '
a = rows("v/answers.csv")
assert a[0] == ["query", "answer_0", "answer_1"] and [r[0] for r in a[1:]] == ["a", "b"], a
assert summary("v")["dim"] == 2 and summary("v")["queries"] == 2
'
expect_ok vector-plain "${Q[@]}" --data "$TMP/vec.csv" --plain --out "$TMP/vp"
py vector-plain '
s = summary("vp"); assert s["budget"] == 4 and abs(s["clip"] - math.sqrt(2)) < 1e-9, s
'

# Bad inputs: one line on stderr, non-zero exit, nothing released.
bad() { printf "$2" >"$TMP/$1.csv"; }
bad v15 'a,b\n0,1.5\n'
bad empty 'a,b\n0,\n'
bad dims 'a.0,a.1,b\n0,1,1\n'
bad gap 'a.0,a.2\n0,1\n'
bad orphan 'a.1\n1\n'
bad twice 'a,a.0\n1,1\n'
bad norows 'a,b\n'
bad neg 'a\n-0.5\n'
bad text 'a\nyes\n'
F=("${Q[@]}" --budget 4 --out "$TMP/bad")
expect_fail missing 'cannot open .*nope\.csv' "${F[@]}" --data "$TMP/nope.csv"
expect_fail value-1.5 "column 'b'.*1\.5 outside \[0, 1\]" "${F[@]}" --data "$TMP/v15.csv"
expect_fail empty-field "column 'b'.*empty field" "${F[@]}" --data "$TMP/empty.csv"
expect_fail dims "'b' has dim 1 but 'a' has dim 2" "${F[@]}" --data "$TMP/dims.csv"
expect_fail gap "column 'a\.2' follows 'a\.0'" "${F[@]}" --data "$TMP/gap.csv"
expect_fail orphan "'a\.1' is not preceded" "${F[@]}" --data "$TMP/orphan.csv"
expect_fail twice "two queries are named 'a'" "${F[@]}" --data "$TMP/twice.csv"
expect_fail no-rows 'no data rows' "${F[@]}" --data "$TMP/norows.csv"
expect_fail negative '-0\.5 outside' "${F[@]}" --data "$TMP/neg.csv"
expect_fail text 'not a finite number' "${F[@]}" --data "$TMP/text.csv"
expect_fail budget-0 '--budget must be > 0' "${Q[@]}" --data "$TMP/sparse.csv" --budget 0 --out "$TMP/bad"
expect_fail kappa-nan "--kappa: 'nan' is not a finite number" "$DPGD" queries --data "$TMP/sparse.csv" \
  --budget 4 --kappa nan --out "$TMP/bad"
expect_fail no-kappa '--kappa K is required' "$DPGD" queries --data "$TMP/sparse.csv" --budget 4 --out "$TMP/bad"
expect_fail no-budget '--budget B_NORM is required' "${Q[@]}" --data "$TMP/sparse.csv" --out "$TMP/bad"
expect_fail plain-budget '--plain takes no --budget' "${Q[@]}" --data "$TMP/sparse.csv" --plain --budget 4 --out "$TMP/bad"
expect_fail delta '--delta must lie in' "${F[@]}" --data "$TMP/sparse.csv" --delta 1
expect_fail beta '--beta must lie in' "${F[@]}" --data "$TMP/sparse.csv" --beta 0
expect_fail rng '--rng must be research or secure' "${F[@]}" --data "$TMP/sparse.csv" --rng fast
expect_fail unknown "unknown option '--bogus'" "${F[@]}" --data "$TMP/sparse.csv" --bogus
expect_fail no-out '--out DIR is required' "${Q[@]}" --data "$TMP/sparse.csv" --budget 4
expect_fail no-value '--out needs a value' "${Q[@]}" --data "$TMP/sparse.csv" --budget 4 --out
checks=$((checks + 1))
[ -e "$TMP/bad/answers.csv" ] && fail "bad inputs: answers.csv written"
cp "$TMP/f/answers.csv" "$TMP/f-answers.before"
expect_fail existing-out 'already holds answers\.csv' "${Q[@]}" --data "$TMP/sparse.csv" --budget 4 \
  --out "$TMP/f"
checks=$((checks + 1))
cmp -s "$TMP/f/answers.csv" "$TMP/f-answers.before" || fail "existing-out: answers.csv overwritten"
printf 'x' >"$TMP/file"
expect_fail out-is-file 'cannot create directory' "${F[@]}" --data "$TMP/sparse.csv" --out "$TMP/file/sub"
finish
