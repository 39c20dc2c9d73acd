# fetch.sh -- data/fetch-mnist.sh end to end against HTTP servers on 127.0.0.1: one
# serving the good MNIST files, one serving a corrupted label file, and a dead port; and
# against file:// mirrors (local directories, with curl and with wget). Checks fallback
# between mirrors, refusal of corrupt data with nothing half-written, the offline
# message, --from, --prefer, idempotence, replacement of a corrupt local file, and that
# what lands in DEST has the published MD5s of the decompressed MNIST files.
. "$(dirname "$0")/lib.sh"
FETCH=${DPGD_SOURCE_DIR:-$(dirname "$0")/../..}/data/fetch-mnist.sh
PIDS=""
trap 'for p in $PIDS; do kill "$p" 2>/dev/null; done; rm -rf "$TMP"' EXIT

# serve DIR: starts python3's http.server on a free port; sets URL to its base URL.
# (Not run in $(...): the server's PID must reach PIDS in this shell.)
serve() {
  local log=$TMP/server.$RANDOM port
  python3 -u -m http.server 0 --bind 127.0.0.1 --directory "$1" >"$log" 2>&1 &
  PIDS="$PIDS $!"
  for _ in $(seq 100); do
    port=$(sed -n 's/.* port \([0-9][0-9]*\).*/\1/p' "$log" | head -1)
    [ -n "$port" ] && { URL="http://127.0.0.1:$port/"; return; }
    sleep 0.1
  done
  echo "server for $1 did not start: $(cat "$log")" >&2
  return 1
}

# The published MD5s of the four decompressed MNIST files (the test's own copy, not the
# script's).
SUMS=$TMP/MD5SUMS
cat >"$SUMS" <<'SUMS'
6bbc9ace898e44ae57da46a324031adb  train-images-idx3-ubyte
a25bea736e30d166cdddb491f175f624  train-labels-idx1-ubyte
2646ac647ad5339dbf082846283269ea  t10k-images-idx3-ubyte
27ae3e4e09519cfbb04c329615203637  t10k-labels-idx1-ubyte
SUMS
check_md5s() {
  local name=$1 dest=$2 f want got
  checks=$((checks + 1))
  for f in train-images-idx3-ubyte train-labels-idx1-ubyte t10k-images-idx3-ubyte t10k-labels-idx1-ubyte; do
    want=$(awk -v f="$f" '$2 == f { print $1 }' "$SUMS")
    got=$(gzip -dcf <"$(ls "$dest/$f" "$dest/$f.gz" 2>/dev/null | head -1)" | md5sum | cut -d' ' -f1)
    [ -n "$want" ] && [ "$want" = "$got" ] || { fail "$name: $f has MD5 $got, expected $want"; return; }
  done
}

# nothing_left NAME PARENT DEST: DEST absent and no staging folder left in PARENT.
nothing_left() {
  checks=$((checks + 1))
  [ ! -e "$3" ] || fail "$1: $3 exists after a refused fetch: $(ls -A "$3")"
  [ -z "$(ls -A "$2" | grep fetch-mnist)" ] || fail "$1: staging left behind in $2"
}

# fetch_fail NAME PATTERN CMD...: CMD exits non-zero (no crash) with exactly one
# "fetch-mnist: error:" line matching PATTERN (progress lines may precede it).
fetch_fail() {
  local name=$1 pat=$2; shift 2
  checks=$((checks + 1))
  "$@" >"$TMP/out" 2>"$TMP/err"
  local rc=$?
  if [ $rc -eq 0 ] || [ $rc -ge 128 ]; then fail "$name: exit $rc, expected an error"; return; fi
  local errs
  errs=$(grep '^fetch-mnist: error:' "$TMP/err")
  if [ "$(printf '%s\n' "$errs" | grep -c .)" -ne 1 ] || ! printf '%s' "$errs" | grep -Eq -- "$pat"; then
    fail "$name: error line does not match /$pat/: $(head -c 400 "$TMP/err")"
  fi
}

# The good mirror: the four .gz files of $MNIST (gzipped here where $MNIST holds raw ones).
G=$TMP/good
mkdir -p "$G" "$TMP/bad"
for f in train-images-idx3-ubyte train-labels-idx1-ubyte t10k-images-idx3-ubyte t10k-labels-idx1-ubyte; do
  if [ -f "$MNIST/$f.gz" ]; then ln -s "$(cd "$MNIST" && pwd)/$f.gz" "$G/$f.gz"
  else gzip -1c "$MNIST/$f" >"$G/$f.gz" || fail "no $f(.gz) in $MNIST"; fi
  [ "$f" = train-labels-idx1-ubyte ] || ln -s "$G/$f.gz" "$TMP/bad/"
done
serve "$G" || { fail "cannot start the good server"; finish; }
GOOD=$URL
# Valid gzip, wrong content: label 100 changed.
python3 - "$G/train-labels-idx1-ubyte.gz" "$TMP/bad/train-labels-idx1-ubyte.gz" <<'PY'
import gzip, sys
d = bytearray(gzip.open(sys.argv[1]).read()); d[8 + 100] = (d[8 + 100] + 1) % 10
open(sys.argv[2], "wb").write(gzip.compress(bytes(d), compresslevel=1))
PY
serve "$TMP/bad" || { fail "cannot start the corrupt server"; finish; }
BAD=$URL
DEAD=http://127.0.0.1:1/
export DPGD_FETCH_TIMEOUT=5

# Only the corrupt mirror: refused, nothing written.
mkdir -p "$TMP/p1"
DPGD_MNIST_MIRRORS="$BAD" fetch_fail corrupt-only \
  "could not get a verified train-labels-idx1-ubyte.gz from any mirror.*--from DIR.*Nothing was installed" \
  bash "$FETCH" "$TMP/p1/mnist"
grep -q "train-labels-idx1-ubyte.gz: MD5 check failed" "$TMP/err" || fail "corrupt-only: refusal not reported"
nothing_left corrupt-only "$TMP/p1" "$TMP/p1/mnist"

# Offline: every mirror unreachable.
DPGD_MNIST_MIRRORS="$DEAD" fetch_fail offline "any mirror.*offline.*--from DIR" bash "$FETCH" "$TMP/p1/mnist"
nothing_left offline "$TMP/p1" "$TMP/p1/mnist"

# Dead, then corrupt, then good: each file ends up verified from the good mirror.
for tool in curl wget; do
  command -v $tool >/dev/null || { echo "note: $tool not installed, its download path not tested"; continue; }
  dest=$TMP/p-$tool/mnist
  DPGD_FETCH_TOOL=$tool DPGD_MNIST_MIRRORS="$DEAD $BAD $GOOD" expect_ok "fallback-$tool" bash "$FETCH" "$dest"
  grep -q "train-labels-idx1-ubyte.gz: MD5 check failed" "$TMP/err" || fail "fallback-$tool: corrupt mirror not reported: $(cat "$TMP/err")"
  check_md5s "fallback-$tool" "$dest"
  [ "$(ls -A "$dest" | wc -l)" -eq 4 ] || fail "fallback-$tool: $dest holds $(ls -A "$dest")"
  nothing_left "fallback-$tool" "$TMP/p-$tool" "$TMP/p-$tool/none"
done
# file:// mirrors (a local copy, as tests/run.sh's path on a machine without network is
# checked): a missing directory, then the corrupt copy, then the good one, with either
# tool (wget has no file:// of its own); a relative file:// URL is refused.
for tool in curl wget; do
  dest=$TMP/f-$tool/mnist
  DPGD_FETCH_TOOL=$tool DPGD_MNIST_MIRRORS="file://$TMP/none/ file://$TMP/bad file://$G/" \
    expect_ok "file-$tool" bash "$FETCH" "$dest"
  grep -q "train-labels-idx1-ubyte.gz: MD5 check failed" "$TMP/err" ||
    fail "file-$tool: corrupt local mirror not reported: $(head -c 400 "$TMP/err")"
  check_md5s "file-$tool" "$dest"
  nothing_left "file-$tool" "$TMP/f-$tool" "$TMP/f-$tool/none"
done
DPGD_MNIST_MIRRORS="file://$TMP/bad/" fetch_fail file-corrupt-only \
  "could not get a verified train-labels-idx1-ubyte.gz" bash "$FETCH" "$TMP/f1/mnist"
nothing_left file-corrupt-only "$TMP/f1" "$TMP/f1/mnist"
DPGD_MNIST_MIRRORS="file://data/mnist" fetch_fail file-relative \
  "file://data/mnist: a file:// mirror needs an absolute path" bash "$FETCH" "$TMP/f1/mnist"

dest=$TMP/p-curl/mnist
command -v curl >/dev/null || dest=$TMP/p-wget/mnist
expect_ok fetched-info "$DPGD" data info "$dest"
expect_out fetched-info '^  examples +60000$'

# Already complete: no network needed.
DPGD_MNIST_MIRRORS="$DEAD" expect_ok idempotent bash "$FETCH" "$dest"
grep -q "already present and verified" "$TMP/err" || fail "idempotent: $(cat "$TMP/err")"

# A corrupt local file (raw, read before the .gz) is replaced, and the raw one removed.
gzip -dc "$G/t10k-labels-idx1-ubyte.gz" | head -c 5000 >"$dest/t10k-labels-idx1-ubyte"
rm "$dest/t10k-labels-idx1-ubyte.gz"
DPGD_MNIST_MIRRORS="$GOOD" expect_ok replace bash "$FETCH" "$dest"
[ ! -e "$dest/t10k-labels-idx1-ubyte" ] || fail "replace: the corrupt raw file is still there"
check_md5s replace "$dest"

# --from: a good local copy, and one with a corrupt file (refused, nothing written).
expect_ok from-dir bash "$FETCH" --from "$G" "$TMP/p2/mnist"
check_md5s from-dir "$TMP/p2/mnist"
fetch_fail from-corrupt "bad/train-labels-idx1-ubyte.gz: MD5 of the decompressed data does not match" \
  bash "$FETCH" --from "$TMP/bad" "$TMP/p3/mnist"
nothing_left from-corrupt "$TMP/p3" "$TMP/p3/mnist"
fetch_fail from-missing "--from $TMP/p3: neither train-images-idx3-ubyte.gz nor" bash "$FETCH" --from "$TMP/p3" "$TMP/p4/mnist"
# --prefer DIR: DIR there, it is copied from (a dead mirror is never asked); DIR absent,
# the mirrors are used.
DPGD_MNIST_MIRRORS="$DEAD" expect_ok prefer-dir bash "$FETCH" --prefer "$G" "$TMP/p5/mnist"
check_md5s prefer-dir "$TMP/p5/mnist"
DPGD_MNIST_MIRRORS="file://$G" expect_ok prefer-absent bash "$FETCH" --prefer "$TMP/none" "$TMP/p6/mnist"
check_md5s prefer-absent "$TMP/p6/mnist"
fetch_fail prefer-corrupt "bad/train-labels-idx1-ubyte.gz: MD5 of the decompressed data does not match" \
  bash "$FETCH" --prefer "$TMP/bad" "$TMP/p7/mnist"
fetch_fail from-prefer "exclude each other" bash "$FETCH" --from "$MNIST" --prefer "$MNIST" "$TMP/p8"
fetch_fail bad-option "unknown option '--frm'" bash "$FETCH" --frm x

finish
