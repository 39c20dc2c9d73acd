# lib.sh -- helpers for the end-to-end scripts: source it, call check/fail, end with
# `finish`. DPGD_BIN is set by ctest; MNIST is found like the unit tests find it:
# $DPGD_MNIST_DIR at test time, else DPGD_MNIST_DIR_DEFAULT (the repository's data/mnist).
set -u
DPGD=${DPGD_BIN:-dpgd}
MNIST=${DPGD_MNIST_DIR:-}
[ -n "$MNIST" ] || MNIST=${DPGD_MNIST_DIR_DEFAULT:-data/mnist}
# Fashion-MNIST (Debian's dataset-fashion-mnist; .ci/run installs it, scripts skip it
# when absent, saying so with fashion_absent).
FASHION=${DPGD_FASHION_DIR:-/usr/share/datasets/fashion-mnist}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
failures=0
checks=0

fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }

# png_sample DIR: writes a PNG sample of $MNIST into DIR (DIR/training|testing/<label>/
# <index>.png, the first 10 examples of each class; tests/data/png_sample.c), or takes
# $DPGD_MNIST_PNG_SAMPLE when set; the path is left in $SAMPLE.
png_sample() {
  SAMPLE=${DPGD_MNIST_PNG_SAMPLE:-}
  [ -z "$SAMPLE" ] || return 0
  SAMPLE=$1
  "${DPGD_BUILD_DIR:-build}/tests/data/mnist_png_sample" "$MNIST" "$SAMPLE" >"$TMP/sample.err" 2>&1 ||
    fail "mnist_png_sample $MNIST $SAMPLE failed: $(head -c 300 "$TMP/sample.err")"
}

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

# start_run NAME DIR ROWS: starts `dpgd train --config $CFG ${SET[@]} --out DIR` in the
# background (stdout/stderr in $TMP/NAME.out/.err) and returns once metrics.csv has more
# than ROWS lines (or after 15 s); the run's pid is in $run_pid.
start_run() {
  "$DPGD" train --config "$CFG" "${SET[@]}" --out "$2" --quiet >"$TMP/$1.out" \
    2>"$TMP/$1.err" &
  run_pid=$!
  for _ in $(seq 1 3000); do
    [ "$( (wc -l < "$2/metrics.csv") 2>/dev/null || echo 0)" -gt "$3" ] && break
    sleep 0.005
  done
}

# expect_stderr_line NAME PATTERN: $TMP/NAME.err is one line matching PATTERN, besides the
# research-mode warning.
expect_stderr_line() {
  checks=$((checks + 1))
  grep -Eq "$2" "$TMP/$1.err" && [ "$(grep -vc '^dpgd: warning: research rng' "$TMP/$1.err")" -eq 1 ] ||
    fail "$1: stderr is not one line matching /$2/: $(head -c 300 "$TMP/$1.err")"
}

# expect_same_files NAME REF DIR WHAT: model.bin, points.csv and metrics.csv of DIR equal
# those of REF (WHAT names REF in the failure).
expect_same_files() {
  local f
  for f in model.bin points.csv metrics.csv; do
    checks=$((checks + 1))
    cmp -s "$2/$f" "$3/$f" || fail "$1: $f differs from $4"
  done
}

# expect_same_as_ref NAME DIR: the files of DIR are those of the uninterrupted run in
# $TMP/ref.
expect_same_as_ref() { expect_same_files "$1" "$TMP/ref" "$2" "the uninterrupted run"; }

# expect_kill_resume NAME DIR ROWS: a run started as start_run does, killed (SIGKILL) once
# metrics.csv has more than ROWS lines, resumed with --resume: it says where it resumes,
# and its files are those of the uninterrupted run in $TMP/ref (expect_same_as_ref).
expect_kill_resume() {
  start_run "$1" "$2" "$3"
  kill -9 $run_pid
  wait $run_pid 2>/dev/null
  checks=$((checks + 1))
  [ ! -e "$2/summary.json" ] || fail "$1: the run ended before the kill"
  expect_ok "$1-resume" "$DPGD" train --resume "$2" --quiet
  expect_out "$1-resumed" '^resuming +after step [1-9]'
  expect_same_as_ref "$1" "$2"
}

# expect_rows_1_to NAME DIR T: metrics.csv of DIR has one row per step 1..T, in order;
# sets $q_rows to the number of rows with a stopping query.
expect_rows_1_to() {
  local steps
  checks=$((checks + 1))
  steps=$(awk -F, 'NR > 1 { print $1 }' "$2/metrics.csv" | tr '\n' ' ')
  [ "$steps" = "$(seq -s ' ' 1 "$3") " ] || fail "$1: metrics.csv steps are not 1..$3: $steps"
  q_rows=$(awk -F, 'NR > 1 && $9 != "" { q++ } END { print q + 0 }' "$2/metrics.csv")
}

finish() {
  echo "$checks checks, $failures failed"
  [ $failures -eq 0 ]
  exit $?
}
