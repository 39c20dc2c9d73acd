#!/bin/sh
# long_functions.sh -- list C functions longer than a limit, counted from the line that
# names the function to its closing brace (the project's layout: a definition's braces
# sit in column 0). Usage: long_functions.sh [-n LIMIT] [-a] DIR...; -a lists every
# function, longest first. Exits 1 when a function is over the limit, so that ctest
# (style_function_length) holds the line.
limit=60
all=0
while [ $# -gt 0 ]; do
  case "$1" in
    -n) limit=$2; shift 2 ;;
    -a) all=1; shift ;;
    *) break ;;
  esac
done
[ $# -gt 0 ] || { echo "usage: $0 [-n LIMIT] [-a] DIR..." >&2; exit 2; }
find "$@" -name '*.c' | LC_ALL=C sort | xargs awk -v limit="$limit" -v all="$all" '
  FNR == 1 { cand = 0; infn = 0 }
  # A candidate definition: an identifier in column 0 followed by "(" on a line that
  # does not end a declaration.
  !infn && /^[A-Za-z_][A-Za-z0-9_ \t\*]*\(/ && !/;[ \t]*$/ && !/^(typedef|return|else)[ \t(]/ {
    s = $0; sub(/\(.*/, "", s); n = split(s, w, /[ \t\*]+/); name = w[n]
    if (name == "") name = w[n - 1]
    cand = 1; start = FNR; next
  }
  !infn && cand && /;[ \t]*$/ && !/^\{/ { cand = 0; next }
  !infn && cand && /^\{/ { infn = 1; next }
  infn && /^\}/ {
    len = FNR - start + 1
    printf "%d %s:%d %s\n", len, FILENAME, start, name
    infn = 0; cand = 0
  }
' | sort -k1,1nr -k2 | awk -v limit="$limit" -v all="$all" '
  { if ($1 > limit) { bad = 1; print; next } if (all) print }
  END { exit bad ? 1 : 0 }'
