# lib.sh -- helpers for the end-to-end scripts: source it, call check/fail, end with
# `finish`. DPGD_BIN is set by ctest; MNIST is found like the unit tests find it.
set -u
DPGD=${DPGD_BIN:-dpgd}
MNIST=${DPGD_MNIST_DIR:-}
[ -n "$MNIST" ] || MNIST=${DPGD_MNIST_DIR_DEFAULT:-../shared/data/mnist}
# Fashion-MNIST (Debian's dataset-fashion-mnist; .ci/run installs it, scripts skip it
# when absent, saying so with fashion_absent).
FASHION=${DPGD_FASHION_DIR:-/usr/share/datasets/fashion-mnist}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
failures=0
checks=0

fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }

fashion_absent() {
  echo "note: $FASHION not present (apt-get install dataset-fashion-mnist), not tested"
}

# summary_acc FILE: the test_acc field of a run's summary.json.
summary_acc() { sed -n 's/.*"test_acc": \([0-9.]*\).*/\1/p' "$1"; }

# expect_acc NAME SUMMARY_JSON MIN: its test accuracy must exceed MIN; left in $acc.
expect_acc() {
  acc=$(summary_acc "$2")
  checks=$((checks + 1))
  awk -v a="$acc" -v m="$3" 'BEGIN { exit !(a > m) }' || fail "$1: test accuracy '$acc' not above $3"
}

# expect_fail NAME PATTERN CMD...: CMD must exit non-zero with a one-line error
# on stderr that matches PATTERN (grep -E), and must not crash (exit < 128).
expect_fail() {
  local name=$1 pat=$2; shift 2
  checks=$((checks + 1))
  "$@" >"$TMP/out" 2>"$TMP/err"
  local rc=$?
  if [ $rc -eq 0 ]; then fail "$name: exit 0, expected an error"; return; fi
  if [ $rc -ge 128 ]; then fail "$name: crashed (exit $rc)"; return; fi
  if ! grep -Eq -- "$pat" "$TMP/err"; then
    fail "$name: stderr does not match /$pat/: $(head -c 300 "$TMP/err")"; return
  fi
  if [ "$(grep -c . "$TMP/err")" -ne 1 ]; then
    fail "$name: error is not one line: $(head -c 300 "$TMP/err")"; return
  fi
}

# expect_ok NAME CMD...: CMD must exit 0; its stdout is left in $TMP/out.
expect_ok() {
  local name=$1; shift
  checks=$((checks + 1))
  "$@" >"$TMP/out" 2>"$TMP/err"
  local rc=$?
  [ $rc -eq 0 ] || fail "$name: exit $rc: $(head -c 300 "$TMP/err")"
}

# expect_out NAME PATTERN: the last expect_ok's stdout matches PATTERN (grep -E).
expect_out() {
  checks=$((checks + 1))
  grep -Eq -- "$2" "$TMP/out" || fail "$1: output does not match /$2/: $(head -c 300 "$TMP/out")"
}

finish() {
  echo "$checks checks, $failures failed"
  [ $failures -eq 0 ]
  exit $?
}
