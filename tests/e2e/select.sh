# select.sh -- `dpgd select` end to end on a small MNIST subset (pixel softmax, 2 x 2
# grid): the total eps of the dry run against Papernot & Steinke's Theorem 2 in closed
# form for a Gaussian base (the classic conversion, minimised by hand); a selection
# calibrated to a total of 1 meets it, its total is above every run's eps, the same seed
# gives the same bytes and another seed other scores; bad input gets one line.
. "$(dirname "$0")/lib.sh"
SRC=${DPGD_SOURCE_DIR:-$(dirname "$0")/../..}
export OMP_NUM_THREADS=2
cat >"$TMP/g.sweep" <<SWEEP
[sweep]
config = $SRC/configs/softmax.ini
set = data.dir=$MNIST
set = data.n_train=1300
set = data.validation=300
set = train.eval_every=0
set = output.checkpoint_every=0
grid = train.lr=0.5,1
grid = train.steps=10,20
SWEEP
# json_num FILE SECTION KEY: the number after "SECTION": {... "KEY": in FILE.
json_num() { python3 -c "import json,sys; print(json.load(open('$1'))['$2']['$3'])"; }

expect_ok dry "$DPGD" select "$TMP/g.sweep" --run-epsilon 0.4 --mean-k 3 --method rdp_classic \
  --dry-run
mu=$(sed -n 's/.*(mu \([0-9.e-]*\)).*/\1/p' "$TMP/out")
tot=$(sed -n 's/^total: eps = \([0-9.e-]*\) .*/\1/p' "$TMP/out")
# geometric K, E[K] = 3 (gamma = 1/3), Gaussian base mu: eps'(l) = l a + b + log 3/(l - 1)
# with a = mu^2/2, b = 2 (mu sqrt(2 log 3) - a); classic: + log(1/delta)/(l - 1), least
# at l - 1 = sqrt(c/a): a + 2 sqrt(a c) + b.
checks=$((checks + 1))
python3 - "$mu" "$tot" <<'PY' || fail "dry run's total '$tot' is not Theorem 2's closed form at mu '$mu'"
import math, sys
mu, tot = float(sys.argv[1]), float(sys.argv[2])
a = mu * mu / 2; b = 2 * (mu * math.sqrt(2 * math.log(3)) - a); c = math.log(3) + math.log(1e5)
ref = a + 2 * math.sqrt(a * c) + b
sys.exit(0 if ref <= tot <= ref * (1 + 1e-7) else 1)
PY

expect_ok run "$DPGD" select "$TMP/g.sweep" --epsilon 1 --mean-k 2 --seed 5 --out "$TMP/s1" \
  --quiet
J=$TMP/s1/selection.json
checks=$((checks + 1))
[ -s "$TMP/s1/model.bin" ] || fail "no model.bin in the selection's folder"
total=$(json_num "$J" total eps)
run=$(json_num "$J" run eps)
checks=$((checks + 1))
awk -v t="$total" -v r="$run" 'BEGIN { exit !(t <= 1 && t > 0.9999 && r < t) }' ||
  fail "total $total not in (0.9999, 1] or not above the run's eps $run"
checks=$((checks + 1))
grep -q '"best": {"cell": "softmax+train.lr=' "$J" || fail "no best cell in $J"
# The released folder has what dpgd eval needs (config.ini: normalisation, model type)
# and no seed; eval of the release equals eval of the chosen candidate's own run.
checks=$((checks + 1))
[ -s "$TMP/s1/config.ini" ] && ! grep -Eq '^[[:space:]]*seed[[:space:]]*=' "$TMP/s1/config.ini" ||
  fail "the selection's config.ini is missing or names a seed"
best=
for c in "$TMP"/s1/private/candidate-*/; do
  cmp -s "$c/model.bin" "$TMP/s1/model.bin" && best=$c
done
checks=$((checks + 1))
[ -n "$best" ] || fail "no candidate's model.bin is the released one"
expect_ok eval_release "$DPGD" eval --model "$TMP/s1" --data "$MNIST" --n 100
expect_out eval_release "s1/config.ini"
grep '^accuracy' "$TMP/out" >"$TMP/acc_release"
expect_ok eval_best "$DPGD" eval --model "$best" --data "$MNIST" --n 100
checks=$((checks + 1))
grep '^accuracy' "$TMP/out" | cmp -s - "$TMP/acc_release" ||
  fail "eval of the release differs from eval of its candidate"
expect_ok again "$DPGD" select "$TMP/g.sweep" --epsilon 1 --mean-k 2 --seed 5 --out "$TMP/s2" \
  --quiet
checks=$((checks + 1))
cmp -s "$J" "$TMP/s2/selection.json" && cmp -s "$TMP/s1/model.bin" "$TMP/s2/model.bin" ||
  fail "the same seed selected differently"
expect_ok other "$DPGD" select "$TMP/g.sweep" --epsilon 1 --mean-k 2 --seed 6 --out "$TMP/s3" \
  --quiet
checks=$((checks + 1))
cmp -s "$J" "$TMP/s3/selection.json" && fail "another seed gave the same selection"

# The score's noise: continuous (research), exact discrete on the grid 2^-F of the count
# (--rng secure; F the largest <= 20 with sigma 2^F <= 2^30): then every noisy score times
# n_validation 2^F is an integer (candidates.csv keeps 17 digits).
# grid_scores DIR: 0 if every candidate's score is on the grid, 1 if none is, 2 if mixed.
grid_scores() {
  python3 - "$1" <<'PY'
import csv, json, math, sys
d = sys.argv[1]
s = json.load(open(d + "/selection.json"))["score_sigma"]
F = 0
while F < 20 and math.ldexp(s, F + 1) <= 2.0**30:
    F += 1
on = [abs(v - round(v)) < 1e-3 for v in (float(r["noisy_score"]) * int(r["n_validation"]) * 2.0**F
      for r in csv.DictReader(open(d + "/private/candidates.csv")))]
sys.exit(0 if all(on) else 1 if not any(on) else 2)
PY
}
checks=$((checks + 1))
grep -q '"score_noise": "floating-point' "$J" || fail "research selection: score noise not named"
checks=$((checks + 1))
grid_scores "$TMP/s1"
[ $? = 1 ] || fail "research selection: scores on the discrete grid"
expect_ok secure "$DPGD" select "$TMP/g.sweep" --epsilon 1 --mean-k 2 --rng secure \
  --out "$TMP/sec" --quiet
checks=$((checks + 1))
grep -q '"score_noise": "exact discrete Gaussian' "$TMP/sec/selection.json" ||
  fail "secure selection: score noise not the discrete Gaussian"
checks=$((checks + 1))
grid_scores "$TMP/sec" || fail "secure selection: a score off the grid of the count"

expect_fail mean "mean number of runs 0.5" "$DPGD" select "$TMP/g.sweep" --epsilon 1 \
  --mean-k 0.5 --dry-run
expect_fail mean1 "must be above 1" "$DPGD" select "$TMP/g.sweep" --epsilon 1 --mean-k 1 --dry-run
expect_fail poisson "Poisson mean must be >= 1" "$DPGD" select "$TMP/g.sweep" --epsilon 1 \
  --k-dist poisson --mean-k 0.3 --dry-run
expect_fail dist "k-dist 'uniform'" "$DPGD" select "$TMP/g.sweep" --epsilon 1 --k-dist uniform
expect_fail eta "eta = -2" "$DPGD" select "$TMP/g.sweep" --epsilon 1 --k-dist tnb:-2 --dry-run
expect_fail both "one of --epsilon" "$DPGD" select "$TMP/g.sweep" --epsilon 1 --run-epsilon 1
expect_fail none "one of --epsilon" "$DPGD" select "$TMP/g.sweep"
expect_fail nan "epsilon" "$DPGD" select "$TMP/g.sweep" --epsilon nan
expect_fail method "method 'exact'" "$DPGD" select "$TMP/g.sweep" --epsilon 1 --method exact
expect_fail nofile "no grid" "$DPGD" select --epsilon 1
# A total below what the score's noise costs alone is refused at once, with that cost:
# Theorem 2's closed form above at the score's mu = 1/2 (classic conversion).
expect_fail floor "score-sigma 2\) costs [0-9.]+ by itself" "$DPGD" select "$TMP/g.sweep" \
  --epsilon 0.5 --score-sigma 2 --mean-k 3 --method rdp_classic --dry-run
floor=$(sed -n 's/.* costs \([0-9.e-]*\) by itself.*/\1/p' "$TMP/err")
checks=$((checks + 1))
python3 - "$floor" <<'PY' || fail "the score's floor '$floor' is not Theorem 2's closed form at mu 1/2"
import math, sys
mu, tot = 0.5, float(sys.argv[1])
a = mu * mu / 2; b = 2 * (mu * math.sqrt(2 * math.log(3)) - a); c = math.log(3) + math.log(1e5)
ref = a + 2 * math.sqrt(a * c) + b
sys.exit(0 if ref <= tot <= ref * (1 + 1e-7) else 1)
PY
expect_fail exists "exists" "$DPGD" select "$TMP/g.sweep" --epsilon 1 --mean-k 2 --out "$TMP/s1"
cp "$TMP/g.sweep" "$TMP/p.sweep"
echo "grid = privacy.epsilon=1,0.5" >>"$TMP/p.sweep"
expect_fail privgrid "varies privacy.epsilon" "$DPGD" select "$TMP/p.sweep" --epsilon 1 --dry-run
expect_fail noval "data.validation is 0" "$DPGD" select "$TMP/g.sweep" --epsilon 1 \
  --set data.validation=0 --dry-run
printf '[sweep]\nset = train.lr=1\n' >"$TMP/e.sweep"
expect_fail empty "no config" "$DPGD" select "$TMP/e.sweep" --epsilon 1 --dry-run
finish
