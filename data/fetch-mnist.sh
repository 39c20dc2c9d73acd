#!/usr/bin/env bash
# fetch-mnist.sh -- downloads MNIST (the four IDX files, gzip) from public mirrors, or
# copies it from a local directory, verifies the MD5 of every decompressed file, and
# moves the files into place only when all four are verified, so the destination never
# holds a partial or corrupt file.
#
#   data/fetch-mnist.sh [--from DIR | --prefer DIR] [DEST]   DEST defaults to data/mnist here
#
#   --from DIR    copy from DIR (the four files, .gz or raw); never downloads
#   --prefer DIR  as --from DIR when DIR exists, otherwise download (the quickstart and
#                 tests/run.sh use it with ../shared/data/mnist, so that CI stays offline)
#
# Environment: DPGD_MNIST_MIRRORS  space-separated base URLs tried in order (each gets
#                                  <file>.gz appended; default: the list below); http://,
#                                  https:// or file:///ABSOLUTE/DIR (a local mirror)
#              DPGD_FETCH_TOOL     curl or wget (default: curl if installed, else wget)
#              DPGD_FETCH_TIMEOUT  seconds per connection attempt (default 20)
set -euo pipefail

FILES="train-images-idx3-ubyte train-labels-idx1-ubyte t10k-images-idx3-ubyte t10k-labels-idx1-ubyte"
# MD5 of the decompressed files (the official MNIST files; the official .gz files are
# recompressed by some mirrors, the content never changes).
md5_of() {
  case $1 in
  train-images-idx3-ubyte) echo 6bbc9ace898e44ae57da46a324031adb ;;
  train-labels-idx1-ubyte) echo a25bea736e30d166cdddb491f175f624 ;;
  t10k-images-idx3-ubyte) echo 2646ac647ad5339dbf082846283269ea ;;
  t10k-labels-idx1-ubyte) echo 27ae3e4e09519cfbb04c329615203637 ;;
  esac
}
DEFAULT_MIRRORS="https://storage.googleapis.com/cvdf-datasets/mnist/
https://ossci-datasets.s3.amazonaws.com/mnist/
https://yann.lecun.com/exdb/mnist/"

say() { echo "fetch-mnist: $*" >&2; }
die() { echo "fetch-mnist: error: $*" >&2; exit 1; }
usage() {
  sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'
}

FROM=""
PREFER=""
DEST=""
while [ $# -gt 0 ]; do
  case $1 in
  -h | --help) usage; exit 0 ;;
  --from)
    [ $# -ge 2 ] || { echo "fetch-mnist: error: --from needs a directory" >&2; exit 2; }
    FROM=$2; shift 2 ;;
  --prefer)
    [ $# -ge 2 ] || { echo "fetch-mnist: error: --prefer needs a directory" >&2; exit 2; }
    PREFER=$2; shift 2 ;;
  -*) echo "fetch-mnist: error: unknown option '$1' (see --help)" >&2; exit 2 ;;
  *)
    [ -z "$DEST" ] || { echo "fetch-mnist: error: one DEST expected" >&2; exit 2; }
    DEST=$1; shift ;;
  esac
done
[ -z "$FROM" ] || [ -z "$PREFER" ] || { echo "fetch-mnist: error: --from and --prefer exclude each other" >&2; exit 2; }
[ -n "$DEST" ] || DEST="$(cd "$(dirname "$0")" && pwd)/mnist"
if [ -n "$PREFER" ] && [ -d "$PREFER" ]; then
  say "$PREFER exists: files missing here are copied from it, not downloaded"
  FROM=$PREFER
fi
[ -z "$FROM" ] || [ -d "$FROM" ] || die "--from $FROM: no such directory"
for tool in gzip md5sum; do
  command -v $tool >/dev/null || die "$tool is needed (Debian: apt-get install gzip coreutils)"
done

# verify FILE NAME: the decompressed content (gzip -dcf passes raw files through) has
# NAME's MD5. Prints nothing; the status is the verdict.
verify() {
  local sum
  sum=$( (gzip -dcf <"$1" | md5sum) 2>/dev/null) || return 1
  [ "${sum%% *}" = "$(md5_of "$2")" ]
}

fetch_url() { # URL OUT
  local timeout=${DPGD_FETCH_TIMEOUT:-20} path
  case $1 in
  file://*) # a local mirror, whatever the tool (wget has no file://): file:///DIR/NAME
    path=${1#file://}
    path=${path#localhost}
    [ -f "$path" ] && cp -- "$path" "$2"
    return ;;
  esac
  case $TOOL in
  curl) curl -fsSL --connect-timeout "$timeout" --retry 1 -o "$2" "$1" ;;
  wget) wget -q -T "$timeout" -t 2 -O "$2" "$1" ;;
  esac
}

if [ -z "$FROM" ]; then
  MIRRORS=${DPGD_MNIST_MIRRORS:-$DEFAULT_MIRRORS}
  [ -n "$(echo $MIRRORS)" ] || die "DPGD_MNIST_MIRRORS is set but lists no mirror"
  REMOTE=""
  for m in $MIRRORS; do
    case $m in
    file:///* | file://localhost/*) ;;
    file://*) die "DPGD_MNIST_MIRRORS: $m: a file:// mirror needs an absolute path (file:///DIR)" ;;
    *) REMOTE=1 ;;
    esac
  done
  TOOL=${DPGD_FETCH_TOOL:-}
  if [ -z "$TOOL" ]; then
    if command -v curl >/dev/null; then TOOL=curl; elif command -v wget >/dev/null; then TOOL=wget; fi
  fi
  case $TOOL in
  curl | wget) command -v "$TOOL" >/dev/null || [ -z "$REMOTE" ] || die "$TOOL is not installed (Debian: apt-get install $TOOL)" ;;
  "") [ -z "$REMOTE" ] || die "neither curl nor wget is installed (Debian: apt-get install curl)" ;;
  *) die "DPGD_FETCH_TOOL=$TOOL: expected curl or wget" ;;
  esac
fi

# Staging happens beside DEST (same file system), so the final mv is a rename.
PARENT=$(dirname "$DEST")
mkdir -p "$PARENT" || die "cannot create $PARENT"
STAGE=$(mktemp -d "$PARENT/.fetch-mnist.XXXXXX") || die "cannot write in $PARENT"
trap 'rm -rf "$STAGE"' EXIT
trap 'exit 130' INT TERM

STAGED=""  # files in $STAGE to move into $DEST
STALE=""   # files in $DEST that failed verification, removed once replaced
for f in $FILES; do
  have=""
  for cand in "$DEST/$f" "$DEST/$f.gz"; do
    if [ -f "$cand" ]; then
      if verify "$cand" "$f"; then have=$cand; break; fi
      say "$cand fails its MD5 check; it will be replaced"
      STALE="$STALE $cand"
    fi
  done
  if [ -n "$have" ]; then
    say "$f: already present and verified ($have)"
    continue
  fi
  if [ -n "$FROM" ]; then
    src=""
    for cand in "$FROM/$f.gz" "$FROM/$f"; do [ -f "$cand" ] && { src=$cand; break; }; done
    [ -n "$src" ] || die "--from $FROM: neither $f.gz nor $f is there"
    name=$(basename "$src")
    cp "$src" "$STAGE/$name.part" || die "cannot copy $src"
    verify "$STAGE/$name.part" "$f" || die "$src: MD5 of the decompressed data does not match $f (corrupt or not MNIST); nothing was installed"
    mv "$STAGE/$name.part" "$STAGE/$name"
    say "$f: copied from $src and verified"
  else
    name=$f.gz
    tried=""
    for m in $MIRRORS; do
      url="${m%/}/$name"
      tried="$tried $url"
      if ! fetch_url "$url" "$STAGE/$name.part" 2>/dev/null; then
        say "$url: download failed, trying the next mirror"
      elif ! verify "$STAGE/$name.part" "$f"; then
        say "$url: MD5 check failed (corrupt or wrong file), refused; trying the next mirror"
      else
        mv "$STAGE/$name.part" "$STAGE/$name"
        say "$f: downloaded from $url and verified"
        break
      fi
      rm -f "$STAGE/$name.part"
    done
    [ -f "$STAGE/$name" ] || die "could not get a verified $name from any mirror (tried:$tried). \
If this machine is offline, copy the four MNIST files (.gz or raw) from one that is online \
and run: $0 --from DIR${DEST:+ $DEST}; or set DPGD_MNIST_MIRRORS to a reachable mirror. \
Nothing was installed."
  fi
  STAGED="$STAGED $name"
done

mkdir -p "$DEST" || die "cannot create $DEST"
for name in $STAGED; do
  mv -f "$STAGE/$name" "$DEST/$name" || die "cannot move $name into $DEST"
done
# A failed file not overwritten by the mv (raw beside a new .gz) would still be read
# first by the readers (raw wins): remove it.
for stale in $STALE; do
  case " $STAGED " in *" $(basename "$stale") "*) continue ;; esac
  rm -f "$stale"
done
say "MNIST is in $DEST (4 files, MD5 verified)"
