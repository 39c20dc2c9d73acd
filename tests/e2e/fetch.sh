# fetch.sh -- data/fetch-mnist.sh end to end against HTTP servers on 127.0.0.1: one
# serving the good MNIST files, one serving a corrupted label file, and a dead port.
# Checks fallback between mirrors, refusal of corrupt data with nothing half-written,
# the offline message, --from, idempotence, replacement of a corrupt local file, and
# that what lands in DEST has the MD5s of ../shared/data/mnist/MD5SUMS.
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

# MD5s of a DEST against the MD5SUMS file shipped with the shared data.
SUMS=$MNIST/MD5SUMS
[ -f "$SUMS" ] || SUMS=${DPGD_MNIST_DIR_DEFAULT:-}/MD5SUMS
[ -f "$SUMS" ] || { fail "no MD5SUMS beside $MNIST or in DPGD_MNIST_DIR_DEFAULT"; finish; }
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

serve "$MNIST" || { fail "cannot start the good server"; finish; }
GOOD=$URL
mkdir -p "$TMP/bad"
for f in "$MNIST"/*.gz; do ln -s "$f" "$TMP/bad/"; done
rm "$TMP/bad/train-labels-idx1-ubyte.gz"
# Valid gzip, wrong content: label 100 changed.
python3 - "$MNIST/train-labels-idx1-ubyte.gz" "$TMP/bad/train-labels-idx1-ubyte.gz" <<'PY'
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
dest=$TMP/p-curl/mnist
command -v curl >/dev/null || dest=$TMP/p-wget/mnist
expect_ok fetched-info "$DPGD" data info "$dest"
expect_out fetched-info '^  examples +60000$'

# Already complete: no network needed.
DPGD_MNIST_MIRRORS="$DEAD" expect_ok idempotent bash "$FETCH" "$dest"
grep -q "already present and verified" "$TMP/err" || fail "idempotent: $(cat "$TMP/err")"

# A corrupt local file (raw, read before the .gz) is replaced, and the raw one removed.
gzip -dc "$MNIST/t10k-labels-idx1-ubyte.gz" | head -c 5000 >"$dest/t10k-labels-idx1-ubyte"
rm "$dest/t10k-labels-idx1-ubyte.gz"
DPGD_MNIST_MIRRORS="$GOOD" expect_ok replace bash "$FETCH" "$dest"
[ ! -e "$dest/t10k-labels-idx1-ubyte" ] || fail "replace: the corrupt raw file is still there"
check_md5s replace "$dest"

# --from: a good local copy, and one with a corrupt file (refused, nothing written).
expect_ok from-dir bash "$FETCH" --from "$MNIST" "$TMP/p2/mnist"
check_md5s from-dir "$TMP/p2/mnist"
fetch_fail from-corrupt "bad/train-labels-idx1-ubyte.gz: MD5 of the decompressed data does not match" \
  bash "$FETCH" --from "$TMP/bad" "$TMP/p3/mnist"
nothing_left from-corrupt "$TMP/p3" "$TMP/p3/mnist"
fetch_fail from-missing "--from $TMP/p3: neither train-images-idx3-ubyte.gz nor" bash "$FETCH" --from "$TMP/p3" "$TMP/p4/mnist"
fetch_fail bad-option "unknown option '--frm'" bash "$FETCH" --frm x

finish
