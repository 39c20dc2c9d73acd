# signals.sh -- SIGTERM and SIGINT stop `dpgd train` after the step in progress: a
# checkpoint, one line on stderr naming the signal, the step and the resume command, exit
# status 128 + signal; --resume then ends with the bytes of an uninterrupted run.
. "$(dirname "$0")/lib.sh"
CFG=${DPGD_SOURCE_DIR:-$(dirname "$0")/../..}/configs/softmax.ini
export OMP_NUM_THREADS=1
SET=(--set data.dir="$MNIST" --set data.n_train=1000 --set data.n_test=200
     --set model.threads=1 --set train.steps=60 --set privacy.calibrate=none
     --set privacy.sigma=4 --set output.checkpoint_every=25 --set train.eval_every=10)

expect_ok reference "$DPGD" train --config "$CFG" "${SET[@]}" --out "$TMP/ref" --quiet

# stop_and_resume NAME SIGNAL STATUS: sends SIGNAL once a few rows are out.
stop_and_resume() {
  local name=$1 sig=$2 want=$3 dir=$TMP/$1
  start_run "$name" "$dir" 4
  kill -"$sig" $run_pid
  wait $run_pid
  local rc=$?
  checks=$((checks + 1))
  [ $rc -eq "$want" ] || fail "$name: exit $rc, expected $want: $(head -c 300 "$TMP/$name.err")"
  expect_stderr_line "$name" \
    "^dpgd: stopped by SIG$sig after step [0-9]+; resume with: dpgd train --resume $dir\$"
  local step rows
  step=$(sed -n 's/.*after step \([0-9]*\);.*/\1/p' "$TMP/$name.err")
  rows=$(($(wc -l < "$dir/metrics.csv") - 1))
  checks=$((checks + 1))
  [ "${step:-0}" -gt 0 ] && [ "$step" -lt 60 ] && [ "$rows" -eq "$step" ] ||
    fail "$name: stopped after step '$step' with $rows metrics rows"
  expect_ok "$name-resume" "$DPGD" train --resume "$dir" --quiet
  expect_out "$name-resumed-after" "^resuming +after step $step\$"
  expect_same_as_ref "$name" "$dir"
}

stop_and_resume term TERM 143
stop_and_resume int INT 130
finish
