# bench_ab.sh -- tests/tools/bench_ab.sh with two stand-in binaries (scripts that print a
# bench line naming the OPENBLAS_CORETYPE and thread settings they were started with):
# the unset rounds really run with the variable unset and the Haswell ones with it set,
# one thread each, both binaries under both settings, and the medians come out per
# setting; a binary that prints no bench line fails the script.
. "$(dirname "$0")/lib.sh"
AB="$(dirname "$0")/../tools/bench_ab.sh"

# fake NAME SECONDS: a stand-in 'dpgd' that times a pass at SECONDS and reports its ratio
# as 1 when OPENBLAS_CORETYPE is unset, 2 when it is Haswell, 9 otherwise.
fake() {
  cat >"$TMP/$1" <<SH
#!/bin/bash
case "\${OPENBLAS_CORETYPE-unset}" in unset) r=1 ;; Haswell) r=2 ;; *) r=9 ;; esac
[ "\$OMP_NUM_THREADS:\$OPENBLAS_NUM_THREADS" = 1:1 ] || r=8
echo "bench grads model=cnn threads=1 s_per_pass=$2 ex_per_s=1 gflops=1 sgemm_gflops=1 ratio=\$r rss_mb=1 n=1"
SH
  chmod +x "$TMP/$1"
}
fake old 2
fake new 1
checks=$((checks + 1))
if out=$(bash "$AB" "$TMP/old" "$TMP/new" "$TMP" 2 2>"$TMP/err"); then
  grep -q '^OPENBLAS_CORETYPE=unset .*full pass .*new/old 0.500 .*pass/sgemm old 1.000 new 1.000' <<<"$out" ||
    fail "unset rounds: $out $(cat "$TMP/err")"
  grep -q '^OPENBLAS_CORETYPE=Haswell .*full pass .*new/old 0.500 .*pass/sgemm old 2.000 new 2.000' <<<"$out" ||
    fail "Haswell rounds: $out $(cat "$TMP/err")"
else
  fail "bench_ab.sh failed: $(cat "$TMP/err")"
fi

printf '#!/bin/bash\necho crashed >&2\nexit 3\n' >"$TMP/broken"
chmod +x "$TMP/broken"
checks=$((checks + 1))
if bash "$AB" "$TMP/old" "$TMP/broken" "$TMP" 1 >"$TMP/out" 2>"$TMP/err"; then
  fail "a binary that prints no bench line passed: $(cat "$TMP/out")"
else
  grep -q 'printed no bench line' "$TMP/err" || fail "no reason given: $(cat "$TMP/err")"
fi
finish
