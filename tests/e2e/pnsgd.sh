# pnsgd.sh -- 'dpgd train' with train.algorithm = pnsgd end to end (train/LASTITERATE.md):
# a small pass over the first MNIST points; the run directory holds the last iterate and
# no intermediate one; summary.json's guarantees are the numbers 'dpgd account
# --iteration' prints for the same setting; each forbidden key and a step above 2/beta
# give one-line errors; a pnsgd directory cannot be resumed.
. "$(dirname "$0")/lib.sh"

CFG="$DPGD_SOURCE_DIR/configs/pnsgd-softmax.ini"
SET=(--set data.dir="$MNIST" --set data.n_train=500 --set data.n_test=300
     --set privacy.calibrate=none --set privacy.sigma=3 --set train.radius=40)
RUN="$TMP/run"
expect_ok train "$DPGD" train --config "$CFG" "${SET[@]}" --out "$RUN" --quiet
expect_out plan-worst '^  worst +t = 500 '
expect_out done '^done +500 steps; last iterate in .*model\.bin; test accuracy'
for f in model.bin summary.json positions.csv points.csv config.ini; do
  checks=$((checks + 1)); [ -f "$RUN/$f" ] || fail "no $f"
done
for f in metrics.csv checkpoint.bin; do
  checks=$((checks + 1)); [ ! -e "$RUN/$f" ] || fail "$f written: an intermediate iterate"
done
expect_acc learns "$RUN/summary.json" 0.3
checks=$((checks + 1))
grep -q '"noise_caveat"' "$RUN/summary.json" && fail "research run with a secure noise caveat"
# Secure: the step's clipped gradient on the grid plus an exact discrete Gaussian; the
# guarantee (t = n) is one discrete Gaussian step, rdp_optimal (train/LASTITERATE.md 7):
# the accountant's own discrete Gaussian entry at noise multiplier sigma / L, count 1.
expect_ok secure "$DPGD" train --config "$CFG" "${SET[@]}" --set train.rng=secure \
  --out "$TMP/secure" --quiet
expect_out secure-theorem '^guarantee   docs/MATH.md section 18 and train/LASTITERATE.md'
checks=$((checks + 1))
grep -q 'caveat' "$TMP/secure/summary.json" && fail "secure pnsgd summary.json has a caveat"
read -r SL SS <<<"$(python3 -c 'import json,sys; s = json.load(open(sys.argv[1])); print(repr(s["lipschitz"]), repr(s["sigma"]))' "$TMP/secure/summary.json")"
expect_ok account-discrete "$DPGD" account --discrete-gaussian \
  "sigma=$(python3 -c "print(repr($SS / $SL))"),count=1" --delta 1e-5 --json
checks=$((checks + 1))
python3 - "$TMP/secure/summary.json" "$TMP/out" >"$TMP/py" 2>&1 <<'PYEOF' || fail "secure summary: $(tail -c 400 "$TMP/py")"
import json, sys
s = json.load(open(sys.argv[1]))
w, nz = s["guarantee"]["worst"], s["noise"]
a = json.load(open(sys.argv[2]))
ref = a["methods"]["rdp_optimal"]["eps"] if "methods" in a else a["eps"]["rdp_optimal"]
assert nz["mechanism"] == "discrete_gaussian" and "section 18" in nz["theorem"], nz
assert w["eps"] == w["iteration"], w
# the multiplier sigma / L rounds once: allow 1e-9 relative besides the 10-digit rounding up
assert ref * (1 - 1e-9) <= w["eps"] <= ref * (1 + 2e-9), (w["eps"], ref)
assert nz["eps_continuous"] <= w["eps"] and nz["eps_continuous"] == w["contraction"], nz
# the grid's variance is ceil((sigma 2^F)^2): never below the accounted sigma
assert nz["sigma2_grid"] >= (s["sigma"] * 2 ** nz["grid_bits"]) ** 2, nz
PYEOF
# Calibrated: the secure run's sigma meets privacy.epsilon under rdp_optimal.
expect_ok secure-cal "$DPGD" train --config "$CFG" --set data.dir="$MNIST" \
  --set data.n_train=300 --set data.n_test=100 --set train.radius=40 --set train.rng=secure \
  --set privacy.calibrate=sigma --set privacy.epsilon=2 --out "$TMP/secure-cal" --quiet
checks=$((checks + 1))
python3 -c 'import json,sys; w = json.load(open(sys.argv[1]))["guarantee"]["worst"]; sys.exit(not (1.99 < w["eps"] <= 2))' \
  "$TMP/secure-cal/summary.json" || fail "secure calibration: worst eps not just below 2"

# The setting as summary.json states it, passed to the accountant's command.
read -r L S E R D <<<"$(python3 -c '
import json, sys
s = json.load(open(sys.argv[1]))
print(repr(s["lipschitz"]), repr(s["sigma"]), repr(s["lr"]), repr(s["diameter"]), repr(s["delta"]))
' "$RUN/summary.json")"
# Only t = n is a guarantee; mid and first are exact-arithmetic diagnostics, labelled so
# in summary.json and positions.csv (train/LASTITERATE.md section 7).
checks=$((checks + 1))
python3 - "$RUN/summary.json" "$RUN/positions.csv" >"$TMP/py" 2>&1 <<'PYEOF' || fail "labels: $(tail -c 400 "$TMP/py")"
import json, sys
s = json.load(open(sys.argv[1]))
assert list(s["guarantee"]) == ["worst"], s["guarantee"]
d = s["diagnostics_exact_arithmetic"]
assert sorted(d) == ["first", "mid", "note"] and "NOT privacy guarantees" in d["note"], d
assert open(sys.argv[2]).readline().startswith("# DIAGNOSTIC, not a privacy guarantee")
PYEOF
for which in worst mid first; do
  T=$(python3 -c 'import json,sys; s = json.load(open(sys.argv[1])); print({**s["guarantee"], **s["diagnostics_exact_arithmetic"]}[sys.argv[2]]["position"])' \
      "$RUN/summary.json" "$which")
  expect_ok "account-$which" "$DPGD" account --iteration \
    "n=500,t=$T,lipschitz=$L,sigma=$S,neighbour=null,eta=$E,diameter=$R" --delta "$D" --json
  checks=$((checks + 1))
  python3 - "$RUN/summary.json" "$TMP/out" "$which" >"$TMP/py" 2>&1 <<'PYEOF' || fail "summary $which: $(tail -c 400 "$TMP/py")"
import json, sys
s = json.load(open(sys.argv[1]))
s = {**s["guarantee"], **s["diagnostics_exact_arithmetic"]}[sys.argv[3]]
a = json.load(open(sys.argv[2]))["bounds"]
pairs = [("iteration", a["iteration"]["rdp_optimal"]["eps"]),
         ("contraction", a["contraction"]["exact"]["eps"]),
         ("composition", a["composition"]["exact"]["eps"])]
for key, ref in pairs:
    # summary.json rounds up to 10 significant digits: never below, at most 1e-9 above
    assert ref <= s[key] <= ref * (1 + 1e-9) + 1e-300, (key, s[key], ref)
assert s["eps"] == min(s["iteration"], s["contraction"]), s
PYEOF
done
checks=$((checks + 1))
[ "$(grep -vc '^#' "$RUN/points.csv")" -eq 501 ] || fail "points.csv: not one row per point"
# positions.csv: from t = n down to t = 1, every bound is non-increasing as more steps
# follow the point (up to the numerical error bound of the contraction bound), its
# first row is summary.json's worst case, and composition does not depend on t.
checks=$((checks + 1))
python3 - "$RUN/summary.json" "$RUN/positions.csv" >"$TMP/py" 2>&1 <<'PYEOF' || fail "positions.csv: $(tail -c 400 "$TMP/py")"
import csv, json, sys
w = json.load(open(sys.argv[1]))["guarantee"]["worst"]
rows = list(csv.DictReader(l for l in open(sys.argv[2]) if not l.startswith("#")))
assert int(rows[0]["position"]) == 500 and int(rows[-1]["position"]) == 1, rows[-1]
assert float(rows[0]["eps"]) == w["eps"] and float(rows[0]["rho"]) == w["rho"]
for a, b in zip(rows, rows[1:]):
    assert int(b["position"]) < int(a["position"])
    assert float(b["rho"]) <= float(a["rho"]) and float(b["eps_iteration"]) <= float(a["eps_iteration"])
    assert float(b["eps"]) <= float(a["eps"]) * (1 + 1e-6), (a, b)
    assert b["eps_composition"] == a["eps_composition"]
PYEOF

expect_fail cnn 'model\.type = softmax' "$DPGD" train --config "$CFG" "${SET[@]}" \
  --set model.type=cnn --out "$TMP/x"
expect_fail eval-every 'train\.eval_every' "$DPGD" train --config "$CFG" "${SET[@]}" \
  --set train.eval_every=10 --out "$TMP/x"
expect_fail checkpoints 'output\.checkpoint_every' "$DPGD" train --config "$CFG" "${SET[@]}" \
  --set output.checkpoint_every=5 --out "$TMP/x"
expect_fail queries 'stopping\.queries' "$DPGD" train --config "$CFG" "${SET[@]}" \
  --set stopping.queries=2 --out "$TMP/x"
expect_fail poisson 'train\.sampling' "$DPGD" train --config "$CFG" "${SET[@]}" \
  --set train.sampling=poisson --set train.sample_rate=0.1 --out "$TMP/x"
expect_fail lr 'train\.lr = 0\.01 exceeds 2/beta' "$DPGD" train --config "$CFG" "${SET[@]}" \
  --set train.lr=0.01 --out "$TMP/x"
expect_fail resume 'resume' "$DPGD" train --resume "$RUN"
expect_fail plot 'pnsgd run releases its last iterate only' "$DPGD" plot "$RUN"
expect_fail again 'holds a run' "$DPGD" train --config "$CFG" "${SET[@]}" --out "$RUN"
finish
