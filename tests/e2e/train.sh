# train.sh -- 'dpgd train' end to end on a MNIST subset with the softmax model: a short
# run learns (test accuracy far above chance) and writes the run directory of
# train/RUN_FORMAT.md; a run killed with SIGKILL mid-training and resumed with --resume
# ends bit-identical (model.bin, points.csv, metrics.csv) to an uninterrupted run; bad
# configurations and resume targets fail with one-line errors.
. "$(dirname "$0")/lib.sh"
CFG=${DPGD_SOURCE_DIR:-$(dirname "$0")/../..}/configs/softmax.ini
export OMP_NUM_THREADS=2
SUB=(--set data.dir="$MNIST" --set data.n_train=3000 --set data.n_test=2000
     --set model.threads=2 --set output.progress=false)

# 0. --dry-run prints the plan (docs/MATH.md's worked example: eps 0.2033 exact, 0.3007 zCDP)
# and trains nothing.
PAPER=$(dirname "$CFG")/paper/eps03-plain.ini
expect_ok dry-run "$DPGD" train --config "$PAPER" --set data.dir="$MNIST" --dry-run \
  --out "$TMP/dry"
expect_out dry-run-exact '^  exact +0\.2032[0-9]*$'
expect_out dry-run-zcdp '^  zcdp +0\.3006[0-9]*$'
checks=$((checks + 1)); [ ! -e "$TMP/dry" ] || fail "dry-run: created the run directory"

# 1. A short filtered run with private stopping learns; the run directory is complete.
R=$TMP/learn
expect_ok learn "$DPGD" train --config "$CFG" "${SUB[@]}" --set filter.enabled=true \
  --set filter.k=30 --set train.steps=0 --set stopping.queries=3 --set stopping.every=5 \
  --out "$R"
expect_out learn-plan '^  exact +1$'
for f in config.ini metrics.csv summary.json model.bin points.csv checkpoint.bin; do
  checks=$((checks + 1)); [ -s "$R/$f" ] || fail "learn: $f missing or empty"
done
# A research run warns, once, that its noise is reproducible from the seed and when its
# eps holds: a seed of 128 secret bits, never the public default.
checks=$((checks + 1))
[ "$(grep -c '^dpgd: warning: research rng: the noise is reproducible from train.seed, so the printed eps holds only if the seed has at least 128 bits of secret entropy and stays secret; the default seed (1) is public' "$TMP/err")" -eq 1 ] ||
  fail "learn: no research-mode warning on stderr: $(head -c 300 "$TMP/err")"
expect_acc learn "$R/summary.json" 0.6
echo "learn: test accuracy $acc (chance 0.1)"
checks=$((checks + 1))
grep -q '"algorithm": "filtered".*' "$R/summary.json" && grep -q '"rng": "research"' "$R/summary.json" \
  && grep -q '"steps": 40' "$R/summary.json" && grep -q '"queries": 3' "$R/summary.json" \
  || fail "learn: summary.json fields: $(head -c 400 "$R/summary.json")"
checks=$((checks + 1))
[ "$(wc -l < "$R/metrics.csv")" -eq 41 ] || fail "learn: metrics.csv should have 40 rows"
checks=$((checks + 1))
head -1 "$R/points.csv" | grep -q '^# SENSITIVE.*one family of statements that hold together at the run.s delta: delta_level is the share of delta.*not a delta on its own' &&
  sed -n 2p "$R/points.csv" |
  grep -qx 'index,label,spend,spend_frac,active,level,delta_level,mu_i,eps_i' || fail "learn: points.csv header"
checks=$((checks + 1))
[ "$(wc -l < "$R/points.csv")" -eq 3002 ] || fail "learn: points.csv should have 3000 rows"
expect_fail learn-again 'finished run' "$DPGD" train --config "$CFG" "${SUB[@]}" --out "$R"
expect_fail resume-finished 'finished run' "$DPGD" train --resume "$R"

# 2. SIGKILL mid-training, then --resume: bit-identical to the uninterrupted run.
KILLSET=(--set data.n_train=1500 --set train.steps=120 --set output.checkpoint_every=7
         --set stopping.queries=4 --set stopping.every=9 --set output.diagnostics=true)
expect_ok full "$DPGD" train --config "$CFG" "${SUB[@]}" "${KILLSET[@]}" --out "$TMP/full"
"$DPGD" train --config "$CFG" "${SUB[@]}" "${KILLSET[@]}" --out "$TMP/cut" >/dev/null 2>&1 &
pid=$!
rows=0
for _ in $(seq 1 2000); do
  rows=$( (wc -l < "$TMP/cut/metrics.csv") 2>/dev/null || echo 0)
  [ "$rows" -gt 30 ] && break
  sleep 0.01
done
kill -9 $pid 2>/dev/null
wait $pid 2>/dev/null
checks=$((checks + 1))
if [ -e "$TMP/cut/summary.json" ]; then
  fail "kill: the run finished before SIGKILL (saw $rows rows); make it longer"
else
  echo "kill: SIGKILL after $(($(wc -l < "$TMP/cut/metrics.csv") - 1)) metrics rows"
fi
expect_fail open-unfinished '--resume' "$DPGD" train --config "$CFG" "${SUB[@]}" \
  "${KILLSET[@]}" --out "$TMP/cut"
expect_ok resume "$DPGD" train --resume "$TMP/cut"
expect_out resume-said '^resuming +after step [1-9][0-9]*$'
for f in model.bin points.csv metrics.csv; do
  checks=$((checks + 1))
  cmp -s "$TMP/full/$f" "$TMP/cut/$f" || fail "resume: $f differs from the uninterrupted run"
done

# 2b. A run directory in use by a running process cannot be resumed or restarted by a
# second one (flock on RUN_DIR/lock); the kill-and-resume above shows that SIGKILL
# releases it.
"$DPGD" train --config "$CFG" "${SUB[@]}" --set data.n_train=500 --set train.steps=1000000 \
  --set train.eval_every=0 --out "$TMP/busy" >/dev/null 2>&1 &
pid=$!
for _ in $(seq 1 3000); do
  [ "$( (wc -l < "$TMP/busy/metrics.csv") 2>/dev/null || echo 0)" -gt 2 ] && break
  sleep 0.01
done
expect_fail busy-resume 'in use by another dpgd process' timeout 120 "$DPGD" train --resume "$TMP/busy"
kill -9 $pid 2>/dev/null
wait $pid 2>/dev/null

# 3. Corrupt checkpoint and bad configurations: one-line errors, no crash.
cp -r "$TMP/full" "$TMP/bad"; rm "$TMP/bad/summary.json"
printf '\x5a' | dd of="$TMP/bad/checkpoint.bin" bs=1 seek=100 conv=notrunc 2>/dev/null
expect_fail corrupt-ckpt 'checkpoint|corrupt|checksum' "$DPGD" train --resume "$TMP/bad"
expect_fail resume-none 'config.ini|No such' "$DPGD" train --resume "$TMP/nothing"
expect_fail no-config '--config' "$DPGD" train
expect_fail missing-file 'nope.ini' "$DPGD" train --config "$TMP/nope.ini"
expect_fail sigma0 'privacy.sigma' "$DPGD" train --config "$CFG" "${SUB[@]}" \
  --set privacy.calibrate=none --set privacy.sigma=0 --out "$TMP/b1"
expect_fail unknown-key 'nosuch' "$DPGD" train --config "$CFG" --set train.nosuch=1 --out "$TMP/b2"
expect_fail nan-lr 'train.lr' "$DPGD" train --config "$CFG" --set train.lr=nan --out "$TMP/b3"
expect_fail no-fit 'do not fit' "$DPGD" train --config "$CFG" "${SUB[@]}" \
  --set stopping.queries=30 --set stopping.every=5 --out "$TMP/b4"
expect_fail too-many 'n_train' "$DPGD" train --config "$CFG" "${SUB[@]}" \
  --set data.n_train=70000 --out "$TMP/b5"
expect_fail bad-arg 'unknown argument' "$DPGD" train --config "$CFG" --bogus

# 3b. Long paths: a run directory and a data directory whose config.ini lines are longer
# than inih's line buffer (200 characters) resume bit for bit like section 2's run; a
# run directory longer than the limit, or one config.ini cannot carry back, is refused
# before anything is written (it was cut to another directory, exit 0).
LONG=$TMP/$(printf 'd%.0s' $(seq 1 200))/$(printf 'e%.0s' $(seq 1 200))
mkdir -p "$LONG"
ln -s "$(cd "$MNIST" && pwd)" "$LONG/mnist"
ln -s "$TMP/full" "$TMP/ref"
SET=("${SUB[@]}" "${KILLSET[@]}" --set data.dir="$LONG/mnist")
expect_kill_resume long-paths "$LONG/run" 30
checks=$((checks + 1))
grep -qx "dir = $LONG/run" "$LONG/run/config.ini" || fail "long-paths: output.dir not in config.ini"
HUGE=$TMP/$(printf 'f%.0s' $(seq 1 250))/$(printf 'g%.0s' $(seq 1 250))
HUGE=$HUGE/$(printf 'h%.0s' $(seq 1 250))/$(printf 'i%.0s' $(seq 1 250))/run
expect_fail out-too-long "run directory: path of 1[0-9]{3} characters, longer than 1023" \
  "$DPGD" train --config "$CFG" "${SUB[@]}" --out "$HUGE"
expect_fail dir-too-long "output.dir: .*longer than 1023" \
  "$DPGD" train --config "$CFG" "${SUB[@]}" --set output.dir="$HUGE"
expect_fail out-comment "would start a comment in config.ini" \
  "$DPGD" train --config "$CFG" "${SUB[@]}" --out "$TMP/a ;b"
expect_fail out-space "ending with a space" "$DPGD" train --config "$CFG" "${SUB[@]}" --out "$TMP/sp "
expect_fail out-newline "line break" "$DPGD" train --config "$CFG" "${SUB[@]}" --out "$TMP/a
b"
expect_fail resume-too-long "run directory: path of" "$DPGD" train --resume "$HUGE"
checks=$((checks + 1))
[ -z "$(ls -d "$TMP"/ffff* "$TMP/a ;b" "$TMP/sp " "$TMP/a"* 2>/dev/null)" ] ||
  fail "refused run directories were created: $(ls -d "$TMP"/ffff* "$TMP"/a* "$TMP/sp " 2>/dev/null)"

# 4. Fashion-MNIST (Debian's dataset-fashion-mnist; .ci/run installs it): the shipped
# config trains on a subset far above chance.
if [ -d "$FASHION" ]; then
  expect_ok fashion "$DPGD" train --config "$(dirname "$CFG")/fashion-softmax.ini" \
    --set data.dir="$FASHION" --set data.n_train=3000 --set data.n_test=2000 \
    --set output.progress=false --out "$TMP/fashion"
  expect_acc fashion "$TMP/fashion/summary.json" 0.5
  echo "fashion: test accuracy $acc (chance 0.1)"
else
  fashion_absent
fi
finish
