# eval.sh -- 'dpgd eval' and 'dpgd predict' without training: an untrained model file
# and synthetic PNGs (tests/train/eval_fixture). predict, reading single files, must give
# the class eval gives to the same pixels read as a dataset folder, with probabilities
# that sum to 1 and peak at that class; bad model files, bad PNGs and bad options give
# one-line errors. (pipeline.sh does the same with a trained model and real MNIST PNGs.)
. "$(dirname "$0")/lib.sh"
FIX=${DPGD_BUILD_DIR:-build}/tests/train/eval_fixture
[ -x "$FIX" ] || { echo "FAIL: $FIX not built"; exit 1; }

"$FIX" model "$TMP/m.bin" softmax 2385 || fail "eval_fixture model failed"
"$FIX" pngs "$TMP/ds" 40 28 28 || fail "eval_fixture pngs failed"
"$FIX" pngs "$TMP/small" 1 9 7 || fail "eval_fixture pngs failed"

expect_ok eval "$DPGD" eval --model "$TMP/m.bin" --data "$TMP/ds" --predictions "$TMP/p.csv"
expect_out eval-count 'test split: 40 examples'
expect_out eval-acc '^accuracy  0\.[0-9]{4} \([0-9]+ of 40 correct\)$'
expect_out eval-params '7850 parameters, 10 classes'
checks=$((checks + 1))
grep -q 'not private' "$TMP/out" && fail "eval on the test split labelled as training data"
# On the training split the figures are a diagnostic of training data, labelled so.
cp -r "$TMP/ds/testing" "$TMP/ds/training"
expect_ok eval-train "$DPGD" eval --model "$TMP/m.bin" --data "$TMP/ds" --split train
expect_out eval-train-split 'train split: 40 examples'
expect_out eval-train-private '^privacy   diagnostic \(not private\): accuracy and loss on the training split$'
expect_ok eval "$DPGD" eval --model "$TMP/m.bin" --data "$TMP/ds" --predictions "$TMP/p.csv"
checks=$((checks + 1))
[ "$(head -1 "$TMP/p.csv")" = index,label,pred ] && [ "$(wc -l <"$TMP/p.csv")" = 41 ] ||
  fail "predictions file: $(head -3 "$TMP/p.csv")"
# the accuracy line agrees with the predictions file
checks=$((checks + 1))
want=$(awk -F, 'NR > 1 && $2 == $3 { c++ } END { print c + 0 }' "$TMP/p.csv")
grep -q "($want of 40 correct)" "$TMP/out" || fail "accuracy disagrees with p.csv ($want correct)"
checks=$((checks + 1))
[ "$(awk -F, 'NR > 1 { print $3 }' "$TMP/p.csv" | sort -u | wc -l)" -ge 2 ] ||
  fail "the model predicts one class only: the consistency check below would be weak"

# predict on every image, in index order, through the single-file reader
imgs=()
while IFS=, read -r idx label pred; do
  [ "$idx" = index ] || imgs+=("$TMP/ds/testing/$label/$idx.png")
done <"$TMP/p.csv"
expect_ok predict "$DPGD" predict --model "$TMP/m.bin" "${imgs[@]}"
checks=$((checks + 1))
[ "$(wc -l <"$TMP/out")" = 40 ] || fail "predict printed $(wc -l <"$TMP/out") lines, expected 40"
checks=$((checks + 1))
paste -d' ' <(tail -n +2 "$TMP/p.csv") "$TMP/out" | awk '
  { split($1, e, ","); file = $2; sub(/:$/, "", file); n = split(file, parts, "/")
    if (parts[n] != e[1] ".png") { print "line " NR ": " file " is not image " e[1]; bad = 1 }
    if ($3 != "class" || $4 != e[3]) { print file ": predict says " $4 ", eval " e[3]; bad = 1 }
    sum = 0; best = -1
    for (i = 6; i <= NF; i++) { split($i, kv, ":"); sum += kv[2]; if (kv[2] > best) best = kv[2] }
    if (NF != 15) { print file ": " NF - 5 " probabilities"; bad = 1 }
    if (sum < 0.999 || sum > 1.001) { print file ": probabilities sum to " sum; bad = 1 }
    split($(6 + $4), kv, ":"); if (kv[2] != best) { print file ": p(class) is not the largest"; bad = 1 }
  } END { exit bad }' || fail "predict disagrees with eval (above)"

# the CNN through the same commands: predict agrees with eval on 12 images
"$FIX" model "$TMP/cnn.bin" cnn 2385 || fail "eval_fixture model cnn failed"
expect_ok eval-cnn "$DPGD" eval --model "$TMP/cnn.bin" --data "$TMP/ds" --n 12 --predictions "$TMP/pc.csv"
expect_out eval-cnn '26010 parameters, 10 classes'
expect_ok predict-cnn "$DPGD" predict --model "$TMP/cnn.bin" "${imgs[@]:0:12}"
checks=$((checks + 1))
[ "$(awk '{ print $3 }' "$TMP/out" | tr '\n' ' ')" = "$(tail -n +2 "$TMP/pc.csv" | cut -d, -f3 | tr '\n' ' ')" ] ||
  fail "predict with the CNN disagrees with eval"

# a subset, and the order of the files given is kept
expect_ok eval-n "$DPGD" eval --model "$TMP/m.bin" --data "$TMP/ds" --n 10
expect_out eval-n 'test split: 10 examples'
expect_ok predict-order "$DPGD" predict --model "$TMP/m.bin" "${imgs[3]}" "${imgs[0]}" "${imgs[3]}"
checks=$((checks + 1))
awk '{ print $1 }' "$TMP/out" | tr '\n' ' ' | grep -qx "${imgs[3]}: ${imgs[0]}: ${imgs[3]}: " ||
  fail "predict did not keep the order: $(awk '{ print $1 }' "$TMP/out" | tr '\n' ' ')"

# normalisation as in training: config.ini beside the model (a run directory), or
# --mean/--std; predict follows the same rule as eval
mkdir -p "$TMP/run"
cp "$TMP/m.bin" "$TMP/run/model.bin"
printf '[data]\nmean = 0.5\nstd = 0.2\n' >"$TMP/run/config.ini"
expect_ok eval-run "$DPGD" eval --model "$TMP/run/model.bin" --data "$TMP/ds" --predictions "$TMP/p2.csv"
expect_out eval-run-norm '\(p/255 - 0\.5\) / 0\.2 \(.*run/config\.ini\)'
checks=$((checks + 1))
cmp -s "$TMP/p.csv" "$TMP/p2.csv" && fail "config.ini normalisation changed no prediction"
expect_ok eval-flags "$DPGD" eval --model "$TMP/m.bin" --data "$TMP/ds" --mean 0.5 --std 0.2 \
  --predictions "$TMP/p3.csv"
expect_out eval-flags-norm '\(--mean/--std\)'
checks=$((checks + 1))
cmp -s "$TMP/p2.csv" "$TMP/p3.csv" || fail "--mean/--std and config.ini disagree"
expect_ok predict-run "$DPGD" predict --model "$TMP/run/model.bin" "${imgs[@]:0:12}"
checks=$((checks + 1))
[ "$(awk '{ print $3 }' "$TMP/out" | tr '\n' ' ')" = "$(sed -n 2,13p "$TMP/p2.csv" | cut -d, -f3 | tr '\n' ' ')" ] ||
  fail "predict with config.ini disagrees with eval"
printf '[data]\nmean = x\n' >"$TMP/run/config.ini"
expect_fail bad-config 'config.ini:2' "$DPGD" predict --model "$TMP/run/model.bin" "${imgs[0]}"
expect_fail half-norm 'both --mean and --std' "$DPGD" predict --model "$TMP/m.bin" --mean 0.2 "${imgs[0]}"
expect_fail bad-std '--std must be positive' "$DPGD" eval --model "$TMP/m.bin" --mean 0.2 --std 0
# A normalisation the float arithmetic cannot carry (NaN predictions before) is refused,
# from the flags and from config.ini, by eval, predict and train alike.
for sd in 1e-300 1e-45 1e-9; do
  expect_fail "tiny-std-$sd" "--mean/--std: .*above 1e\+06" \
    "$DPGD" eval --model "$TMP/m.bin" --data "$TMP/ds" --mean 0.2 --std "$sd"
  expect_fail "tiny-std-predict-$sd" "--mean/--std: .*above 1e\+06" \
    "$DPGD" predict --model "$TMP/m.bin" --mean 0.2 --std "$sd" "${imgs[0]}"
done
expect_fail huge-mean "--mean/--std: .*above 1e\+06" \
  "$DPGD" eval --model "$TMP/m.bin" --data "$TMP/ds" --mean 1e300 --std 1
expect_ok ok-small-std "$DPGD" eval --model "$TMP/m.bin" --data "$TMP/ds" --mean 0.5 --std 1e-5
expect_out ok-small-std-acc '^accuracy  [01]\.[0-9]{4} '
printf '[data]\nmean = 0.5\nstd = 1e-300\n' >"$TMP/run/config.ini"
expect_fail tiny-std-config "run/config\.ini: .*above 1e\+06" \
  "$DPGD" predict --model "$TMP/run/model.bin" "${imgs[0]}"
expect_fail tiny-std-train "data\.mean/data\.std: .*above 1e\+06" \
  "$DPGD" train --config "${DPGD_SOURCE_DIR:-.}/configs/softmax.ini" --set data.dir="$TMP/ds" \
  --set data.std=1e-300 --dry-run

# --model RUN_DIR means RUN_DIR/model.bin (and its config.ini), with or without a slash
printf '[data]\nmean = 0.5\nstd = 0.2\n' >"$TMP/run/config.ini"
for arg in "$TMP/run" "$TMP/run/"; do
  expect_ok "eval-run-dir-$arg" "$DPGD" eval --model "$arg" --data "$TMP/ds" --predictions "$TMP/p4.csv"
  expect_out "eval-run-dir-norm-$arg" '\(p/255 - 0\.5\) / 0\.2 \(.*run/config\.ini\)'
  checks=$((checks + 1))
  cmp -s "$TMP/p2.csv" "$TMP/p4.csv" || fail "eval --model $arg differs from --model $arg/model.bin"
done
expect_ok predict-run-dir "$DPGD" predict --model "$TMP/run" "${imgs[@]:0:12}"
checks=$((checks + 1))
[ "$(awk '{ print $3 }' "$TMP/out" | tr '\n' ' ')" = "$(sed -n 2,13p "$TMP/p2.csv" | cut -d, -f3 | tr '\n' ' ')" ] ||
  fail "predict --model RUN_DIR disagrees with eval"
expect_fail eval-dir-no-model "$TMP/ds/model\.bin" "$DPGD" eval --model "$TMP/ds" --data "$TMP/ds"

# bad options
expect_fail eval-no-model 'no --model' "$DPGD" eval --data "$TMP/ds"
expect_fail eval-split "split 'dev'" "$DPGD" eval --model "$TMP/m.bin" --split dev
expect_fail eval-n0 '--n must be at least 1' "$DPGD" eval --model "$TMP/m.bin" --data "$TMP/ds" --n 0
expect_fail eval-n-big 'has only 40 examples' "$DPGD" eval --model "$TMP/m.bin" --data "$TMP/ds" --n 41
expect_fail eval-n-text "'ten' is not" "$DPGD" eval --model "$TMP/m.bin" --n ten
expect_fail eval-extra "unexpected argument 'x'" "$DPGD" eval --model "$TMP/m.bin" x
expect_fail eval-no-data 'dpgd_nonexistent' "$DPGD" eval --model "$TMP/m.bin" --data "$TMP/dpgd_nonexistent"
expect_fail eval-no-split 'testing' "$DPGD" eval --model "$TMP/m.bin" --data "$TMP"
expect_fail eval-size '9 x 7|7 x 9' "$DPGD" eval --model "$TMP/m.bin" --data "$TMP/small"
expect_fail predict-no-model 'no --model' "$DPGD" predict "${imgs[0]}"
expect_fail predict-no-image 'no IMAGE' "$DPGD" predict --model "$TMP/m.bin"
expect_fail predict-option "unknown option '--top'" "$DPGD" predict --model "$TMP/m.bin" --top 3 "${imgs[0]}"

# bad model files: missing, empty, truncated, one flipped bit, not a model at all
expect_fail model-missing 'nope.bin' "$DPGD" eval --model "$TMP/nope.bin" --data "$TMP/ds"
: >"$TMP/empty.bin"
expect_fail model-empty 'empty.bin' "$DPGD" predict --model "$TMP/empty.bin" "${imgs[0]}"
head -c 1000 "$TMP/m.bin" >"$TMP/trunc.bin"
expect_fail model-truncated 'trunc.bin' "$DPGD" eval --model "$TMP/trunc.bin" --data "$TMP/ds"
cp "$TMP/m.bin" "$TMP/flip.bin"
printf '\x55' | dd of="$TMP/flip.bin" bs=1 seek=20000 conv=notrunc status=none
expect_fail model-flipped 'flip.bin' "$DPGD" predict --model "$TMP/flip.bin" "${imgs[0]}"
expect_fail model-is-png '0.png' "$DPGD" eval --model "${imgs[0]}" --data "$TMP/ds"

# bad images: not a PNG, missing, wrong size, a directory; no partial output on error
printf 'P5\n28 28\n255\n' >"$TMP/fake.png"
expect_fail png-fake 'fake.png: not a PNG' "$DPGD" predict --model "$TMP/m.bin" "${imgs[0]}" "$TMP/fake.png"
checks=$((checks + 1))
[ ! -s "$TMP/out" ] || fail "predict printed results before failing: $(head -1 "$TMP/out")"
expect_fail png-missing 'none.png' "$DPGD" predict --model "$TMP/m.bin" "$TMP/none.png"
small=$(ls "$TMP"/small/testing/*/0.png)
expect_fail png-size 'the model expects 28 x 28' "$DPGD" predict --model "$TMP/m.bin" "$small"
expect_fail png-mixed 'expected 28 x 28 like' "$DPGD" predict --model "$TMP/m.bin" "${imgs[0]}" "$small"
expect_fail png-dir "$TMP" "$DPGD" predict --model "$TMP/m.bin" "$TMP"
finish
