# iteration.sh -- 'dpgd account --iteration' end to end: the amplification-by-iteration
# eps (zCDP conversion of rho = g^2 / (2 sigma^2 (n - t + 1))), the contraction bound
# (theta_eps(g/sigma) theta_eps(diam/(eta sigma))^(n - t), solved for eps) and the
# composition baseline (the Gaussian curve at mu = g/sigma) recomputed here in Python,
# independently of the C code (accounting/ITERATION.md); bad input gives one-line errors.
. "$(dirname "$0")/lib.sh"

# py CHECKNAME SCRIPT: runs SCRIPT with the last stdout on stdin; a non-zero exit fails.
py() {
  checks=$((checks + 1))
  python3 - "$TMP/out" >"$TMP/py" 2>&1 <<PYEOF || fail "$1: $(tail -c 400 "$TMP/py")"
import json, math, sys
out = open(sys.argv[1]).read()
def Q(x): return 0.5 * math.erfc(x / math.sqrt(2))
def theta(eps, r): return Q(eps / r - r / 2) - math.exp(eps) * Q(eps / r + r / 2)
def solve(delta_of, delta):
    if delta_of(0.0) <= delta: return 0.0
    lo, hi = 0.0, 1.0
    while delta_of(hi) > delta: hi *= 2
    for _ in range(200):
        mid = (lo + hi) / 2
        if delta_of(mid) > delta: lo = mid
        else: hi = mid
    return hi
def row(bound, method):
    for line in out.splitlines():
        f = line.split()
        if len(f) >= 3 and f[0] == bound and f[1] == method: return f[2]
    raise SystemExit("no row %s %s" % (bound, method))
def close(x, ref, rel):
    assert abs(x - ref) <= rel * max(ref, 1e-300) and x >= ref * (1 - 1e-12), (x, ref)
$2
PYEOF
}

A="$DPGD account --iteration"
expect_ok table $A n=100,t=91,lipschitz=0.8,sigma=3.5,eta=0.05,diameter=1 --delta 1e-6
expect_out table-head '^iteration +one pass of n = 100 steps, the point at t = 91 \(10 steps'
expect_out table-valid '^valid if +only the last iterate is released'
py table-values '
n, t, L, s, eta, diam, d = 100, 91, 0.8, 3.5, 0.05, 1.0, 1e-6
g = 2 * L; rho = g * g / (2 * s * s * (n - t + 1))
close(float(row("iteration", "zcdp")), rho + 2 * math.sqrt(rho * math.log(1 / d)), 1e-9)
it = float(row("iteration", "rdp_optimal"))
assert it <= float(row("iteration", "rdp_balle")) <= float(row("iteration", "rdp_classic"))
comp = solve(lambda e: theta(e, g / s), d)
close(float(row("composition", "exact")), comp, 1e-7)
con = solve(lambda e: theta(e, g / s) * theta(e, diam / (eta * s)) ** (n - t), d)
close(float(row("contraction", "exact")), con, 1e-7)
assert con < comp and it < float(row("composition", "rdp_optimal"))
'

# JSON: the RDP curve is a rho at every order; the null point halves g.
expect_ok json $A n=1000,t=1,lipschitz=1,sigma=4,neighbour=null --json
py json-values '
j = json.loads(out)
rho = 1.0 / (2 * 16 * 1000)
assert j["grad_sens"] == 1 and j["neighbour"] == "null"
assert rho <= j["rho"] <= rho * (1 + 1e-12), j["rho"]
for r in j["rdp"]:
    a = r["alpha"]
    assert a * rho <= r["iteration"] <= a * rho * (1 + 1e-12)
    assert a / 32 <= r["composition"] <= a / 32 * (1 + 1e-12)
assert j["bounds"]["contraction"]["exact"] is None
assert j["bounds"]["composition"]["exact"]["eps"] > j["bounds"]["iteration"]["rdp_optimal"]["eps"]
'

# A small domain forgets the point: delta(0) of the contraction bound is below delta.
expect_ok forget $A n=1000,t=1,lipschitz=1,sigma=4,eta=0.5,diameter=1
py forget-zero '
assert theta(0, 0.5) * theta(0, 0.5) ** 999 < 1e-5
assert float(row("contraction", "exact")) == 0
'
expect_ok no-contraction $A n=10,t=2,lipschitz=1,sigma=4
expect_out no-contraction-na '^contraction +exact +n/a +\(give eta= and diameter='
expect_ok help $A --help
expect_out help-text 'noise std on the GRADIENT'

expect_fail t-over-n 'need 1 <= t <= n' $A n=10,t=11,lipschitz=1,sigma=4
expect_fail no-sigma 'missing sigma=' $A n=10,t=1,lipschitz=1
expect_fail eta-alone 'eta= and diameter= go together' $A n=10,t=1,lipschitz=1,sigma=4,eta=0.1
expect_fail mixed "'--gaussian' does not go with --iteration" $A n=10,t=1,lipschitz=1,sigma=4 \
  --gaussian mu=1
expect_fail bad-key "unknown key 'lr'" $A n=10,t=1,lipschitz=1,sigma=4,lr=1
expect_fail bad-neighbour "'replace' or 'null'" $A n=10,t=1,lipschitz=1,sigma=4,neighbour=x
expect_fail bad-delta '--delta must lie in \(0, 1\)' $A n=10,t=1,lipschitz=1,sigma=4 --delta 2
expect_fail zero-lipschitz 'lipschitz must be > 0' $A n=10,t=1,lipschitz=0,sigma=4
expect_fail neg-diam 'diameter must be >= 0' $A n=10,t=1,lipschitz=1,sigma=4,eta=1,diameter=-1
finish
