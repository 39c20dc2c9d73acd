#!/bin/bash
# bench_ab.sh -- times two dpgd binaries against each other with `dpgd bench grads`, in
# alternating order, one thread each, under both OPENBLAS_CORETYPE settings, and prints
# the median of NEW/OLD per model and measure (docs/SPEED.md, "Since row independence").
# usage: bench_ab.sh OLD_DPGD NEW_DPGD DATA_DIR [ROUNDS] [CPU ...]
# Rounds run in parallel streams pinned to the given CPUs (default: one stream on CPU 0);
# each stream runs OLD then NEW, or NEW then OLD, alternately. LIBDIR in the environment
# runs the binaries through LIBDIR/ld-linux-x86-64.so.2 (a copied loader and libraries);
# BENCH_N=N times only the first N images.
set -euo pipefail
[ $# -ge 3 ] || { echo "usage: bench_ab.sh OLD_DPGD NEW_DPGD DATA_DIR [ROUNDS] [CPU ...]" >&2; exit 2; }
old=$1 new=$2 data=$3 rounds=${4:-3}
shift $(( $# < 4 ? $# : 4 ))
cpus=("$@"); [ ${#cpus[@]} -gt 0 ] || cpus=(0)
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
one() { # BIN LABEL CORETYPE CPU
  local env=(env OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1)
  if [ "$3" = unset ]; then env+=(-u OPENBLAS_CORETYPE); else env+=(OPENBLAS_CORETYPE="$3"); fi
  local run=("$1"); [ -n "${LIBDIR:-}" ] && run=("$LIBDIR/ld-linux-x86-64.so.2" --library-path "$LIBDIR" "$1")
  "${env[@]}" taskset -c "$4" "${run[@]}" bench grads --model all --threads 1 --reps 5 \
    --data "$data" --batch 256 ${BENCH_N:+--n "$BENCH_N"} 2>&1 | grep '^bench' | sed "s/^/ver=$2 core=$3 /"
}
k=0
for core in unset Haswell; do
  for ((r = 0; r < rounds; r++)); do
    cpu=${cpus[$((k % ${#cpus[@]}))]}
    if ((r % 2)); then { one "$new" new $core $cpu; one "$old" old $core $cpu; } >"$tmp/$core.$r" &
    else { one "$old" old $core $cpu; one "$new" new $core $cpu; } >"$tmp/$core.$r" & fi
    k=$((k + 1))
    ((k % ${#cpus[@]})) || wait
  done
done
wait
cat "$tmp"/* | python3 -c '
import collections, re, statistics, sys
d = collections.defaultdict(list)
for line in sys.stdin:
    kv = dict(re.findall(r"(\w+)=(\S+)", line))
    what = "full pass" if " grads " in line else "batch %s" % kv.get("m")
    d[(kv["core"], kv["model"], what, kv["ver"])].append(float(kv["s_per_pass"]))
for (core, model, what, ver) in sorted(d):
    if ver != "old": continue
    o, n = d[(core, model, what, "old")], d[(core, model, what, "new")]
    if not n: continue
    print("OPENBLAS_CORETYPE=%-7s %-7s %-10s old %.4g s  new %.4g s  new/old %.3f  (medians of %d, %d)"
          % (core, model, what, statistics.median(o), statistics.median(n),
             statistics.median(n) / statistics.median(o), len(o), len(n)))'
