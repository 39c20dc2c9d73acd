# audit.sh -- 'dpgd audit' (train/AUDIT.md) on softmax regression with a small MNIST
# subset, plain (Algorithm 6) and filtered (Algorithm 7): without a bug the lower bound
# stays below the claimed eps; with the planted bug of the test-only program
# audit_planted (noise 0.1 of the claim's) it rises above it; gradient canaries on
# softmax and scatter-softmax; the run's seed. Fixed seeds: deterministic.
. "$(dirname "$0")/lib.sh"
PLANTED=${DPGD_BUILD_DIR:-build}/tests/train/audit_planted
[ -x "$PLANTED" ] || { echo "FAIL: $PLANTED not built"; exit 1; }
CFG=${DPGD_SOURCE_DIR:-.}/configs/softmax.ini
ARGS=(--config "$CFG" --set "data.dir=$MNIST" --set data.n_train=2000 --set data.n_test=500
  --set train.steps=30 --set train.eval_every=0 --set privacy.epsilon=2 --canaries 500
  --seed 7 --quiet)

# json FILE KEY: a number or word of audit.json.
json() { sed -n "s/^  \"$2\": \([^,]*\),\{0,1\}$/\1/p" "$1"; }

# audit_ok NAME DIR BELOW|ABOVE: audit.json's eps_lower against eps_claimed, its counts
# against audit_scores.csv.
audit_ok() {
  local j=$2/audit.json lo cl
  lo=$(json "$j" eps_lower) cl=$(json "$j" eps_claimed)
  echo "$1: eps_lower $lo, eps_claimed $cl, $(json "$j" correct)/$(json "$j" guesses) correct"
  checks=$((checks + 1))
  if [ "$3" = BELOW ]; then
    awk -v a="$lo" -v b="$cl" 'BEGIN { exit !(a < b) }' || fail "$1: eps_lower $lo not below $cl"
  else
    awk -v a="$lo" -v b="$cl" 'BEGIN { exit !(a > b) }' || fail "$1: eps_lower $lo not above $cl"
  fi
  checks=$((checks + 1))
  local counts
  counts=$(awk -F, 'NR > 1 { n++; inc += $2; g += ($4 != "");
                    c += ($4 == "in" && $2 == 1) + ($4 == "out" && $2 == 0) }
                    END { print n, inc, g, c }' "$2/audit_scores.csv")
  [ "$counts" = "$(json "$j" canaries) $(json "$j" included) $(json "$j" guesses) $(json "$j" correct)" ] ||
    fail "$1: audit_scores.csv ($counts) disagrees with audit.json"
  checks=$((checks + 1))
  [ "$(json "$j" confidence)" = 0.95 ] && [ "$(json "$j" delta)" = 1e-05 ] || fail "$1: confidence/delta"
}

expect_ok plain "$DPGD" audit "${ARGS[@]}" --out "$TMP/plain"
expect_out plain-verdict '^verdict     no violation found'
audit_ok plain "$TMP/plain" BELOW
# The copy of the training data is its owner's alone, and the directory says it is sensitive.
expect_out plain-sensitive "^sensitive   .*copy of the training data.*/SENSITIVE\)$"
checks=$((checks + 1))
modes=$(stat -c '%a' "$TMP/plain/audit_data" "$TMP/plain/audit_data"/* | sort -u | tr '\n' ' ')
[ "$modes" = "600 700 " ] || fail "plain: audit_data modes '$modes', expected 700 and 600"
checks=$((checks + 1))
grep -q '^SENSITIVE: audit_data/ is a byte-identical copy of the training data' "$TMP/plain/SENSITIVE" ||
  fail "plain: SENSITIVE missing or wrong"
expect_out plain-weaker '^weaker      input canaries: ideal gradient canaries would expect'
# The run's noise comes from a seed derived from --seed (train/AUDIT.md "The audited
# run's seed"), not from the config's train.seed = 1, unless --set train.seed is given.
expect_out plain-seed '^noise seed  0x[0-9a-f]{64} \(derived from --seed'
checks=$((checks + 1))
grep -q '"run_seed_from": "the audit seed (derived)"' "$TMP/plain/audit.json" || fail "plain: run_seed_from"
expect_ok kept "$DPGD" audit "${ARGS[@]}" --set train.seed=5 --out "$TMP/kept"
expect_out kept-seed '^noise seed  5 \(train.seed, as set on the command line\)$'
expect_ok planted "$PLANTED" audit "${ARGS[@]}" --out "$TMP/planted"
expect_out planted-verdict '^verdict     CLAIM REFUTED'
audit_ok planted "$TMP/planted" ABOVE
checks=$((checks + 1))
grep -q '"planted_bug": true' "$TMP/planted/audit.json" || fail "planted: not marked"

# Algorithm 7 with B = 15 C^2 over 30 steps: every canary is capped to 0 at its budget.
F=(--set filter.enabled=true --set filter.k=15)
expect_ok filtered "$DPGD" audit "${ARGS[@]}" "${F[@]}" --out "$TMP/filtered"
audit_ok filtered "$TMP/filtered" BELOW
expect_ok filtered-planted "$PLANTED" audit "${ARGS[@]}" "${F[@]}" --out "$TMP/filtered-planted"
audit_ok filtered-planted "$TMP/filtered-planted" ABOVE

# Gradient canaries (7850 on softmax): below the claim without a bug, above it with the
# noise halved, the clip applied as 2C, and (DP-SGD) Poisson sampled at twice the rate.
G=(--canaries 7850 --canaries-kind gradient)
expect_ok grad "$DPGD" audit "${ARGS[@]}" "${G[@]}" --out "$TMP/grad"
audit_ok grad "$TMP/grad" BELOW
checks=$((checks + 1))
grep -q '"canaries_kind": "gradient"' "$TMP/grad/audit.json" || fail "grad: kind not recorded"
expect_ok grad-noise env AUDIT_PLANTED_SCALE=0.5 "$PLANTED" audit "${ARGS[@]}" "${G[@]}" --out "$TMP/grad-noise"
expect_out grad-noise-verdict '^verdict     CLAIM REFUTED'
expect_ok grad-clip env AUDIT_PLANTED_BUG=clip "$PLANTED" audit "${ARGS[@]}" "${G[@]}" --out "$TMP/grad-clip"
expect_out grad-clip-verdict '^verdict     CLAIM REFUTED'
S=(--set train.sampling=poisson --set train.sample_rate=0.25)
expect_ok grad-rate env AUDIT_PLANTED_BUG=rate "$PLANTED" audit "${ARGS[@]}" "${G[@]}" "${S[@]}" --out "$TMP/grad-rate"
expect_out grad-rate-verdict '^verdict     CLAIM REFUTED'
# scatter-softmax (39700 parameters): one gradient canary per parameter, on the base
# data's scattering features as dpgd train computes or caches them.
expect_ok scatter "$DPGD" audit "${ARGS[@]}" --set model.type=scatter-softmax --canaries 39700 --canaries-kind gradient --out "$TMP/scatter"
audit_ok scatter "$TMP/scatter" BELOW
expect_ok scatter-noise env AUDIT_PLANTED_SCALE=0.5 "$PLANTED" audit "${ARGS[@]}" --set model.type=scatter-softmax --canaries 39700 --canaries-kind gradient --out "$TMP/scatter-noise"
expect_out scatter-noise-verdict '^verdict     CLAIM REFUTED'
expect_fail bad-kind 'canaries-kind must be input or gradient' "$DPGD" audit "${ARGS[@]}" --canaries-kind image --out "$TMP/v"
# More than the parameters: coded canaries, K per coordinate (31400 = 4 x 7850: K = 4);
# above 16 x 7850 (the Walsh codes 30 steps keep orthogonal) a one-line refusal.
expect_ok coded "$DPGD" audit "${ARGS[@]}" --canaries 31400 --canaries-kind gradient --out "$TMP/coded"
audit_ok coded "$TMP/coded" BELOW
expect_out coded-codes '^codes       4 per coordinate at most \(Walsh codes'
checks=$((checks + 1))
grep -q '"codes": 4,' "$TMP/coded/audit.json" || fail "coded: codes not recorded"
expect_fail too-many "this model's 7850 parameters times the 16 orthogonal codes its 30 steps allow: use at most 125600" "$DPGD" audit "${ARGS[@]}" --canaries 125601 --canaries-kind gradient --out "$TMP/u"

# Same seeds, same scores; the figure is drawn when gnuplot is there.
expect_ok again "$DPGD" audit "${ARGS[@]}" --out "$TMP/again"
checks=$((checks + 1))
cmp -s "$TMP/plain/audit_scores.csv" "$TMP/again/audit_scores.csv" || fail "scores not reproducible"
if command -v gnuplot >/dev/null; then
  checks=$((checks + 1))
  [ -s "$TMP/plain/audit_scores.png" ] || fail "audit_scores.png missing"
fi

expect_fail no-out 'out DIR is required' "$DPGD" audit --config "$CFG"
expect_fail odd-guesses 'must be even' "$DPGD" audit "${ARGS[@]}" --guesses 7 --out "$TMP/x"
expect_fail one-canary 'at least 2 canaries' "$DPGD" audit "${ARGS[@]}" --canaries 1 --out "$TMP/y"
expect_fail no-plant 'unknown argument' "$DPGD" audit "${ARGS[@]}" --planted-bug --out "$TMP/z"
expect_fail big-subset 'data.n_train = 99999999' "$DPGD" audit "${ARGS[@]}" --set data.n_train=99999999 --out "$TMP/w"
expect_fail used-dir 'finished run' "$DPGD" audit "${ARGS[@]}" --out "$TMP/plain"
finish
