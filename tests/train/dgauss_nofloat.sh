#!/bin/sh
# dgauss_nofloat.sh OBJECT... -- fails if the object code of train/dgauss.c (the one of the
# given objects whose name ends in dgauss.c.o) holds a floating-point instruction: x87
# (mnemonics f...), MMX/SSE/AVX registers (%mm, %xmm, %ymm, %zmm, %st) or a call to a
# soft-float helper (__adddf3, __floatdidf, ...). The exact discrete Gaussian must compute
# in integers only (docs/MATH.md "Discrete Gaussian"). x86-64 only; elsewhere it skips (77).
set -u
obj=
for f in "$@"; do
  case "$f" in *dgauss.c.o | *dgauss.c.obj) obj=$f ;; esac
done
if [ -z "$obj" ] || [ ! -f "$obj" ]; then
  echo "dgauss_nofloat: no dgauss.c object among the arguments" >&2
  exit 1
fi
arch=$(objdump -f "$obj" | sed -n 's/^architecture: *\([^,]*\).*/\1/p')
case "$arch" in
  i386:x86-64) ;;
  *) echo "dgauss_nofloat: architecture '$arch' is not scanned (x86-64 only)"; exit 77 ;;
esac
dis=$(objdump -d --no-show-raw-insn "$obj") || exit 1
n=$(printf '%s\n' "$dis" | grep -c '^ *[0-9a-f]*:')
if [ "$n" -lt 50 ]; then
  echo "dgauss_nofloat: only $n instructions in $obj: not the sampler?" >&2
  exit 1
fi
bad=$(printf '%s\n' "$dis" | awk -F'\t' '/^ *[0-9a-f]+:/ {
  split($2, w, " "); m = w[1]
  if (m ~ /^f/ || $2 ~ /%(x|y|z)?mm[0-9]|%st/ ||
      $2 ~ /<__(add|sub|mul|div|neg|cmp|eq|ne|lt|le|gt|ge|unord|float|fix|extend|trunc|pow)[a-z]*(sf|df|xf|tf|hf|bf)[0-9]?/)
    print
}')
if [ -n "$bad" ]; then
  echo "dgauss_nofloat: floating-point instructions in $obj:" >&2
  printf '%s\n' "$bad" | head -20 >&2
  exit 1
fi
echo "dgauss_nofloat: $n instructions of $obj, none floating point"
