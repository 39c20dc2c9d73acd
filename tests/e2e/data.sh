# data.sh -- 'dpgd data info' end to end: MNIST's published counts and histograms,
# single IDX files, the PNG sample, and one corrupted copy of the good files per defect
# (made by corrupt_data.py): each must fail with its one-line error, not crash.
. "$(dirname "$0")/lib.sh"
png_sample "$TMP/mnist_png_sample"   # lib.sh: written from the IDX files

# section SPLIT: the lines of one split of the last output (split header to next one).
section() { awk -v s="$1" '/^[a-z]/ { on = ($1 == s) } on' "$TMP/out"; }
expect_section() {
  checks=$((checks + 1))
  section "$2" | grep -Eq -- "$3" || fail "$1: $2 section does not match /$3/: $(section "$2" | head -c 300)"
}

expect_ok mnist "$DPGD" data info "$MNIST"
expect_out mnist-dir "^dataset +$MNIST\$"
expect_section mnist-train train '^train +IDX +train-images-idx3-ubyte(\.gz)? \+ train-labels-idx1-ubyte(\.gz)?$'
expect_section mnist-train-n train '^  examples +60000$'
expect_section mnist-train-size train '^  image size +28 x 28 '
expect_section mnist-train-hist train '^  histogram +0:5923 1:6742 2:5958 3:6131 4:5842 5:5421 6:5918 7:6265 8:5851 9:5949$'
expect_section mnist-train-pixels train '^  pixels +mean 0\.1306[0-9]+ +std 0\.3081[0-9]+ '
expect_section mnist-test-n test '^  examples +10000$'
# Exact statistics of training data are labelled as such; the test split's are not.
expect_section mnist-train-private train '^  privacy +diagnostic \(not private\): training data$'
checks=$((checks + 1))
section test | grep -q 'not private' && fail "mnist-test: labelled as training data"
expect_section mnist-test-hist test '^  histogram +0:980 1:1135 2:1032 3:1010 4:982 5:892 6:958 7:1028 8:974 9:1009$'

expect_ok images-file "$DPGD" data info "$MNIST/t10k-images-idx3-ubyte.gz"
expect_out images-file-format 'IDX images \(magic 0x00000803\)'
expect_out images-file-n '^  examples +10000$'
expect_out images-file-size '^  image size +28 x 28 \(784 pixels\)$'
expect_ok labels-file "$DPGD" data info "$MNIST/train-labels-idx1-ubyte.gz"
expect_out labels-file-private '^  privacy +diagnostic \(not private\): training data$'
expect_out labels-file-hist '^  histogram +0:5923 1:6742 2:5958 3:6131 4:5842 5:5421 6:5918 7:6265 8:5851 9:5949$'

expect_ok sample "$DPGD" data info --sparse "$SAMPLE"
expect_section sample-train train '^train +PNG +training/<label>/<index>\.png$'
expect_section sample-train-n train '^  examples +100$'
expect_section sample-hist test '^  histogram +0:10 1:10 2:10 3:10 4:10 5:10 6:10 7:10 8:10 9:10$'
expect_fail sample-strict 'training: gap in the indices: [0-9]+\.png is missing.*--sparse' \
  "$DPGD" data info "$SAMPLE"

# Fashion-MNIST (Debian's dataset-fashion-mnist; .ci/run installs it, the suite skips it when absent).
if [ -d "$FASHION" ]; then
  expect_ok fashion "$DPGD" data info "$FASHION"
  expect_section fashion-train train '^  histogram +0:6000 1:6000 2:6000 3:6000 4:6000 5:6000 6:6000 7:6000 8:6000 9:6000$'
  expect_section fashion-test test '^  histogram +0:1000 1:1000 2:1000 3:1000 4:1000 5:1000 6:1000 7:1000 8:1000 9:1000$'
else
  fashion_absent
fi

python3 "$(dirname "$0")/corrupt_data.py" "$MNIST" "$SAMPLE" "$TMP/c" || fail "corrupt_data.py failed"
C=$TMP/c
# A copy written by our own PNG writer with the same pixels reads the same: the
# corruptions below differ from the good files only in the defect.
expect_ok control-png "$DPGD" data info --sparse "$C/png_same"
cp "$TMP/out" "$TMP/same"
"$DPGD" data info --sparse "$SAMPLE" | sed 1d >"$TMP/orig"
sed 1d "$TMP/same" | cmp -s - "$TMP/orig" || fail "control-png: differs from the sample"
expect_ok control-idx "$DPGD" data info "$C/good"
expect_section control-idx-n train '^  examples +10000$'
expect_ok full-png "$DPGD" data info "$C/png_full"
expect_section full-png-n train '^  examples +20$'

expect_fail idx-magic "magic.gz: bad magic 0x00000802" "$DPGD" data info "$C/magic.gz"
expect_fail idx-truncated "/truncated: truncated: the header declares 7840000 bytes of images but only [0-9]+ follow" \
  "$DPGD" data info "$C/truncated"
expect_fail idx-truncated-gz "truncated.gz: truncated: the gzip stream ends" "$DPGD" data info "$C/truncated.gz"
expect_fail idx-trailing "/trailing: 3 bytes of trailing garbage after the last labels" "$DPGD" data info "$C/trailing"
expect_fail idx-trailing-gz "trailing.gz: trailing garbage after the last labels" "$DPGD" data info "$C/trailing.gz"
expect_fail gzip-crc "crc.gz: corrupt gzip data \(incorrect data check\)" "$DPGD" data info "$C/crc.gz"
expect_fail gzip-block "badblock.gz: corrupt gzip data \(invalid block type\)" "$DPGD" data info "$C/badblock.gz"
expect_fail gzip-garbage "notgzip.gz: corrupt gzip data" "$DPGD" data info "$C/notgzip.gz"
expect_fail label-range-file "label10.gz: label 10 of example 1234 is outside 0..9" "$DPGD" data info "$C/label10.gz"
expect_fail label-range-dir "train-labels-idx1-ubyte.gz: label 10 of example 1234 is outside 0..9" \
  "$DPGD" data info "$C/range"
expect_fail count-mismatch "train-images-idx3-ubyte.gz holds 10000 images but .*train-labels-idx1-ubyte.gz holds 9999 labels" \
  "$DPGD" data info "$C/count"
expect_fail missing-labels "found .*t10k-images-idx3-ubyte.gz but no t10k-labels-idx1-ubyte\[.gz\]" \
  "$DPGD" data info "$C/nolabels"

expect_fail png-colour "training/3/[0-9]+\.png: RGB colour image, expected 8-bit grayscale" \
  "$DPGD" data info --sparse "$C/png_rgb"
expect_fail png-16bit "training/3/[0-9]+\.png: 16-bit grayscale, expected 8-bit grayscale" \
  "$DPGD" data info --sparse "$C/png_16bit"
expect_fail png-size "training/3/[0-9]+\.png: image is 27 x 28, expected 28 x 28" \
  "$DPGD" data info --sparse "$C/png_size"
expect_fail png-notpng "training/3/[0-9]+\.png: not a PNG file" "$DPGD" data info --sparse "$C/png_notpng"
expect_fail png-truncated "training/3/[0-9]+\.png: truncated or corrupt PNG \(libpng: " \
  "$DPGD" data info --sparse "$C/png_truncated"
expect_fail png-gap "training: gap in the indices: 7\.png is missing \(found 19 images, indices up to 19\)" \
  "$DPGD" data info "$C/png_gap"

expect_fail no-such-path "cannot open $TMP/none" "$DPGD" data info "$TMP/none"
expect_fail not-a-dataset "no train split" "$DPGD" data info "$TMP"
expect_fail no-subcommand "no data command" "$DPGD" data
expect_fail bad-subcommand "unknown data command 'list'" "$DPGD" data list
expect_fail bad-classes "classes 0 is outside 1..256" "$DPGD" data info --classes 0 "$MNIST"
expect_fail no-target "info needs a DIR or FILE" "$DPGD" data info
expect_ok help "$DPGD" data info --help
expect_out help '^usage: dpgd data info'

finish
