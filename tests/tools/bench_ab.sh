#!/bin/bash
# bench_ab.sh -- times two dpgd binaries against each other with `dpgd bench grads`, in
# alternating order, one thread each, under both OPENBLAS_CORETYPE settings, and prints
# the median of NEW/OLD per model and measure, and each binary's median pass/sgemm ratio
# (docs/SPEED.md, "Since row independence").
# usage: bench_ab.sh OLD_DPGD NEW_DPGD DATA_DIR [ROUNDS] [CPU ...]
# Rounds run in parallel streams pinned to the given CPUs (default: one stream on CPU 0);
# each stream runs OLD then NEW, or NEW then OLD, alternately. LIBDIR in the environment
# runs the binaries through LIBDIR/ld-linux-x86-64.so.2 (a copied loader and libraries);
# BENCH_N=N times only the first N images; BENCH_MODEL (cnn, softmax, all: the default),
# BENCH_BATCH (default 256; 0: no DP-SGD batch) and BENCH_REPS (default 5) are passed on.
# A run that prints no bench line, or a setting left without figures, fails the script.
set -euo pipefail
[ $# -ge 3 ] || { echo "usage: bench_ab.sh OLD_DPGD NEW_DPGD DATA_DIR [ROUNDS] [CPU ...]" >&2; exit 2; }
old=$1 new=$2 data=$3 rounds=${4:-3}
shift $(( $# < 4 ? $# : 4 ))
cpus=("$@"); [ ${#cpus[@]} -gt 0 ] || cpus=(0)
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
one() { # BIN LABEL CORETYPE CPU
  # env's options come before its assignments: after the first NAME=VALUE, '-u' would be
  # taken for the command (and the unset rounds would print nothing).
  local env=(env) out
  if [ "$3" = unset ]; then env+=(-u OPENBLAS_CORETYPE); else env+=(OPENBLAS_CORETYPE="$3"); fi
  env+=(OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1)
  local run=("$1"); [ -n "${LIBDIR:-}" ] && run=("$LIBDIR/ld-linux-x86-64.so.2" --library-path "$LIBDIR" "$1")
  out=$("${env[@]}" taskset -c "$4" "${run[@]}" bench grads --model "${BENCH_MODEL:-all}" \
    --threads 1 --reps "${BENCH_REPS:-5}" --data "$data" --batch "${BENCH_BATCH:-256}" \
    ${BENCH_N:+--n "$BENCH_N"} 2>&1) || true
  if ! grep -q '^bench' <<<"$out"; then
    printf 'bench_ab.sh: %s (%s, OPENBLAS_CORETYPE %s) printed no bench line:\n%s\n' \
      "$1" "$2" "$3" "$(tail -n 5 <<<"$out")" >&2
    touch "$tmp/failed"
    return 0
  fi
  grep '^bench' <<<"$out" | sed "s/^/ver=$2 core=$3 /"
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
[ ! -e "$tmp/failed" ] || exit 1
cat "$tmp"/*.* | python3 -c '
import collections, re, statistics, sys
d, ratio = collections.defaultdict(list), collections.defaultdict(list)
for line in sys.stdin:
    kv = dict(re.findall(r"(\w+)=(\S+)", line))
    what = "full pass" if " grads " in line else "batch %s" % kv.get("m")
    d[(kv["core"], kv["model"], what, kv["ver"])].append(float(kv["s_per_pass"]))
    if "ratio" in kv: ratio[(kv["core"], kv["model"], kv["ver"])].append(float(kv["ratio"]))
bad = 0
for core in ("unset", "Haswell"):
    for ver in ("old", "new"):
        if not any(k[0] == core and k[3] == ver for k in d):
            print("bench_ab.sh: no figures for %s under OPENBLAS_CORETYPE=%s" % (ver, core),
                  file=sys.stderr)
            bad = 1
for (core, model, what, ver) in sorted(d):
    if ver != "old": continue
    o, n = d[(core, model, what, "old")], d[(core, model, what, "new")]
    if not n: continue
    line = ("OPENBLAS_CORETYPE=%-7s %-7s %-10s old %.4g s  new %.4g s  new/old %.3f  (medians of %d, %d)"
            % (core, model, what, statistics.median(o), statistics.median(n),
               statistics.median(n) / statistics.median(o), len(o), len(n)))
    ro, rn = ratio.get((core, model, "old")), ratio.get((core, model, "new"))
    if what == "full pass" and ro and rn:
        line += "  pass/sgemm old %.3f new %.3f" % (statistics.median(ro), statistics.median(rn))
    print(line)
sys.exit(bad)'
