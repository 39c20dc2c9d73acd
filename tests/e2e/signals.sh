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

# A resume checks metrics.csv against the checkpoint: rows cut off, a line of garbage
# appended, an edited header are refused on one line (file untouched), while a partial
# last line (what a kill leaves) is cut and the run ends with the uninterrupted bytes.
damaged_metrics() {
  local dir=$TMP/damaged
  start_run damaged "$dir" 4
  kill -TERM $run_pid
  wait $run_pid
  local c
  for c in cut garbage header partial; do
    rm -rf "$TMP/d-$c" && cp -a "$dir" "$TMP/d-$c"
    local m=$TMP/d-$c/metrics.csv
    case $c in
      cut) sed -i '$d' "$m" ;;
      garbage) echo "garbage,1,2" >>"$m" ;;
      header) sed -i '1s/step,eps_exact/step,eps_edited/' "$m" ;;
      partial) printf '%s' "$(($(wc -l <"$m"))),0.12" >>"$m" ;;
    esac
    cp "$m" "$TMP/before-$c"
    if [ $c = partial ]; then
      expect_ok "metrics $c: resume" "$DPGD" train --resume "$TMP/d-$c" --quiet
      expect_same_as_ref "metrics $c" "$TMP/d-$c"
      continue
    fi
    case $c in
      cut) pat="ends at step [0-9]+ but the checkpoint is at step [0-9]+: rows are missing" ;;
      garbage) pat="line [0-9]+ is not the next step's row: the file was edited or damaged" ;;
      header) pat="line 1 is not this run's header" ;;
    esac
    expect_fail "metrics $c: resume refused" "$pat" "$DPGD" train --resume "$TMP/d-$c" --quiet
    checks=$((checks + 1))
    cmp -s "$m" "$TMP/before-$c" || fail "metrics $c: a refused resume changed metrics.csv"
  done
}

stop_and_resume term TERM 143
stop_and_resume int INT 130
damaged_metrics
finish
