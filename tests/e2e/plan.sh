# plan.sh -- contradictory privacy keys are refused by `dpgd train` before anything runs
# (a value that calibration would overwrite is an error, not silently replaced).
. "$(dirname "$0")/lib.sh"

CFG="$(cd "$(dirname "$0")/../.." && pwd)/configs"
D="--set data.dir=$MNIST"
expect_fail sigma-vs-calibrate 'privacy.sigma = 8 conflicts with privacy.calibrate = sigma' \
  "$DPGD" train --config "$CFG/softmax.ini" $D --set privacy.sigma=8 --dry-run
expect_fail budget-vs-calibrate 'filter.budget/filter.k conflict with privacy.calibrate = budget' \
  "$DPGD" train --config "$CFG/paper/eps03-exact-filtered.ini" $D --set filter.k=100 --dry-run
expect_ok sigma-given "$DPGD" train --config "$CFG/softmax.ini" $D --set privacy.calibrate=none \
  --set privacy.sigma=8 --dry-run
expect_out sigma-given 'sigma = 8, clip C = 1'

# Plans that cannot state a finite guarantee, or whose counts overflow, are refused; a
# plan of 1e10 steps is made in constant time (the accountant takes counted entries).
cat >"$TMP/p.ini" <<INI
[model]
type = softmax
[train]
steps = 100
[privacy]
sigma = 170
clip = 10
[output]
dir = $TMP/run
INI
P="--config $TMP/p.ini $D --set data.n_train=500"
expect_fail tau-zero 'no finite guarantee' "$DPGD" train $P --set train.steps=3 \
  --set stopping.queries=1 --set stopping.tau_frac=1e-300 --dry-run
expect_fail span-overflow 'span more steps than can be counted' "$DPGD" train $P \
  --set stopping.queries=3 --set stopping.every=9223372036854775808 --dry-run
expect_fail clip-underflow 'privacy.clip = 1e-170: its square is outside' "$DPGD" train $P \
  --set privacy.clip=1e-170 --dry-run
expect_ok huge-steps timeout 30 "$DPGD" train $P --set train.steps=10000000000 --dry-run
expect_out huge-steps 'steps       10000000000'
expect_ok huge-budget timeout 30 "$DPGD" train $P --set filter.enabled=true \
  --set filter.k=1e13 --set train.steps=0 --dry-run
[ -e "$TMP/run" ] && fail "a dry run created the run directory"

finish
