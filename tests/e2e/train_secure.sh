# train_secure.sh -- a train.rng = secure run killed with SIGKILL at random moments,
# several times, and resumed each time, releases every step and noisy query exactly once
# (the secure noise cannot be replayed, so a redone step would be a second, unaccounted
# release): nothing of a step reaches metrics.csv or the progress line before the
# checkpoint covering it, so what a killed session emitted (complete or partial rows,
# progress lines) never goes past the step the next --resume continues after, and stays
# byte for byte in the final metrics.csv; the final file has one row per step 1..T; the
# accountant (summary.json's zcdp eps) counts exactly T steps and the queries in the rows,
# checked against the closed form; the ledger invariant s(i) <= B_norm holds.
. "$(dirname "$0")/lib.sh"
CFG=${DPGD_SOURCE_DIR:-$(dirname "$0")/../..}/configs/softmax.ini
export OMP_NUM_THREADS=1
# Algorithm 7, B_norm = 30 C^2, 30 queries one step apart: T = 30 + 29 = 59 steps.
# sigma 20, C 1, tau = 0.5 n = 150 (a query is a Gaussian release with mu 1/tau).
SET=(--set data.dir="$MNIST" --set data.n_train=300 --set data.n_test=200
     --set model.threads=1 --set train.rng=secure --set filter.enabled=true
     --set filter.k=30 --set train.steps=0 --set stopping.queries=30 --set stopping.every=1
     --set privacy.calibrate=none --set privacy.sigma=20 --set privacy.clip=1
     --set stopping.tau_frac=0.5 --set train.eval_every=3 --set output.checkpoint_every=0)
T=59
R=$TMP/run

# rows_max FILE: the largest step number on any line after the header (partial lines too).
rows_max() { awk -F, 'NR > 1 && $1 ~ /^[0-9]+$/ && $1 + 0 > m { m = $1 + 0 } END { print m + 0 }' "$1"; }

# One session in the background, up to KILLS times killed at a random moment: mostly
# 0..20 ms after it wrote its first to third new row (the first session always, so that
# the run directory exists), one time in four 0..90 ms after it started (while it
# loads). The moments follow the run's progress, not the clock, so that kills land on a
# fast idle machine as on a busy one.
KILLS=5
kills=0
pending=()  # snapshots (metrics.csv and stderr) of killed sessions not yet checked
session=0
check_pending() {  # $1: the step a --resume said it continues after
  local n=$1 s
  for s in "${pending[@]}"; do
    checks=$((checks + 1))
    local rm pm
    rm=$(rows_max "$s.csv")
    pm=$(sed -n 's/^step \([0-9]*\)\/.*/\1/p' "$s.err" | sort -n | tail -1)
    [ "$rm" -le "$n" ] || fail "$s: metrics.csv reached step $rm but resume continues after $n"
    [ "${pm:-0}" -le "$n" ] || fail "$s: progress line showed step $pm, resume continues after $n"
  done
  pending=()
}
while :; do
  session=$((session + 1))
  if [ $session -eq 1 ]; then
    "$DPGD" train --config "$CFG" "${SET[@]}" --out "$R" >"$TMP/s$session.out" 2>"$TMP/s$session.err" &
  else
    "$DPGD" train --resume "$R" >"$TMP/s$session.out" 2>"$TMP/s$session.err" &
  fi
  pid=$!
  if [ $kills -lt $KILLS ]; then
    if [ $session -eq 1 ] || [ $((RANDOM % 4)) -ne 0 ]; then
      r0=$(( $( (wc -l < "$R/metrics.csv") 2>/dev/null || echo 1) + RANDOM % 3 ))
      for _ in $(seq 1 5000); do
        [ "$( (wc -l < "$R/metrics.csv") 2>/dev/null || echo 0)" -gt "$r0" ] && break
        kill -0 $pid 2>/dev/null || break
        sleep 0.002
      done
      sleep "0.0$((RANDOM % 3))"
    else
      sleep "0.0$((RANDOM % 10))"
    fi
    kill -9 $pid 2>/dev/null
  fi
  wait $pid
  rc=$?
  if [ $session -gt 1 ]; then
    n=$(sed -n 's/^resuming *after step \([0-9]*\)$/\1/p' "$TMP/s$session.out")
    if [ -n "$n" ]; then
      check_pending "$n"
      checks=$((checks + 1))
      grep -Eq '^redone +0 released steps' "$TMP/s$session.out" ||
        fail "session $session: no 'redone 0 released steps' line: $(head -c 300 "$TMP/s$session.out")"
    fi
  fi
  if [ -e "$R/summary.json" ]; then
    [ $rc -eq 0 ] || fail "session $session: exit $rc after finishing"
    break
  fi
  [ $rc -eq 137 ] || { fail "session $session: exit $rc: $(head -c 300 "$TMP/s$session.err")"; break; }
  kills=$((kills + 1))
  snap=$TMP/snap$kills
  cp "$R/metrics.csv" "$snap.csv"
  cp "$TMP/s$session.err" "$snap.err"
  pending+=("$snap")
  echo "kill $kills: session $session killed at metrics.csv step $(rows_max "$snap.csv")"
  [ $session -lt 20 ] || { fail "no end after $session sessions"; break; }
done
checks=$((checks + 1))
[ $kills -ge 2 ] || fail "only $kills kills landed before the run ended; make it longer"

# Everything a killed session emitted is still there, unchanged (not drawn again).
for s in "$TMP"/snap*.csv; do
  [ -e "$s" ] || continue
  checks=$((checks + 1))
  cmp -s -n "$(wc -c < "$s")" "$s" "$R/metrics.csv" ||
    fail "$(basename "$s"): an emitted row changed after resume: $(diff "$s" "$R/metrics.csv" | head -4)"
done

# One row per step 1..T, in order, no duplicates.
expect_rows_1_to secure "$R" $T
# The accountant counts what was emitted: T steps and the queries in the rows.
checks=$((checks + 1))
grep -q "\"steps\": $T, .*\"queries\": $q_rows," "$R/summary.json" && [ "$q_rows" -eq 30 ] ||
  fail "summary.json steps/queries vs $T rows and $q_rows queries: $(head -c 300 "$R/summary.json")"
# A secure full-batch run releases discrete Gaussians on integer sums (docs/MATH.md
# "Discrete Gaussian"): rho-zCDP with rho = mu^2/2, mu^2 = min(B, T C^2)/(sigma C)^2 +
# queries/tau^2 = 30/400 + 30/150^2; its zcdp eps is mu (mu/2 + sqrt(2 log(1/delta))).
# summary.json's mu (GDP) is null: no GDP statement is proven for the discrete Gaussian.
zc=$(sed -n 's/.*"zcdp": \([0-9.e+-]*\).*/\1/p' "$R/summary.json")
checks=$((checks + 1))
awk -v z="$zc" -v q="$q_rows" 'BEGIN { m = sqrt(30 / 400 + q / 22500);
  e = m * (m / 2 + sqrt(2 * log(1e5))); d = z - e; exit !(d >= 0 && d <= 1e-8 * e) }' ||
  fail "summary zcdp eps $zc is not that of mu = sqrt(30/400 + $q_rows/22500)"
checks=$((checks + 1))
grep -q '"mu": null' "$R/summary.json" || fail "summary.json states a GDP mu for discrete noise"
checks=$((checks + 1))
eps_sum=$(sed -n 's/.*"rdp_optimal": \([0-9.e+-]*\).*/\1/p' "$R/summary.json")
eps_row=$(tail -1 "$R/metrics.csv" | cut -d, -f6)
[ -n "$eps_sum" ] && [ "$eps_sum" = "$eps_row" ] ||
  fail "summary eps rdp_optimal '$eps_sum' differs from the last row's '$eps_row'"
# The ledger invariant: 0 <= s(i) <= B_norm = 30 for every point.
checks=$((checks + 1))
awk -F, 'NR > 2 && !($3 >= 0 && $3 <= 30 && $4 <= 1) { bad++ } END { exit bad > 0 }' \
  "$R/points.csv" || fail "points.csv: a spend outside [0, B_norm]"
checks=$((checks + 1))
[ "$(wc -l < "$R/points.csv")" -eq 302 ] || fail "points.csv should have 300 rows"
# A secure run carries no research caveat, in summary.json or on stderr, and no
# floating-point caveat either: summary.json and the last lines name the theorem.
checks=$((checks + 1))
! grep -q 'caveat' "$R/summary.json" && ! grep -qh 'warning: research' "$TMP"/s*.err ||
  fail "secure run carries a caveat"
checks=$((checks + 1))
grep -q '"theorem": "docs/MATH.md section 18, proven there: .*Canonne, Kamath & Steinke' "$R/summary.json" ||
  fail "secure summary.json names no theorem: $(head -c 300 "$R/summary.json")"
checks=$((checks + 1))
grep -q '^done .*eps .*the continuous Gaussian would give' "$TMP/s$session.out" &&
  grep -q '^guarantee   docs/MATH.md section 18, proven there' "$TMP/s$session.out" &&
  ! grep -q '^caveat' "$TMP/s$session.out" ||
  fail "secure run: no theorem line after its eps: $(tail -c 300 "$TMP/s$session.out")"
# The progress line's ETA follows the wall time (data-dependent): labelled not private.
checks=$((checks + 1))
grep -Eq '^step [0-9]+/[0-9]+  ETA [0-9]+m[0-9]{2}s \(not private\)  eps ' "$TMP/s$session.err" ||
  fail "progress line: ETA not labelled: $(head -c 300 "$TMP/s$session.err")"
echo "secure: $kills kills in $session sessions; $T rows, $q_rows queries, zcdp eps $zc"

# A secure run with rows after its checkpoint (as a dpgd without this check left them)
# cannot be resumed: redoing those steps would release them twice.
cp -r "$R" "$TMP/old"; rm "$TMP/old/summary.json"
tail -1 "$TMP/old/metrics.csv" | sed "s/^$T,/$((T + 1)),/" >> "$TMP/old/metrics.csv"
expect_fail old-secure 'release them twice' "$DPGD" train --resume "$TMP/old"
finish
