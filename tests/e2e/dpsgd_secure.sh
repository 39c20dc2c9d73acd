# dpsgd_secure.sh -- secure DP-SGD (train.rng = secure, Poisson sampling; docs/MATH.md
# 18.1) end to end on a small MNIST subset: summary.json states the theorem (section
# 18.1), has the noise block of a discrete run (exact int64 sum, discrete Gaussian, the
# continuous twin's eps below the proven one) and no floating-point caveat; stdout has no
# caveat line; the run's eps is what `dpgd account --subsampled-discrete-gaussian` prints for
# the same (q, sigma, steps) and the queries; the secure combinations no proof covers
# (subset sampling, filtered DP-SGD) are refused with one line naming the problem.
. "$(dirname "$0")/lib.sh"
CFG=${DPGD_SOURCE_DIR:-$(dirname "$0")/../..}/configs/softmax.ini
export OMP_NUM_THREADS=1
# 8 steps at rate 0.05 on 600 points, sigma given: the eps is dpgd account's for these.
Q=0.05 SIGMA=1.385 T=8
BASE=(--set data.dir="$MNIST" --set data.n_train=600 --set data.n_test=200
      --set model.threads=1 --set train.steps=$T --set privacy.calibrate=none
      --set privacy.sigma=$SIGMA --set train.rng=secure --set train.eval_every=4
      --set stopping.queries=0)
SET=("${BASE[@]}" --set train.sampling=poisson --set train.sample_rate=$Q)

expect_ok secure "$DPGD" train --config "$CFG" "${SET[@]}" --out "$TMP/sec"
S=$TMP/sec/summary.json
checks=$((checks + 1))
grep -q '"theorem": "docs/MATH.md section 18.1, proven there: the Poisson-subsampled (rate q) discrete Gaussian on an exact integer sum' "$S" ||
  fail "summary.json does not state the theorem: $(head -c 400 "$S")"
checks=$((checks + 1))
grep -q '"noise": {"mechanism": "discrete_gaussian", "sum": "int64, exact", "grid_bits": [0-9]*, "sigma2_grid": [0-9]*, "eps_method": "rdp_optimal"' "$S" ||
  fail "summary.json lacks the discrete noise block: $(head -c 600 "$S")"
checks=$((checks + 1))
! grep -qi 'caveat\|mitigat' "$S" || fail "summary.json carries a caveat: $(grep -i caveat "$S")"
checks=$((checks + 1))
! grep -q '^caveat' "$TMP/out" || fail "stdout has a caveat line"
checks=$((checks + 1))
grep -q '"rng": "secure"' "$S" || fail "summary.json: rng is not secure"
run_eps=$(sed -n 's/.*"rdp_optimal": \([0-9.e+-]*\)}.*/\1/p' "$S")
cont=$(sed -n 's/.*"eps_continuous": \([0-9.e+-]*\),.*/\1/p' "$S")
expect_ok account "$DPGD" account --subsampled-discrete-gaussian q=$Q,sigma=$SIGMA,count=$T \
  --delta 1e-5
acct_eps=$(awk '$1 == "rdp_optimal" { print $2 }' "$TMP/out")
acct_cont=$(awk '$1 == "continuous" { print $2 }' "$TMP/out")
checks=$((checks + 1))
[ -n "$run_eps" ] && [ "$run_eps" = "$acct_eps" ] ||
  fail "run eps '$run_eps' differs from dpgd account's '$acct_eps'"
checks=$((checks + 1))
[ -n "$cont" ] && [ "$cont" = "$acct_cont" ] &&
  awk -v c="$cont" -v e="$run_eps" 'BEGIN { exit !(c > 0 && c < e) }' ||
  fail "continuous eps '$cont' (account '$acct_cont') not in (0, $run_eps)"
echo "secure DP-SGD q=$Q sigma=$SIGMA steps=$T: eps $run_eps (continuous $cont)"

expect_fail subset 'train.rng = secure with train.sampling = subset: no bound is proven' \
  "$DPGD" train --config "$CFG" "${BASE[@]}" --set train.sampling=subset \
  --set train.batch_size=30 --out "$TMP/sub"
expect_fail filtered 'train.rng = secure with filtered DP-SGD.*no bound is proven' \
  "$DPGD" train --config "$CFG" "${SET[@]}" --set filter.enabled=true --set filter.k=8 \
  --out "$TMP/filt"
finish
