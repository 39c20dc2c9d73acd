# setup_checks.sh -- what can fail is found before the first step is released, and a
# dry run finds it too: a test split whose images differ from the training split's, and
# a model.chunk whose workspace cannot be allocated. Each is a one-line error, and the
# run directory holds no released step.
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
D=$TMP/mixed
mkdir -p "$D"
ln -s "$MNIST/train-images-idx3-ubyte.gz" "$MNIST/train-labels-idx1-ubyte.gz" "$D/"
ln -s "$MNIST/t10k-labels-idx1-ubyte.gz" "$D/"
# The test split's first 300 images cropped to 14 x 14 (IDX header says so).
python3 - "$MNIST" "$D" <<'PY' || fail "could not write the 14x14 test split"
import gzip, os, struct, sys
src, out = sys.argv[1:3]
raw = gzip.open(os.path.join(src, "t10k-images-idx3-ubyte.gz")).read()
n = 300
body = bytearray()
for i in range(n):
    img = raw[16 + 784 * i: 16 + 784 * (i + 1)]
    for r in range(7, 21):
        body += img[28 * r + 7: 28 * r + 21]
with gzip.open(os.path.join(out, "t10k-images-idx3-ubyte.gz"), "wb") as f:
    f.write(struct.pack(">IIII", 0x803, n, 14, 14) + bytes(body))
lab = gzip.open(os.path.join(src, "t10k-labels-idx1-ubyte.gz")).read()
with gzip.open(os.path.join(out, "t10k-labels-idx1-ubyte.gz.tmp"), "wb") as f:
    f.write(struct.pack(">II", 0x801, n) + lab[8:8 + n])
os.replace(os.path.join(out, "t10k-labels-idx1-ubyte.gz.tmp"),
           os.path.join(out, "t10k-labels-idx1-ubyte.gz"))
PY

SET=(--config "$DPGD_SOURCE_DIR/configs/softmax.ini" --set data.n_train=300
     --set train.steps=2 --set privacy.calibrate=none --set privacy.sigma=4)
expect_fail "test split 14x14, run" "the test split in .* has 14x14 images .* training split 28x28" \
  "$DPGD" train "${SET[@]}" --set data.dir="$D" --out "$TMP/run1"
checks=$((checks + 1))
[ ! -e "$TMP/run1/metrics.csv" ] || fail "a step was released before the test split was checked"
expect_fail "test split 14x14, dry run" "the test split in .* has 14x14 images" \
  "$DPGD" train "${SET[@]}" --set data.dir="$D" --dry-run

# A workspace that cannot be allocated: the dry run says so as the run would.
expect_fail "huge chunk, dry run" "no memory for the training state" \
  "$DPGD" train "${SET[@]}" --set data.dir="$MNIST" --set model.chunk=100000000000 --dry-run
expect_fail "huge chunk, run" "no memory for the training state" \
  "$DPGD" train "${SET[@]}" --set data.dir="$MNIST" --set model.chunk=100000000000 \
  --out "$TMP/run2"
checks=$((checks + 1))
[ ! -e "$TMP/run2/metrics.csv" ] || fail "a step was released before the workspace was allocated"
# The same settings with a chunk that fits dry-run fine.
expect_ok "normal dry run" "$DPGD" train "${SET[@]}" --set data.dir="$MNIST" --dry-run

# A filtered DP-SGD dry run prints two guarantees and says which one holds.
expect_ok "filtered DP-SGD dry run" "$DPGD" train \
  --config "$DPGD_SOURCE_DIR/configs/dpsgd/mnist-cnn-eps1-filtered.ini" --set data.dir="$MNIST" \
  --dry-run
expect_out "filtered DP-SGD dry run" "^guarantee +the filter's eps above, .*both hold, the smaller is the run's guarantee"
expect_out "filtered DP-SGD dry run" "^  zcdp +n/a \(not offered for subsampled Gaussians"

# dpgd data png makes images for dpgd predict from the IDX data: written, labelled, read
# back by predict with the same pixels (a model trained on MNIST classifies them).
expect_ok "data png" "$DPGD" data png "$MNIST" --first 5 --count 3 --out "$TMP/digits"
expect_out "data png" "^$TMP/digits/test-5\.png  label [0-9]\$"
expect_out "data png" "^$TMP/digits/test-7\.png  label [0-9]\$"
checks=$((checks + 1))
[ "$(ls "$TMP/digits" | wc -l)" -eq 3 ] || fail "data png: not 3 files: $(ls "$TMP/digits")"
expect_ok "train for predict" "$DPGD" train "${SET[@]}" --set data.dir="$MNIST" --quiet \
  --out "$TMP/run3"
expect_ok "predict the PNGs" "$DPGD" predict --model "$TMP/run3/model.bin" "$TMP"/digits/*.png
expect_out "predict the PNGs" "test-6\.png: class [0-9]  p 0:"
expect_fail "data png: bad split" "--split must be train or test" \
  "$DPGD" data png "$MNIST" --split valid --out "$TMP/d2"
expect_fail "data png: past the end" "do not exist: the test split has 10000" \
  "$DPGD" data png "$MNIST" --first 9999 --count 2 --out "$TMP/d2"
expect_fail "data png: no out" "needs --out FOLDER" "$DPGD" data png "$MNIST"
finish
