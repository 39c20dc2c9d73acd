# subset.sh -- DP-SGD with fixed-size sampling without replacement (train.sampling =
# subset) end to end: summary.json names the sampler, m and m/n, and the eps the run
# prints (under an rdp_* method, never "exact") is the one `dpgd account --wor-gaussian`
# prints for the same (m, n, sigma, steps) under replace-one neighbours at sensitivity 2
# (accounting/SAMPLING.md); a calibrated plan meets its target; a research run killed
# with SIGKILL resumes to the bytes of an uninterrupted one; the refusals are one line
# naming the keys; `dpgd train --help` names the samplers and why shuffling is absent.
. "$(dirname "$0")/lib.sh"
SRC=${DPGD_SOURCE_DIR:-$(dirname "$0")/../..}
CFG=$SRC/configs/softmax.ini
export OMP_NUM_THREADS=1
M=64 N=1000 SIGMA=1.385 T=20
BASE=(--set data.dir="$MNIST" --set data.n_train=$N --set data.n_test=200
      --set model.threads=1 --set train.steps=$T --set train.sampling=subset
      --set train.batch_size=$M --set output.checkpoint_every=2 --set train.eval_every=5)
SET=("${BASE[@]}" --set privacy.calibrate=none --set privacy.sigma=$SIGMA)

# The reference run: sampler, m and m/n in summary.json; eps equal to the accountant's.
expect_ok reference "$DPGD" train --config "$CFG" "${SET[@]}" --out "$TMP/ref" --quiet
done_line=$(grep '^done' "$TMP/out")
checks=$((checks + 1))
grep -q '"sampling": "subset", "sample_rate": 0.064000000000000001,' "$TMP/ref/summary.json" &&
  grep -q '"batch_size": 64, "eps_method": "rdp_' "$TMP/ref/summary.json" ||
  fail "summary.json lacks the sampler: $(head -c 400 "$TMP/ref/summary.json")"
method=$(sed -n 's/.*"eps_method": "\([a-z_]*\)".*/\1/p' "$TMP/ref/summary.json")
run_eps=$(sed -n "s/.*\"$method\": \\([0-9.e+-]*\\).*/\\1/p" "$TMP/ref/summary.json")
expect_ok account "$DPGD" account \
  --wor-gaussian m=$M,n=$N,sigma=$SIGMA,sensitivity=2,relation=replace-one,count=$T --delta 1e-5
acct_eps=$(awk -v m="$method" '$1 == m { print $2 }' "$TMP/out")
checks=$((checks + 1))
[ -n "$run_eps" ] && [ "$run_eps" = "$acct_eps" ] ||
  fail "run eps '$run_eps' ($method) differs from dpgd account's '$acct_eps'"
expect_out account-exact-na '^exact +n/a'
checks=$((checks + 1))
case $done_line in
  *"($method, delta 1e-05)"*) ;;
  *) fail "the done line does not name $method: $done_line" ;;
esac
echo "m=$M n=$N sigma=$SIGMA steps=$T: run eps $run_eps ($method), dpgd account $acct_eps"

# Calibrated for eps 2 under rdp_optimal: the dry run reports at most 2 under it.
expect_ok calibrate "$DPGD" train --config "$CFG" "${BASE[@]}" \
  --set privacy.calibrate=sigma --set privacy.epsilon=2 --set privacy.method=rdp_optimal \
  --dry-run
expect_out calibrate-sampler '^algorithm +DP-SGD, subset sampling: exactly m = 64 points'
cal=$(awk '$1 == "rdp_optimal" { print $2 }' "$TMP/out")
checks=$((checks + 1))
awk -v e="$cal" 'BEGIN { exit !(e <= 2 && e > 1.9) }' || fail "calibrated eps '$cal' not in (1.9, 2]"

# Killed (SIGKILL) after a few rows, resumed: the bytes of the uninterrupted run, which
# needs the sampler's stream from the checkpoint.
expect_kill_resume killed "$TMP/killed" 5

# Refused, one line naming the keys.
R0=(--config "$CFG" --set data.dir="$MNIST" --set data.n_train=$N --set train.steps=10 --dry-run)
R=("${R0[@]}" --set privacy.calibrate=none --set privacy.sigma=2)
S=(--set train.sampling=subset --set train.batch_size=$M)
expect_fail filter 'train.sampling = subset with filter.enabled = true' \
  "$DPGD" train "${R[@]}" "${S[@]}" --set filter.enabled=true --set filter.k=5
expect_fail no-m 'train.sampling = subset needs train.batch_size >= 1' \
  "$DPGD" train "${R[@]}" --set train.sampling=subset
expect_fail big-m 'train.batch_size = 1001 exceeds the 1000 training points' \
  "$DPGD" train "${R[@]}" --set train.sampling=subset --set train.batch_size=1001
expect_fail rate 'train.sample_rate and train.epochs apply to train.sampling = poisson only' \
  "$DPGD" train "${R[@]}" "${S[@]}" --set train.sample_rate=0.1
expect_fail exact 'privacy.method = exact cannot calibrate' \
  "$DPGD" train "${R0[@]}" "${S[@]}" --set privacy.calibrate=sigma --set privacy.epsilon=1
expect_fail m-without-subset 'train.batch_size applies to train.sampling = subset only' \
  "$DPGD" train "${R[@]}" --set train.batch_size=$M

# The help names the samplers and says why epoch-wise shuffling is not offered.
expect_ok help "$DPGD" train --help
expect_out help-samplers 'Samplers offered: full, poisson, subset'
expect_out help-shuffling 'Chua et al'
finish
