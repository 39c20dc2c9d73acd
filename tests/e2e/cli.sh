# cli.sh -- the dpgd binary's dispatch: version, help, unknown commands.
. "$(dirname "$0")/lib.sh"

# The binary is where the README and train/quickstart.sh run it from.
checks=$((checks + 1))
[ -z "${DPGD_BUILD_DIR:-}" ] || [ "$DPGD" -ef "$DPGD_BUILD_DIR/train/dpgd" ] ||
  fail "the dpgd binary is $DPGD, not build/train/dpgd as the README says"
expect_ok version "$DPGD" --version
expect_out version '^dpgd [0-9]+\.[0-9]+\.[0-9]+$'
expect_ok "version command" "$DPGD" version
expect_out "version command" '^dpgd [0-9]+\.[0-9]+\.[0-9]+$'
expect_ok help "$DPGD" --help
expect_out help 'train'
# dpgd train --help says what must not leave or be duplicated: checkpoints, run copies,
# and that points.csv's rows share the run's delta.
expect_ok train-help "$DPGD" train --help
expect_out train-help-share 'never share checkpoint\.bin'
expect_out train-help-fork 'never fork a run'
expect_out train-help-points "delta_level is a level's share of it"
expect_fail unknown-command "unknown command 'frobnicate'" "$DPGD" frobnicate
expect_fail no-command 'no command given' "$DPGD"

# A missing Fashion-MNIST folder names the Debian package that installs it.
expect_fail fashion-missing 'does not exist or is not a directory \(apt-get install dataset-fashion-mnist' \
  "$DPGD" train --config "$DPGD_SOURCE_DIR/configs/fashion-softmax.ini" \
  --set data.dir=/usr/share/datasets/fashion-mnist/not-here --dry-run

finish
