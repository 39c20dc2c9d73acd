# plot.sh -- 'dpgd plot' end to end with gnuplot: the figures of two run directories
# are real 800-px PNG files; a figure whose data is missing is skipped with a note;
# missing gnuplot and corrupt run files give one-line errors. The run directories are
# synthetic (written here in the RUN_FORMAT.md layout): this tests drawing, not training.
. "$(dirname "$0")/lib.sh"

# synth_run DIR ALGORITHM [nodiag]: a finished run of 150 steps
synth_run() {
  mkdir -p "$1"
  awk -v diag="${3:-diag}" 'BEGIN {
    h = "step,eps_exact,eps_zcdp,eps_rdp_classic,eps_rdp_balle,eps_rdp_optimal,mu,test_acc,query_acc_noisy,lr"
    if (diag == "diag") h = h ",diag_train_loss,diag_train_acc,diag_active"
    print h
    for (s = 1; s <= 150; s++) {
      mu = sqrt(s) / 17; acc = (s % 10 == 0) ? sprintf("%.4f", 0.9 - 0.5 * exp(-s / 30)) : ""
      act = (s <= 112) ? 600 : int(600 * exp(-(s - 112) / 20))
      row = sprintf("%d,%.6f,%.6f,%.6f,%.6f,%.6f,%.6f,%s,,0.2", s, mu * 1.2, mu * 1.5, mu * 2,
                    mu * 1.8, mu * 1.7, mu, acc)
      if (diag == "diag") row = row sprintf(",%.4f,%.4f,%d", 1 / s, 0.8, act)
      print row
    } }' >"$1/metrics.csv"
  printf '{"dpgd_version": "0.1.0", "model": "softmax", "algorithm": "%s", "steps": 150, "sigma": 17, "clip": 1, "budget": 112, "delta": 1e-5, "mu": 0.72, "eps": {"exact": 0.2, "zcdp": 0.3, "rdp_classic": 0.4, "rdp_balle": 0.35, "rdp_optimal": 0.33}, "test_acc": 0.9, "wall_s": 1.5, "seed": 1, "rng": "research"}\n' "$2" >"$1/summary.json"
  awk 'BEGIN { print "# SENSITIVE: per-point privacy report"; print "index,label,spend,spend_frac,active,level,delta_level,mu_i,eps_i"
    for (i = 0; i < 600; i++) { u = (i % 7) / 7; if (i % 3 == 0) u = 1
      printf "%d,%d,%.4f,%.6f,%d,1,9e-06,0.1,0.1\n", i, i % 10, u * 112, u, (u < 1) } }' >"$1/points.csv"
}

# png_width FILE: the width in the IHDR chunk
png_width() { od -An -tu1 -j16 -N4 "$1" | awk '{ print $1 * 16777216 + $2 * 65536 + $3 * 256 + $4 }'; }

synth_run "$TMP/runA" filtered
synth_run "$TMP/runB" plain nodiag

if command -v gnuplot >/dev/null 2>&1; then
  expect_ok plot-two-runs "$DPGD" plot "$TMP/runA" "$TMP/runB"
  for f in accuracy active eps spend tradeoff; do
    checks=$((checks + 1))
    png="$TMP/runA/figures/$f.png"
    if [ ! -s "$png" ]; then fail "$f.png not written"; continue; fi
    [ "$(head -c 4 "$png" | od -An -c | tr -d ' ')" = '211PNG' ] || fail "$f.png is not a PNG"
    [ "$(png_width "$png")" = 800 ] || fail "$f.png is $(png_width "$png") px wide, expected 800"
    grep -q "/$f.png\$" "$TMP/out" || fail "$f.png not listed on stdout"
  done

  # --out and --only; a run without diagnostics gets a note for active.png, not a crash
  expect_ok plot-only "$DPGD" plot --out "$TMP/figs" --only active,accuracy "$TMP/runB"
  expect_out plot-only 'figs/accuracy.png'
  checks=$((checks + 1))
  grep -q 'skipped active.png: no diag_active column' "$TMP/err" || fail "no note for active.png"
  [ ! -e "$TMP/figs/eps.png" ] || fail "--only drew eps.png"
  expect_fail only-unknown "unknown figure 'loss'" "$DPGD" plot --only loss "$TMP/runA"
  expect_fail nothing-drawn 'no figure drawn' "$DPGD" plot --only active --out "$TMP/f2" "$TMP/runB"
fi

expect_fail no-gnuplot 'gnuplot-nox' env DPGD_GNUPLOT=/nonexistent/gnuplot "$DPGD" plot "$TMP/runA"
expect_fail no-run-dir 'no RUN_DIR' "$DPGD" plot
expect_fail not-a-run 'summary.json.*finished run' "$DPGD" plot "$TMP/nothing"

# corrupt files: one line naming the file and the problem
cp -r "$TMP/runA" "$TMP/bad"
printf 'step,test_acc\n1,0.5\n2,0.5,9\n' >"$TMP/bad/metrics.csv"
expect_fail ragged-metrics 'metrics.csv:3: 3 fields' "$DPGD" plot "$TMP/bad"
printf 'step,test_acc\n1,0.5\n2,abc\n' >"$TMP/bad/metrics.csv"
expect_fail text-in-metrics "metrics.csv:3: column 'test_acc'" "$DPGD" plot "$TMP/bad"
rm "$TMP/bad/metrics.csv"
expect_fail missing-metrics 'metrics.csv' "$DPGD" plot "$TMP/bad"
cp "$TMP/runA/metrics.csv" "$TMP/bad/"
head -c 100 "$TMP/runA/summary.json" >"$TMP/bad/summary.json"
expect_fail truncated-summary 'summary.json: invalid JSON' "$DPGD" plot "$TMP/bad"
printf '' >"$TMP/bad/summary.json"
expect_fail empty-summary 'summary.json: invalid JSON' "$DPGD" plot "$TMP/bad"
head -c 200 /dev/urandom >"$TMP/bad/summary.json"
expect_fail binary-summary 'summary.json' "$DPGD" plot "$TMP/bad"

# ---- dpgd sweep without training: the plan (--dry-run), tables of a synthetic sweep,
# and bad input. (pipeline.sh runs real trials when MNIST is available.)
printf '[model]\ntype = softmax\n[train]\nsteps = 4\n[privacy]\nsigma = 10\nclip = 1\n' >"$TMP/q-plain.ini"
cp "$TMP/q-plain.ini" "$TMP/q-filtered.ini"
printf '[filter]\nenabled = true\nk = 4\n' >>"$TMP/q-filtered.ini"
expect_ok dry-run "$DPGD" sweep --config "$TMP/q-plain.ini" --config "$TMP/q-filtered.ini" \
  --grid train.lr=0.1,0.2 --seeds 1-2 --out "$TMP/sw" --dry-run
checks=$((checks + 1))
[ "$(grep -c 'to run' "$TMP/out")" = 8 ] || fail "dry-run: expected 8 trials: $(cat "$TMP/out")"
expect_out dry-run "sw/q-filtered\+train.lr=0.2/seed2  to run  config=.*q-filtered.ini train.lr=0.2 train.seed=2"
checks=$((checks + 1))
[ ! -e "$TMP/sw" ] || fail "dry-run created the sweep directory"
printf '[sweep]\nconfig = q-plain.ini q-filtered.ini\nseeds = 3-4\nout = %s/sw2\n' "$TMP" >"$TMP/q.sweep"
expect_ok sweep-file-dry-run "$DPGD" sweep "$TMP/q.sweep" --dry-run --seeds 7
expect_out sweep-file-dry-run 'sw2/q-plain/seed7  to run'
expect_fail sweep-bad-key "cell q-plain\+train.lrr=0.1: .*train.lrr" \
  "$DPGD" sweep --config "$TMP/q-plain.ini" --grid train.lrr=0.1 --dry-run
expect_fail sweep-bad-seeds "--seeds '3-1'" "$DPGD" sweep --config "$TMP/q-plain.ini" --seeds 3-1
expect_fail sweep-no-config 'no config' "$DPGD" sweep --seeds 1
expect_fail sweep-missing-file 'cannot open .*none.sweep' "$DPGD" sweep "$TMP/none.sweep"
expect_fail sweep-bad-jobs "--jobs" "$DPGD" sweep --config "$TMP/q-plain.ini" --jobs 0

# tables of a synthetic sweep directory (two cells, a plain/filtered pair)
for cell in eps03-plain eps03-filtered; do
  for k in 1 2 3; do
    mkdir -p "$TMP/tab/$cell/seed$k"
    alg=${cell#eps03-}
    printf '{"algorithm": "%s", "steps": 112, "delta": 1e-5, "mu": 0.66, "eps": {"exact": 0.2033, "zcdp": 0.3007}, "test_acc": 0.9%d, "wall_s": %d}\n' \
      "$alg" "$k" "$((10 * k))" >"$TMP/tab/$cell/seed$k/summary.json"
  done
done
expect_ok table "$DPGD" sweep --table "$TMP/tab"
expect_out table 'tab/summary.md'
checks=$((checks + 1))
grep -q '^| eps03 | 0.2033 | 0.3007 | (92.00 ± 1.00)% | (92.00 ± 1.00)% | 3 / 3 |$' "$TMP/tab/summary.md" ||
  fail "summary.md: no paired row: $(cat "$TMP/tab/summary.md")"
grep -q '^eps03-plain,plain,3,0,0.920000,0.010000,0.2033,0.3007,,,,1e-05,20.000,60.000$' "$TMP/tab/summary.csv" ||
  fail "summary.csv: $(cat "$TMP/tab/summary.csv")"
printf '{"algorithm": ' >"$TMP/tab/eps03-plain/seed2/summary.json"
expect_fail table-corrupt 'eps03-plain/seed2/summary.json: invalid JSON' "$DPGD" sweep --table "$TMP/tab"
expect_fail table-missing 'not a sweep directory' "$DPGD" sweep --table "$TMP/nothing"

# the paper's sweep files: 6 configs x 10 seeds each, every config they name exists and
# passes the configuration check, and together they use every configs/paper/*.ini
SRC=${DPGD_SOURCE_DIR:-$(dirname "$0")/../..}
: >"$TMP/paper-configs"
for f in tuned subclip subnoise exact; do
  expect_ok "paper-$f" "$DPGD" sweep "$SRC/configs/paper/$f.sweep" --dry-run --out "$TMP/paper"
  checks=$((checks + 1))
  [ "$(grep -c '  to run  config=' "$TMP/out")" = 60 ] || fail "paper-$f: not 60 trials"
  sed -n 's/.*config=\([^ ]*\).*/\1/p' "$TMP/out" >>"$TMP/paper-configs"
done
checks=$((checks + 1))
[ "$(sort -u "$TMP/paper-configs" | xargs -n1 basename | sort | tr '\n' ' ')" = \
  "$(ls "$SRC/configs/paper/" | grep '\.ini$' | sort | tr '\n' ' ')" ] ||
  fail "the .sweep files do not use exactly the configs/paper/*.ini files"

finish
