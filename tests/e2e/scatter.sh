# scatter.sh -- softmax on scattering features end to end (configs/scatter): a small run
# computes and caches the features, a second run reads the cache and trains to the same
# bytes; the cache folder is made if missing (mkdir -p); a cache that cannot be written is
# reported in one line; Algorithm 7 filtering and DP-SGD run on the features; a group count that does
# not divide the 81 channels is refused with one line; the audit runs; the last-iterate mode
# runs on group-normalised features with the public norm bound X^2 = 3969; dpgd eval
# scores a scatter model on images.
. "$(dirname "$0")/lib.sh"
SRC=${DPGD_SOURCE_DIR:-$(dirname "$0")/../..}
CFG=$SRC/configs/scatter/softmax-eps1.ini
export OMP_NUM_THREADS=2
SET=(--set data.dir="$MNIST" --set data.n_train=1000 --set data.n_test=300
     --set data.feature_cache="$TMP/cache/mnist" --set train.steps=20 --set train.eval_every=10
     --set output.checkpoint_every=0)

expect_ok first "$DPGD" train --config "$CFG" "${SET[@]}" --out "$TMP/a" --quiet
checks=$((checks + 1))
[ -s "$TMP/cache/mnist/scatter-J2-L8-train-1000.feat" ] &&
  [ -s "$TMP/cache/mnist/scatter-J2-L8-test-300.feat" ] ||
  fail "no feature cache in the folder the run made: $(ls -R "$TMP/cache" 2>&1)"
expect_acc first "$TMP/a/summary.json" 0.5
echo "scatter-softmax, n 1000, 20 steps, eps 1: test accuracy $acc"
# dpgd eval computes the features itself: the run's own test accuracy; a model file
# without its run's config.ini is refused in one line.
expect_ok eval "$DPGD" eval --model "$TMP/a/model.bin" --data "$MNIST" --n 300
expect_out eval-acc "^accuracy +$(printf '%.4f' "$acc") "
cp "$TMP/a/model.bin" "$TMP/lonely.bin"
expect_fail eval-lonely "scatter-softmax model: its features need the group count" \
  "$DPGD" eval --model "$TMP/lonely.bin" --data "$MNIST" --n 300
expect_ok cached "$DPGD" train --config "$CFG" "${SET[@]}" --out "$TMP/b" --quiet
checks=$((checks + 1))
cmp -s "$TMP/a/model.bin" "$TMP/b/model.bin" || fail "the run on cached features differs"

# A cache that cannot be written is no error, but the user is told (one line on stderr).
: >"$TMP/not-a-folder"
expect_ok uncached "$DPGD" train --config "$CFG" "${SET[@]}" \
  --set data.feature_cache="$TMP/not-a-folder" --set train.steps=2 --out "$TMP/u" --quiet
checks=$((checks + 1))
grep -q "dpgd: note: the features were computed but not cached (cannot write the feature cache" \
  "$TMP/err" || fail "no notice of the unwritten cache: $(head -c 300 "$TMP/err")"

expect_ok filtered "$DPGD" train --config "$CFG" "${SET[@]}" --set filter.enabled=true \
  --set filter.k=20 \
  --out "$TMP/f" --quiet
expect_ok dpsgd "$DPGD" train --config "$CFG" "${SET[@]}" --set train.sampling=poisson \
  --set train.sample_rate=0.1 --out "$TMP/s" --quiet

expect_fail groups "scatter_groups|groups do not divide" "$DPGD" train --config "$CFG" \
  "${SET[@]}" --set model.scatter_groups=4 --out "$TMP/g" --quiet
# The last-iterate mode: the features' public norm bound X^2 = d = 3969 (group normalisation).
PN=(--set train.algorithm=pnsgd --set train.radius=100 --set train.lr=0.001 --set train.steps=0
    --set train.eval_every=0 --set output.checkpoint_every=0)
expect_ok pnsgd "$DPGD" train --config "$CFG" "${SET[@]}" "${PN[@]}" --out "$TMP/p" --quiet
checks=$((checks + 1))
grep -q '"model": "scatter-softmax", "algorithm": "pnsgd"' "$TMP/p/summary.json" &&
  grep -q '"feature_sq_max": 3969,' "$TMP/p/summary.json" ||
  fail "pnsgd summary.json: $(head -c 400 "$TMP/p/summary.json")"
expect_fail pnsgd-groups "model.scatter_groups > 0" "$DPGD" train --config "$CFG" "${SET[@]}" \
  "${PN[@]}" --set model.scatter_groups=0 --out "$TMP/p0" --quiet
# The audit takes scatter models (train/AUDIT.md "Scatter models"): input canaries,
# scattered as the base images are, on the cached base features; below the claim.
expect_ok audit "$DPGD" audit --config "$CFG" "${SET[@]}" --canaries 100 --out "$TMP/au" --quiet
expect_out audit-verdict '^verdict     no violation found'
expect_out audit-weaker '^weaker      input canaries'
finish
