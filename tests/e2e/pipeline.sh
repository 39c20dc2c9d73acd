# pipeline.sh -- a tiny real training, then everything that reads its run directory:
# 'dpgd plot' (all five figures of a filtered run with diagnostics), 'dpgd eval' (on the
# trainer's own test subset it must reproduce summary.json's test accuracy exactly) and
# 'dpgd predict' on real MNIST PNGs (mnist_png_sample: the class of every file equals
# eval's prediction for the same pixels read as a dataset folder), and 'dpgd sweep' of
# 2 cells x 2 seeds (tables against the trials' summary.json, resume, --table).
# Softmax on a 1000-example MNIST subset: seconds.
. "$(dirname "$0")/lib.sh"
SRC=${DPGD_SOURCE_DIR:-$(dirname "$0")/../..}
CFG=$SRC/configs/softmax.ini
png_sample "$TMP/mnist_png_sample"   # lib.sh: written from the IDX files
export OMP_NUM_THREADS=1
SUB=(--set data.dir="$MNIST" --set data.n_train=1000 --set data.n_test=500
     --set model.threads=1 --set output.progress=false)

# 1. train: filtered, private stopping, diagnostics on
R=$TMP/run
expect_ok train "$DPGD" train --config "$CFG" "${SUB[@]}" --set filter.enabled=true \
  --set filter.k=20 --set train.steps=0 --set stopping.queries=3 --set stopping.every=5 \
  --set output.diagnostics=true --set train.eval_every=5 --out "$R"
expect_acc train "$R/summary.json" 0.4

# 2. plot: the five figures
expect_ok plot "$DPGD" plot "$R"
for f in accuracy active eps spend tradeoff; do
  checks=$((checks + 1))
  [ "$(head -c 4 "$R/figures/$f.png" 2>/dev/null | od -An -c | tr -d ' ')" = '211PNG' ] ||
    fail "plot: $f.png missing or not a PNG"
done

# 3. eval on the same 500 test examples: the same accuracy as the trainer measured
expect_ok eval "$DPGD" eval --model "$R/model.bin" --data "$MNIST" --n 500
expect_out eval-norm 'run/config\.ini'
checks=$((checks + 1))
got=$(sed -n 's/^accuracy  \([0-9.]*\) .*/\1/p' "$TMP/out")
awk -v a="$acc" -v g="$got" 'BEGIN { exit !(a - g < 5e-5 && g - a < 5e-5) }' ||
  fail "eval accuracy $got, summary.json test_acc $acc"

# 4. predict on real MNIST PNGs agrees with eval of the same pixels as a folder
if [ -d "$SAMPLE/testing" ]; then
  expect_ok eval-sample "$DPGD" eval --model "$R/model.bin" --data "$SAMPLE" --predictions "$TMP/p.csv"
  checks=$((checks + 1))
  awk -F, 'NR > 1 { n++; c += $2 == $3 } END { exit !(n >= 20 && c / n > 0.4) }' "$TMP/p.csv" ||
    fail "eval-sample: accuracy on the PNG sample not above 0.4"
  imgs=()
  while IFS=, read -r idx label pred; do
    [ "$idx" = index ] || imgs+=("$SAMPLE/testing/$label/$idx.png")
  done <"$TMP/p.csv"
  expect_ok predict-sample "$DPGD" predict --model "$R/model.bin" "${imgs[@]}"
  checks=$((checks + 1))
  [ "$(awk '{ print $3 }' "$TMP/out" | tr '\n' ' ')" = "$(tail -n +2 "$TMP/p.csv" | cut -d, -f3 | tr '\n' ' ')" ] ||
    fail "predict on the PNG sample disagrees with eval"
  checks=$((checks + 1))
  awk '{ s = 0; for (i = 5; i <= NF; i++) { split($i, kv, ":"); s += kv[2] }
         if (s < 0.999 || s > 1.001) bad = 1 } END { exit bad }' "$TMP/out" ||
    fail "predict: probabilities do not sum to 1"
else
  fail "no PNG sample at $SAMPLE"
fi

# 5. sweep: 2 cells x 2 seeds, 2 workers; tables against the trials; resume; --table
W=$TMP/sweep
SW=(--config "$CFG" "${SUB[@]}" --set train.steps=15 --grid train.lr=0.2,0.5 --seeds 1-2
    --jobs 2 --out "$W")
expect_ok sweep "$DPGD" sweep "${SW[@]}"
checks=$((checks + 1))
[ "$(ls "$W"/*/seed*/summary.json 2>/dev/null | wc -l)" = 4 ] || fail "sweep: not 4 finished trials"
for cell in softmax+train.lr=0.2 softmax+train.lr=0.5; do
  checks=$((checks + 1))
  want=$(for k in 1 2; do summary_acc "$W/$cell/seed$k/summary.json"; done |
         awk '{ x[NR] = $1 } END { m = (x[1] + x[2]) / 2; d = x[1] - x[2]; if (d < 0) d = -d
                printf "%.6f %.6f", m, d / sqrt(2) }')
  got=$(awk -F, -v c="$cell" '$1 == c { printf "%.6f %.6f", $5, $6 }' "$W/summary.csv")
  [ "$want" = "$got" ] || fail "sweep: $cell mean/std '$got', from the trials '$want'"
done
checks=$((checks + 1))
grep -q '^| softmax+train.lr=0.5 | plain | 2 | (' "$W/summary.md" || fail "summary.md row: $(cat "$W/summary.md")"
expect_ok sweep-again "$DPGD" sweep "${SW[@]}"
checks=$((checks + 1))
grep -q '4 finished before, 0 to run' "$TMP/err" || fail "sweep-again: $(head -1 "$TMP/err")"
rm "$W/softmax+train.lr=0.5/seed2/summary.json"
cp "$W/summary.csv" "$TMP/summary.csv"
expect_ok sweep-resume "$DPGD" sweep "${SW[@]}"
checks=$((checks + 1))
grep -q '3 finished before, 1 to run' "$TMP/err" || fail "sweep-resume: $(head -1 "$TMP/err")"
checks=$((checks + 1))
# the table without its wall-time columns (the resumed trial's own time differs)
cmp -s <(cut -d, -f1-12 "$W/summary.csv") <(cut -d, -f1-12 "$TMP/summary.csv") ||
  fail "sweep-resume: a resumed trial changed the table"
rm "$W/summary.md"
expect_ok sweep-table "$DPGD" sweep --table "$W"
checks=$((checks + 1))
[ -s "$W/summary.md" ] || fail "sweep --table did not write summary.md"
expect_ok plot-seeds "$DPGD" plot --only accuracy,eps "$W"/softmax+train.lr=0.2/seed*
finish
