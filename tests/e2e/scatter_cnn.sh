# scatter_cnn.sh -- Tramer & Boneh's CNN on scattering features end to end
# (configs/scatter/cnn-eps1.ini, model/scatter_cnn.c) on a few hundred MNIST images:
# DP-SGD and full-batch GD train and beat chance by far; the model file carries type
# code 4 and 81 x 49 inputs; a second run on the cached features gives the same bytes;
# pnsgd is refused with one line; the audit runs with gradient canaries.
. "$(dirname "$0")/lib.sh"
SRC=${DPGD_SOURCE_DIR:-$(dirname "$0")/../..}
CFG=$SRC/configs/scatter/cnn-eps1.ini
export OMP_NUM_THREADS=2
SET=(--set data.dir="$MNIST" --set data.n_train=600 --set data.n_test=300
     --set data.feature_cache="$TMP/cache" --set train.eval_every=0
     --set output.checkpoint_every=0 --set privacy.epsilon=8)
mkdir -p "$TMP/cache"

expect_ok dpsgd "$DPGD" train --config "$CFG" "${SET[@]}" --set train.sample_rate=0.1 \
  --set train.epochs=3 --out "$TMP/a" --quiet
expect_acc dpsgd "$TMP/a/summary.json" 0.5
echo "scatter-cnn, n 600, DP-SGD q 0.1, 3 epochs, eps 8: test accuracy $acc"
checks=$((checks + 1))
code=$(od -An -tu4 -j12 -N12 "$TMP/a/model.bin" | tr -s ' ')
[ "$code" = " 4 1 81" ] || fail "model file header (type, activation, rows) is '$code'"

expect_ok cached "$DPGD" train --config "$CFG" "${SET[@]}" --set train.sample_rate=0.1 \
  --set train.epochs=3 --out "$TMP/b" --quiet
checks=$((checks + 1))
cmp -s "$TMP/a/model.bin" "$TMP/b/model.bin" || fail "the run on cached features differs"

sed -e '/^sampling\|^sample_rate\|^epochs/d' -e 's/^\[train\]/[train]\nsteps = 20/' "$CFG" \
  >"$TMP/full.ini"
expect_ok full "$DPGD" train --config "$TMP/full.ini" "${SET[@]}" --set train.lr=2 \
  --out "$TMP/f" --quiet
expect_acc full "$TMP/f/summary.json" 0.5
echo "scatter-cnn, n 600, full batch, 20 steps, eps 8: test accuracy $acc"

expect_fail pnsgd "model.type" "$DPGD" train --config "$CFG" "${SET[@]}" \
  --set train.algorithm=pnsgd --set train.radius=1 --out "$TMP/p" --quiet
# The audit takes scatter-cnn (33066 parameters): gradient canaries on the cached base
# features, full batch; below the claim.
expect_ok audit "$DPGD" audit --config "$TMP/full.ini" "${SET[@]}" --canaries 3000 \
  --canaries-kind gradient --out "$TMP/au" --quiet
expect_out audit-verdict '^verdict     no violation found'
finish
