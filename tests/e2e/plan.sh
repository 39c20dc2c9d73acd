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

finish
