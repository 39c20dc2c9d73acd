# dpsgd.sh -- DP-SGD with Poisson sampling end to end: a small run's summary.json names
# the sampler and its rate, and its eps is the one `dpgd account --subsampled` prints
# for the same (q, sigma, steps); the DP-SGD config plans (dry run); a research run
# killed with SIGKILL resumes to the bytes of an uninterrupted one; the combinations not
# supported are refused with one line naming the keys; with individual filtering
# (filter.k >= steps: the budget is never reached) the run is the unfiltered one bit for
# bit; heavy-ball momentum keeps eps and resumes bit for bit.
. "$(dirname "$0")/lib.sh"
SRC=${DPGD_SOURCE_DIR:-$(dirname "$0")/../..}
CFG=$SRC/configs/softmax.ini
export OMP_NUM_THREADS=1
Q=0.05 SIGMA=1.385 T=20
SET=(--set data.dir="$MNIST" --set data.n_train=1000 --set data.n_test=200
     --set model.threads=1 --set train.steps=$T --set privacy.calibrate=none
     --set privacy.sigma=$SIGMA --set train.sampling=poisson --set train.sample_rate=$Q
     --set output.checkpoint_every=2 --set train.eval_every=5)

# The reference run: the sampler in summary.json; eps equal to the accountant's.
expect_ok reference "$DPGD" train --config "$CFG" "${SET[@]}" --out "$TMP/ref" --quiet
checks=$((checks + 1))
grep -q "\"sampling\": \"poisson\", \"sample_rate\": 0.05" "$TMP/ref/summary.json" ||
  fail "summary.json lacks the sampler: $(head -c 300 "$TMP/ref/summary.json")"
run_eps=$(sed -n 's/.*"eps": {"exact": \([0-9.e+-]*\),.*/\1/p' "$TMP/ref/summary.json")
expect_ok account "$DPGD" account --subsampled q=$Q,sigma=$SIGMA,count=$T --delta 1e-5
acct_eps=$(awk '$1 == "exact" { print $2 }' "$TMP/out")
checks=$((checks + 1))
[ -n "$run_eps" ] && [ "$run_eps" = "$acct_eps" ] ||
  fail "run eps '$run_eps' differs from dpgd account's '$acct_eps'"
echo "q=$Q sigma=$SIGMA steps=$T: run eps $run_eps, dpgd account $acct_eps"

# Filtered, budget never reached: the same model and metrics.
expect_ok filtered "$DPGD" train --config "$CFG" "${SET[@]}" --set filter.enabled=true \
  --set filter.k=$T --set filter.refresh=3 --out "$TMP/filt" --quiet
for f in model.bin metrics.csv; do
  checks=$((checks + 1))
  cmp -s "$TMP/ref/$f" "$TMP/filt/$f" || fail "filtered (k = steps) $f differs from unfiltered"
done
checks=$((checks + 1))
grep -q '"method": "rdp_optimal", "exact": null' "$TMP/filt/summary.json" ||
  fail "summary.json lacks the filter's guarantee"

# Filtered, a budget of 5 full-rate steps over 20: the filter's eps is below the
# composition's, and the last line prints the filter's (both hold; the smaller is the run's).
expect_ok filtered-k5 "$DPGD" train --config "$CFG" "${SET[@]}" --set filter.enabled=true \
  --set filter.k=5 --out "$TMP/filt5"
expect_out filtered-k5-line "^done +20 steps; eps [0-9.]+ \(the filter's, rdp_optimal, delta 1e-05; the composition gives"
f_eps=$(sed -n "s/^done .* eps \([0-9.]*\) (the filter's.*/\1/p" "$TMP/out")
c_eps=$(sed -n "s/^done .*the composition gives \([0-9.]*\),.*/\1/p" "$TMP/out")
checks=$((checks + 1))
awk -v f="$f_eps" -v c="$c_eps" 'BEGIN { exit !(f > 0 && f < c) }' ||
  fail "filtered-k5: filter eps '$f_eps' not below the composition's '$c_eps'"

# The DP-SGD config plans: sigma calibrated for eps 1 over ceil(15/q) steps.
expect_ok dpsgd-config "$DPGD" train --config "$SRC/configs/dpsgd/mnist-cnn-eps1.ini" \
  --set data.dir="$MNIST" --dry-run
expect_out dpsgd-config-sampler '^algorithm +DP-SGD, Poisson sampling: rate q = 0.00426667'
expect_out dpsgd-config-steps '^steps +3516$'
expect_out dpsgd-config-eps '^  exact +1$'

# Killed (SIGKILL) after a few rows, resumed: the bytes of the uninterrupted run, which
# needs the sampler's stream from the checkpoint.
expect_kill_resume killed "$TMP/killed" 5

# Heavy-ball momentum is post-processing: another model than the plain run's, the same eps,
# and a run killed mid-way resumes to the bytes of an uninterrupted one (the velocity is in
# the checkpoint). train.momentum = 0 is the plain run, bit for bit.
mv "$TMP/ref" "$TMP/plain"
expect_ok momentum-zero "$DPGD" train --config "$CFG" "${SET[@]}" --set train.momentum=0 \
  --out "$TMP/m0" --quiet
expect_same_files momentum-zero "$TMP/plain" "$TMP/m0" "the run without momentum"
SET+=(--set train.momentum=0.9)
expect_ok momentum "$DPGD" train --config "$CFG" "${SET[@]}" --out "$TMP/ref" --quiet
checks=$((checks + 1))
cmp -s "$TMP/plain/model.bin" "$TMP/ref/model.bin" && fail "momentum 0.9 changed nothing"
m_eps=$(sed -n 's/.*"eps": {"exact": \([0-9.e+-]*\),.*/\1/p' "$TMP/ref/summary.json")
checks=$((checks + 1))
[ "$m_eps" = "$run_eps" ] || fail "momentum changed eps: $m_eps, plain $run_eps"
expect_kill_resume momentum-killed "$TMP/mkilled" 5
expect_fail momentum-range 'train.momentum: must be < 1' "$DPGD" train --config "$CFG" \
  "${SET[@]}" --set train.momentum=1 --out "$TMP/mr" --quiet
expect_fail momentum-negative 'train.momentum: must be >= 0' "$DPGD" train --config "$CFG" \
  "${SET[@]}" --set train.momentum=-0.5 --out "$TMP/mr" --quiet

# Refused, one line naming the keys.
R=(--config "$CFG" --set data.dir="$MNIST" --set privacy.calibrate=none --set privacy.sigma=2
   --dry-run)
P=(--set train.sampling=poisson --set train.sample_rate=$Q)
expect_fail filter-budget 'train.sampling = poisson with filter.enabled: the budget is filter.k' \
  "$DPGD" train "${R[@]}" "${P[@]}" --set filter.enabled=true --set filter.budget=5
expect_fail filter-refresh 'filter.refresh must be a whole number' \
  "$DPGD" train "${R[@]}" "${P[@]}" --set filter.enabled=true --set filter.k=5 \
  --set filter.refresh=2.5
expect_fail rate 'train.sample_rate: must be <= 1' \
  "$DPGD" train "${R[@]}" "${P[@]}" --set train.sample_rate=1.5
expect_fail no-rate 'train.sampling = poisson needs train.sample_rate' \
  "$DPGD" train "${R[@]}" --set train.sampling=poisson
finish
