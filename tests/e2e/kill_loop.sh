# kill_loop.sh -- a run killed with SIGKILL at ten random moments (a fixed seed for the
# test; sessions checkpoint every step, so many kills land while a checkpoint is being
# written) and resumed after each, loses nothing: research mode ends with the model.bin,
# points.csv and metrics.csv of an uninterrupted run byte for byte, and summary.json
# equal but for its timing; secure mode (whose noise cannot be replayed) ends with one
# metrics row per step in order, every --resume accepted with "redone 0 released
# steps", and the summary counting every step and every query row once.
. "$(dirname "$0")/lib.sh"
CFG=${DPGD_SOURCE_DIR:-$(dirname "$0")/../..}/configs/softmax.ini
export OMP_NUM_THREADS=1
RANDOM=2385
T=60
SET=(--set data.dir="$MNIST" --set data.n_train=1000 --set data.n_test=200
     --set model.threads=1 --set train.steps=$T --set privacy.calibrate=none
     --set privacy.sigma=4 --set output.checkpoint_every=1 --set train.eval_every=10
     --set stopping.queries=5 --set stopping.every=10 --set stopping.tau_frac=0.05)
KILLS=10

# no_wall FILE: summary.json without its timing field.
no_wall() { sed -E 's/"wall_s": [0-9.]+, ?//' "$1"; }

# kill_loop DIR MODE: runs DIR to the end, killed KILLS times; sessions left in $sessions.
kill_loop() {
  local dir=$1 mode=$2 kills=0 pid rc s=0
  while :; do
    s=$((s + 1))
    if [ ! -e "$dir/checkpoint.bin" ]; then
      # Killed before its first checkpoint (or not started): nothing to resume.
      rm -rf "$dir"
      "$DPGD" train --config "$CFG" "${SET[@]}" --set train.rng="$mode" --out "$dir" \
        --quiet >"$TMP/$mode.s$s.out" 2>"$TMP/$mode.s$s.err" &
    else
      "$DPGD" train --resume "$dir" --quiet >"$TMP/$mode.s$s.out" 2>"$TMP/$mode.s$s.err" &
    fi
    pid=$!
    if [ $kills -lt $KILLS ]; then
      # 20..400 ms in short random sleeps, so kills fall anywhere in a step.
      local ms=$((20 + RANDOM % 380))
      while [ $ms -gt 0 ] && kill -0 $pid 2>/dev/null; do
        sleep 0.0$((RANDOM % 5 + 1)); ms=$((ms - 30))
      done
      kill -9 $pid 2>/dev/null
    fi
    wait $pid
    rc=$?
    if grep -q '^resuming' "$TMP/$mode.s$s.out"; then
      if [ "$mode" = secure ]; then
        checks=$((checks + 1))
        grep -Eq '^redone +0 released steps' "$TMP/$mode.s$s.out" ||
          fail "$mode session $s: no 'redone 0 released steps' line"
      fi
    fi
    if [ $rc -eq 137 ]; then
      kills=$((kills + 1))
    elif [ $rc -ne 0 ]; then
      fail "$mode session $s: exit $rc: $(head -c 300 "$TMP/$mode.s$s.err")"; break
    fi
    [ -e "$dir/summary.json" ] && break
    [ $s -lt 40 ] || { fail "$mode: no end after $s sessions"; break; }
  done
  sessions=$s
  echo "$mode: $kills kills in $s sessions"
  checks=$((checks + 1))
  [ $kills -ge 5 ] || fail "$mode: only $kills kills landed before the run ended"
}

# Research: the bytes of an uninterrupted run.
expect_ok reference "$DPGD" train --config "$CFG" "${SET[@]}" --out "$TMP/ref" --quiet
kill_loop "$TMP/res" research
expect_same_as_ref research "$TMP/res"
checks=$((checks + 1))
[ "$(no_wall "$TMP/ref/summary.json")" = "$(no_wall "$TMP/res/summary.json")" ] ||
  fail "research: summary.json differs beyond wall_s"

# Secure: one row per step 1..T in order; the summary counts T steps and the queries
# in the rows (5).
kill_loop "$TMP/sec" secure
expect_rows_1_to secure "$TMP/sec" $T
checks=$((checks + 1))
grep -q "\"steps\": $T, .*\"queries\": 5," "$TMP/sec/summary.json" && [ "$q_rows" -eq 5 ] ||
  fail "secure: summary.json steps/queries vs $T steps and $q_rows query rows"
finish
