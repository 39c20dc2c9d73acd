# account.sh -- 'dpgd account' and 'dpgd calibrate' end to end: tables and JSON are
# parsed and checked against the Gaussian closed form of docs/MATH.md "The Gaussian curve"
# and its zCDP conversion, recomputed here in Python (independent of the C code);
# every bad input must give a one-line error naming it and a non-zero exit.
. "$(dirname "$0")/lib.sh"

# py CHECKNAME SCRIPT: runs SCRIPT with the last stdout on stdin; a non-zero exit fails.
py() {
  checks=$((checks + 1))
  python3 - "$TMP/out" >"$TMP/py" 2>&1 <<PYEOF || fail "$1: $(tail -c 400 "$TMP/py")"
import json, math, sys, re
out = open(sys.argv[1]).read()
def Phi(x): return 0.5 * math.erfc(-x / math.sqrt(2))
def gdp_delta(mu, eps): return Phi(-eps / mu + mu / 2) - math.exp(eps) * Phi(-eps / mu - mu / 2)
def gdp_eps(mu, delta):
    lo, hi = 0.0, 1.0
    while gdp_delta(mu, hi) > delta: hi *= 2
    for _ in range(200):
        mid = (lo + hi) / 2
        if gdp_delta(mu, mid) > delta: lo = mid
        else: hi = mid
    return hi
def row(name):
    for line in out.splitlines():
        f = line.split()
        if f and f[0] == name: return f
    raise SystemExit("no row " + name)
$2
PYEOF
}

# Table, 420 Gaussian steps at sigma 100 (mu = sqrt(420)/100).
expect_ok gauss "$DPGD" account --gaussian sigma=100,count=420 --delta 1e-5
expect_out gauss-head '^releases +420 in 1 entry \(Gaussian only: mu = 0\.20493901'
py gauss-values '
mu = math.sqrt(420) / 100
e = float(row("exact")[1]); ref = gdp_eps(mu, 1e-5)
assert abs(e - ref) <= 1e-9 * ref and e >= ref * (1 - 1e-12), (e, ref)
rho = mu * mu / 2; z = rho + 2 * math.sqrt(rho * math.log(1e5))
assert abs(float(row("zcdp")[1]) - z) <= 1e-9 * z
c, b, o = (float(row(m)[1]) for m in ("rdp_classic", "rdp_balle", "rdp_optimal"))
assert abs(c - z) <= 1e-6 * z, (c, z)          # classic RDP of a Gaussian is the zCDP bound
assert e <= o <= b * (1 + 1e-9) and b <= c, (e, o, b, c)
for m in ("exact", "zcdp", "rdp_classic", "rdp_balle", "rdp_optimal"):
    r = row(m); assert float(r[2]) >= 0 and float(r[3]) >= 0, r
'
# A few subsampled releases at a small rate: the exact value comes from the PLD path
# (its line says so), is a number (it printed n/a before) and its error bound, the
# bracket's width, is within 0.1 % of the value.
expect_ok sub-few "$DPGD" account --subsampled q=0.001,sigma=1,count=5 --method exact
py sub-few-pld '
f = row("exact"); e, err = float(f[1]), float(f[2])
assert f[4] == "pld" and f[5].startswith("h="), f
assert 0 < err <= 1e-3 * e and 0.0175 < e < 0.0185, f
'

# Splitting the same mu over entries gives the same exact eps (mu = sqrt(sum mu_j^2)).
expect_ok gauss-mix "$DPGD" account --gaussian mu=0.1,count=3 --gaussian sigma=50,sensitivity=2.5,count=2 --method exact
py gauss-mix-exact '
mu = math.sqrt(3 * 0.01 + 2 * 0.05 ** 2)
e = float(row("exact")[1]); ref = gdp_eps(mu, 1e-5)
assert abs(e - ref) <= 1e-9 * ref, (e, ref)
assert len([l for l in out.splitlines() if re.match(r"^(zcdp|rdp_)", l)]) == 0
'
# delta for an eps, JSON.
expect_ok gauss-delta "$DPGD" account --gaussian mu=0.5,count=3 --epsilon 1.5 --json
py gauss-delta-json '
j = json.loads(out); mu = math.sqrt(3) * 0.5
assert j["releases"] == 3 and j["entries"] == 1 and abs(j["gdp_mu"] - mu) < 1e-15
d = j["methods"]["exact"]["delta"]; ref = gdp_delta(mu, 1.5)
assert d >= ref and d - ref <= 1e-9 * ref, (d, ref)
assert j["methods"]["exact"]["err"] >= 0
rho = mu * mu / 2
assert abs(j["methods"]["zcdp"]["delta"] - math.exp(-(1.5 - rho) ** 2 / (4 * rho))) < 1e-12
'
# A composition with a Laplace: zcdp is n/a with its reason, RDP still answers.
expect_ok mixed "$DPGD" account --gaussian sigma=100,count=100 --laplace b=10,count=20 --rr eps0=0.5,count=10
expect_out mixed-na '^zcdp +n/a +\(zcdp applies to compositions of Gaussians and discrete Gaussians\)$'
expect_out mixed-rdp '^rdp_optimal +[0-9.]+(e[-+][0-9]+)? '
expect_ok mixed-json "$DPGD" account --laplace a=0.1,count=20 --json --method zcdp,rdp_balle
py mixed-json '
j = json.loads(out); m = j["methods"]
assert set(m) == {"zcdp", "rdp_balle"} and m["zcdp"]["eps"] is None and "discrete Gaussians" in m["zcdp"]["na"]
assert m["rdp_balle"]["eps"] > 0 and j["gdp_mu"] is None
'
# Exact accounting of non-Gaussian mechanisms against the oracles of docs/MATH.md
# "Exact accounting": k-fold RR
# (binomial sum) and one Laplace (1 - exp((eps - a)/2)).
expect_ok rr-exact "$DPGD" account --rr eps0=0.5,count=10 --epsilon 1 --json --method exact
py rr-exact '
p = math.exp(0.5) / (1 + math.exp(0.5))
ref = sum(math.comb(10, j) * p ** j * (1 - p) ** (10 - j) * (1 - math.exp(1 - 0.5 * (2 * j - 10)))
          for j in range(11) if 0.5 * (2 * j - 10) > 1)
d = json.loads(out)["methods"]["exact"]["delta"]
assert ref <= d <= ref * (1 + 1e-9), (d, ref)
'
expect_ok laplace-exact "$DPGD" account --laplace b=2 --epsilon 0.2 --method exact
py laplace-exact '
ref = 1 - math.exp((0.2 - 0.5) / 2); d = float(row("exact")[1])
assert ref * (1 - 1e-9) <= d <= ref * (1 + 1e-5), (d, ref)
'
expect_ok discrete "$DPGD" account --discrete p=0.5:0.3:0.2,q=0.3:0.3:0.4,count=2 --subsampled q=0.01,sigma=1,count=10 --method rdp_classic
expect_out discrete-rows '^rdp_classic +[0-9.]+'

# Calibration of sigma (Algorithm 6): the exact sigma gives eps <= target, and 1e-6 less
# noise would not; zcdp's sigma solves rho + 2 sqrt(rho log(1/delta)) = eps.
expect_ok cal-sigma "$DPGD" calibrate --epsilon 0.3 --delta 1e-5 --steps 112
expect_out cal-sigma-head '^steps +112$'
py cal-sigma '
s = float(row("exact")[1])
assert gdp_eps(math.sqrt(112) / s, 1e-5) <= 0.3 * (1 + 1e-10) and 0.3 < gdp_eps(math.sqrt(112) / (s * (1 - 1e-6)), 1e-5), s
sz = float(row("zcdp")[1]); rho = 112 / (2 * sz * sz)
z = rho + 2 * math.sqrt(rho * math.log(1e5)); assert z <= 0.3 and 0.3 - z < 1e-9, z
assert s < float(row("rdp_optimal")[1]) <= float(row("rdp_balle")[1]) * (1 + 1e-9) <= sz * (1 + 1e-9)
'
# Calibration of the filter budget (Algorithm 7): mu = sqrt(B)/(sigma C).
expect_ok cal-budget "$DPGD" calibrate --epsilon 0.3 --delta 1e-5 --sigma 170 --clip 10 --json
py cal-budget '
j = json.loads(out); m = j["methods"]
b = m["exact"]["B_norm"]
assert gdp_eps(math.sqrt(b) / 1700, 1e-5) <= 0.3 * (1 + 1e-10) and 0.3 < gdp_eps(math.sqrt(b * (1 + 1e-6)) / 1700, 1e-5), b
assert m["exact"]["full_steps"] == math.floor(b / 100)
bz = m["zcdp"]["B_norm"]; assert m["zcdp"]["full_steps"] == math.floor(bz / 100) and bz < b
'
expect_ok cal-budget-table "$DPGD" calibrate --epsilon 0.3 --sigma 170 --clip 10 --method exact --gaussian sigma=600,count=8
expect_out cal-budget-extra '^target +eps 0\.3 at delta 1e-05 \(\+ 8 other releases\)$'
py cal-budget-extra '
b = float(row("exact")[1]); mu = math.sqrt(b / 1700 ** 2 + 8 / 600 ** 2)
assert gdp_eps(mu, 1e-5) <= 0.3 * (1 + 1e-10) and 0.3 < gdp_eps(mu * (1 + 1e-6), 1e-5), b
assert int(row("exact")[2]) == math.floor(b / 100)
'

# Calibration with non-Gaussian extra releases (exact method), checked by 'dpgd account'.
expect_ok cal-laplace "$DPGD" calibrate --epsilon 1 --steps 100 --laplace b=10,count=5 --method exact
S=$(awk '$1 == "exact" { print $2 }' "$TMP/out")
S_LESS=$(python3 -c "print(repr(float('$S') * (1 - 1e-6)))")
expect_ok cal-laplace-check "$DPGD" account --gaussian sigma=$S,count=100 --laplace b=10,count=5 --method exact --json
py cal-laplace-check 'assert json.loads(out)["methods"]["exact"]["eps"] <= 1 + 1e-12'
expect_ok cal-laplace-less "$DPGD" account --gaussian sigma=$S_LESS,count=100 --laplace b=10,count=5 --method exact --json
py cal-laplace-less 'assert json.loads(out)["methods"]["exact"]["eps"] > 1'

# Help.
expect_ok account-help "$DPGD" account --help
expect_out account-help-usage '^usage: dpgd account'
expect_ok calibrate-help "$DPGD" calibrate -h
expect_out calibrate-help-usage '^usage: dpgd calibrate'

# Bad input: one line naming the problem, non-zero exit.
A="$DPGD account"
expect_fail no-mech 'no mechanism given' $A --delta 1e-5
expect_fail bad-delta '--delta must lie in \(0, 1\)' $A --gaussian mu=1 --delta 2
expect_fail nan-delta "--delta: 'nan' is not a finite number" $A --gaussian mu=1 --delta nan
expect_fail neg-eps '--epsilon must be >= 0' $A --gaussian mu=1 --epsilon -1
expect_fail both 'give --delta or --epsilon, not both' $A --gaussian mu=1 --epsilon 1 --delta 1e-5
expect_fail missing-value '--delta needs a value' $A --gaussian mu=1 --delta
expect_fail missing-spec '--gaussian needs a specification' $A --gaussian
expect_fail unknown-opt "unknown option '--bogus'" $A --gaussian mu=1 --bogus 3
expect_fail unknown-key "--gaussian: unknown key 'nu'" $A --gaussian nu=1
expect_fail not-kv "--laplace: 'b' is not key=value" $A --laplace b
expect_fail twice-key "--rr: key 'eps0' given twice" $A --rr eps0=1,eps0=2
expect_fail sigma-and-mu '--gaussian: give exactly one of sigma= and mu=' $A --gaussian sigma=1,mu=1
expect_fail neg-sigma '--gaussian: sigma and sensitivity must be > 0' $A --gaussian sigma=-1
expect_fail bad-number "--gaussian mu: '1x' is not a finite number" $A --gaussian mu=1x
expect_fail inf-mu "--gaussian mu: 'inf' is not a finite number" $A --gaussian mu=inf
expect_fail neg-mu '--gaussian: Gaussian mu must be finite and >= 0' $A --gaussian mu=-2
expect_fail zero-count '--gaussian: count must be >= 1' $A --gaussian mu=1,count=0
expect_fail neg-count "--gaussian count: '-3' is not a non-negative integer" $A --gaussian mu=1,count=-3
expect_fail big-count "--gaussian count: '99999999999999999999999' is not" $A --gaussian mu=1,count=99999999999999999999999
expect_fail rr-missing '--rr: missing eps0=' $A --rr count=3
expect_fail rr-neg '--rr: randomized response eps0 must be finite and > 0' $A --rr eps0=0
expect_fail laplace-a '--laplace: Laplace a = sensitivity/scale must be finite and > 0' $A --laplace a=0
expect_fail disc-len '--discrete: p has 2 outcomes but q has 3' $A --discrete p=0.5:0.5,q=0.2:0.3:0.5
expect_fail disc-sum '--discrete: discrete pair: p sums to' $A --discrete p=0.5:0.6,q=0.5:0.5
expect_fail disc-support '--discrete: discrete pair: outcome 1 has mass under one distribution only' \
  $A --discrete p=0.5:0.5,q=1:0
expect_fail disc-missing '--discrete: missing q=' $A --discrete p=1
# Sampling without replacement, one release, add/remove: delta of the two dominating
# pairs (1-g) N(0,s^2) + g N(1,s^2) vs N(0,s^2), g = m/n, recomputed here by erfc.
expect_ok wor-ar "$DPGD" account --wor-gaussian m=60,n=400,sigma=0.8,sensitivity=1,relation=add-remove --epsilon 0.7 --json
py wor-ar-values '
j = json.loads(out); g, s, e = 60 / 400, 0.8, 0.7
Q = lambda z: 0.5 * math.erfc(z / math.sqrt(2))
o = s * s * math.log((math.exp(e) - 1 + g) / g) + 0.5          # remove pair: L > e right of o
rem = (1 - g) * Q(o / s) + g * Q((o - 1) / s) - math.exp(e) * Q(o / s)
r = math.exp(-e) - (1 - g); add = 0.0                          # add pair: L > e left of o
if r > 0:
    o = s * s * math.log(r / g) + 0.5
    add = Q(-o / s) - math.exp(e) * ((1 - g) * Q(-o / s) + g * Q(-(o - 1) / s))
ref = max(rem, add); d = j["methods"]["exact"]["delta"]
assert j["relation"] == "add-remove" and ref * (1 - 1e-12) <= d <= ref * (1 + 1e-8), (d, ref)
'
# Replace-one: no exact value, the relation printed, RDP bounds above add/remove exact.
expect_ok wor-ro "$DPGD" account --wor-gaussian m=256,n=60000,sigma=1.1,sensitivity=1,count=1000,relation=replace-one
expect_out wor-ro-relation '^relation +without replacement, replace-one'
py wor-ro-values '
assert row("exact")[1] == "n/a", row("exact")
assert float(row("rdp_optimal")[1]) >= 0.5986851442, row("rdp_optimal")
'
# The add/remove Laplace: exact, below its own RDP bound and below the replace-one one.
expect_ok wor-lap "$DPGD" account --wor-laplace m=100,n=1000,b=0.5,count=50 --json
py wor-lap-values '
j = json.loads(out)["methods"]; e = j["exact"]["eps"]
assert 0 < e <= j["rdp_optimal"]["eps"] and e < 12.5, (e, j)
'
expect_fail wor-m-gt-n 'needs 1 <= m <= n' $A --wor-gaussian m=5,n=4,sigma=1,sensitivity=1,relation=add-remove
# The Gaussian's relation and sensitivity have no default: a clipped sum's is 2C, and a
# silent 1 would halve it.
expect_fail wor-no-sens '--wor-gaussian: give relation=add-remove\|replace-one and sensitivity=D' \
  $A --wor-gaussian m=5,n=40,sigma=4,relation=replace-one
expect_fail wor-no-rel '--wor-gaussian: give relation=add-remove\|replace-one and sensitivity=D' \
  $A --wor-gaussian m=5,n=40,sigma=4,sensitivity=2
expect_fail wor-relation 'relation must be add-remove or replace-one' $A --wor-laplace m=1,n=4,b=1,relation=swap
expect_fail sub-q '--subsampled: sampling rate q must lie in \[0, 1\]' $A --subsampled q=1.5,sigma=1
expect_fail sub-sigma '--subsampled: missing sigma=' $A --subsampled q=0.1
expect_fail bad-method "--method: unknown method 'exactly'" $A --gaussian mu=1 --method exactly
expect_fail calib-flags '--sigma/--clip/--steps belong to' $A --gaussian mu=1 --steps 3
expect_fail only-na 'no requested method applies' $A --laplace b=1 --method zcdp
C="$DPGD calibrate"
expect_fail cal-no-eps '--epsilon is required' $C --steps 10
expect_fail cal-zero-eps '--epsilon must be > 0' $C --epsilon 0 --steps 10
expect_fail cal-no-mode 'give --steps K, or --sigma S and --clip C' $C --epsilon 1
expect_fail cal-both 'give --steps, or --sigma and --clip, not both' $C --epsilon 1 --steps 3 --sigma 2 --clip 1
expect_fail cal-no-clip '--clip is required with --sigma' $C --epsilon 1 --sigma 2
expect_fail cal-neg-clip '--clip must be > 0' $C --epsilon 1 --sigma 2 --clip -1
expect_fail cal-zero-steps '--steps must be >= 1' $C --epsilon 1 --steps 0
expect_fail cal-bad-steps "--steps: 'ten' is not a non-negative integer" $C --epsilon 1 --steps ten
expect_fail cal-budget-laplace 'no requested method could calibrate this target \(exact: budget calibration composes with Gaussian releases only\)' \
  $C --epsilon 1 --sigma 2 --clip 1 --laplace b=1 --method exact

# Messages a new user meets: an unknown option at the end of the line is unknown (not
# "needs a value"), a space instead of a comma in a mechanism says so, one entry is
# "1 entry".
expect_fail unknown-last "unknown option '--bogus'" $A --gaussian sigma=2 --delta 1e-5 --bogus
expect_fail cal-unknown-last "unknown option '--frob'" $C --epsilon 1 --steps 3 --frob
expect_fail space-arg "'count=3' is not an option: a mechanism's keys are separated by commas" \
  $A --gaussian sigma=2 count=3 --delta 1e-5
expect_fail space-in-spec "keys are separated by commas, not spaces" \
  $A --gaussian "sigma=2 count=3" --delta 1e-5
expect_ok space-after-comma $A --gaussian "sigma=2, count=3" --delta 1e-5
expect_out space-after-comma "^releases +3 in 1 entry "
expect_ok two-entries $A --gaussian sigma=2,count=3 --laplace b=4 --delta 1e-5
expect_out two-entries "^releases +4 in 2 entries"
# The discrete Gaussian (docs/MATH.md "Discrete Gaussian"): zcdp is the Gaussian's rho =
# (D/S)^2/2 conversion, exact does not apply, and the continuous Gaussian's exact eps is
# printed beside it (the closed form), below every proven row.
expect_ok dgauss $A --discrete-gaussian sigma=5,sensitivity=1.5,count=40 --delta 1e-6
expect_out dgauss '^exact +n/a +\(no exact privacy curve is proven for the multivariate discrete'
py dgauss-values '
mu = 1.5 / 5; rho = 40 * mu * mu / 2; z = rho + 2 * math.sqrt(rho * math.log(1e6))
assert abs(float(row("zcdp")[1]) - z) <= 1e-9 * z
c = float(row("continuous")[1]); ref = gdp_eps(math.sqrt(40) * mu, 1e-6)
assert abs(c - ref) <= 1e-9 * ref, (c, ref)
for m in ("rdp_classic", "rdp_balle", "rdp_optimal"): assert float(row(m)[1]) >= c
'
expect_ok dgauss-json $A --discrete-gaussian mu=0.3,count=40 --delta 1e-6 --json
py dgauss-json '
j = json.loads(out); ref = gdp_eps(math.sqrt(40) * 0.3, 1e-6)
assert abs(j["continuous_gaussian_exact"] - ref) <= 1e-9 * ref
assert j["methods"]["exact"]["eps"] is None and j["gdp_mu"] is None
'
expect_fail dgauss-zero 'discrete-gaussian: sigma and sensitivity must be > 0' \
  $A --discrete-gaussian sigma=0
expect_fail dgauss-both 'give exactly one of sigma= and mu=' $A --discrete-gaussian sigma=1,mu=2
finish
