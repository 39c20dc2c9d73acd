#!/usr/bin/env bash
# layout-check.sh BUILD_DIR -- the house keeps its shape:
# 1. includes point only down: core < accounting, data < model < train < train/cli
#    (accounting knows nothing of data, models or training; model only of data and core);
# 2. every global symbol the static libraries define starts with dpgd_ (nm; names that
#    start with __ are the compiler's, e.g. AddressSanitizer's);
# 3. no source file (C, headers, Python, shell, CMake) of the library, the CLI, the tests,
#    the bindings or the build is over 600 lines: a longer one is split by concern.
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:?usage: layout-check.sh BUILD_DIR}
fail=0

# The dpgd folders a folder may include from (besides itself).
allowed() {
  case $1 in
    core) echo "" ;;
    accounting) echo "core" ;;
    data) echo "core" ;;
    model) echo "core data" ;;
    train) echo "core accounting data model" ;;
    train/cli) echo "core accounting data model train" ;;
  esac
}
# Which folder owns a header name.
declare -A owner
for d in core accounting data model train train/cli; do
  for h in "$d"/*.h; do [ -e "$h" ] && owner[$(basename "$h")]=$d; done
done
for d in core accounting data model train train/cli; do
  ok=" $d $(allowed "$d") "
  for f in "$d"/*.c "$d"/*.h; do
    [ -e "$f" ] || continue
    while read -r h; do
      o=${owner[$h]:-}
      [ -z "$o" ] && continue # a system or generated header
      case $ok in *" $o "*) ;; *) echo "layout-check: $f includes $h of $o/"; fail=1 ;; esac
    done < <(sed -n 's/^#include "\(.*\)".*/\1/p' "$f" | xargs -r -n1 basename)
  done
done

for lib in core/libdpgd_core.a accounting/libdpgd_accounting.a data/libdpgd_data.a \
           model/libdpgd_model.a train/libdpgd_trainlib.a train/cli/libdpgd_cli.a; do
  [ -f "$build/$lib" ] || { echo "layout-check: $build/$lib not built"; fail=1; continue; }
  bad=$(nm -g --defined-only "$build/$lib" | awk 'NF == 3 && $3 !~ /^dpgd_/ && $3 !~ /^__/ { print $3 }')
  [ -z "$bad" ] || { echo "layout-check: $lib defines global symbols without dpgd_: $bad"; fail=1; }
done
max_lines=600
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  sources=$(git ls-files -- '*.c' '*.h' '*.py' '*.sh' '*.cmake' '*CMakeLists.txt')
else # an unpacked source tree: every such file outside build folders
  sources=$(find . -path './build*' -prune -o -type f \( -name '*.[ch]' -o -name '*.py' \
            -o -name '*.sh' -o -name '*.cmake' -o -name CMakeLists.txt \) -print | sed 's|^\./||')
fi
# One awk over every file (a wc per file is slow on a loaded machine).
long=$(printf '%s\n' "$sources" | tr '\n' '\0' | xargs -0 -r awk -v max=$max_lines '
  FNR == 1 && NR > 1 && prev_n > max { print prev, prev_n }
  { prev = FILENAME; prev_n = FNR }
  END { if (prev_n > max) print prev, prev_n }')
while read -r f n; do
  [ -n "$f" ] || continue
  echo "layout-check: $f has $n lines, over $max_lines: split it by concern"
  fail=1
done <<<"$long"

[ $fail -eq 0 ] &&
  echo "layout-check: includes point down, every global symbol is dpgd_, no source over $max_lines lines"
exit $fail
