#!/usr/bin/env bash
# format-check.sh [--fix] -- every tracked C source and header is formatted as
# .clang-format says (clang-format --dry-run -Werror); --fix rewrites them in place.
# CI runs the check; clang-format is Debian's clang-format package.
set -euo pipefail
cd "$(dirname "$0")/../.."
command -v clang-format >/dev/null ||
  { echo "format-check.sh: clang-format is needed (apt-get install clang-format)" >&2; exit 1; }
mapfile -t files < <(git ls-files '*.c' '*.h')
if [ "${1:-}" = "--fix" ]; then
  clang-format -i "${files[@]}"
  exit 0
fi
if clang-format --dry-run -Werror "${files[@]}" 2>"${TMPDIR:-/tmp}/format-check.$$"; then
  rm -f "${TMPDIR:-/tmp}/format-check.$$"
  echo "format-check.sh: ${#files[@]} files formatted as .clang-format says"
  exit 0
fi
grep -E '^[^ ].*: error:' "${TMPDIR:-/tmp}/format-check.$$" | cut -d: -f1 | sort -u |
  sed 's/^/format-check.sh: not formatted: /' >&2
rm -f "${TMPDIR:-/tmp}/format-check.$$"
echo "format-check.sh: run 'bash tests/tools/format-check.sh --fix' and commit" >&2
exit 1
