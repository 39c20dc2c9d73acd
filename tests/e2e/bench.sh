# bench.sh -- 'dpgd bench grads' on a small subset: the machine-readable lines are
# there, one per model, in the documented format, and their figures agree with each
# other (examples/s = n / s_per_pass, gflops = examples/s x FLOP per example,
# ratio = gflops / sgemm_gflops, CPU seconds per pass > 0); the batch lines (a DP-SGD
# step's pass over m points drawn without replacement) likewise (examples/s = m /
# s_per_pass, per_example_vs_full = (s_per_pass / m) / (full pass / n)), one per size
# that fits in n; no timing thresholds. Bad options fail cleanly.
. "$(dirname "$0")/lib.sh"

NUM='[0-9.]+(e[-+][0-9]+)?'
LINE="^bench grads model=(softmax|cnn) threads=2 s_per_pass=$NUM ex_per_s=$NUM gflops=$NUM sgemm_gflops=$NUM ratio=$NUM rss_mb=[0-9.]+ n=300 active=100 constant_time=0 cpu_s_per_pass=$NUM\$"

BLINE="^bench batch model=(softmax|cnn) threads=2 m=(256|100) s_per_pass=$NUM ex_per_s=$NUM per_example_vs_full=$NUM noise_s=$NUM n=300 span=[0-9]+\$"

# consistent_batch MODEL M: the model's batch line for M agrees with itself and with the
# model's full-pass line.
consistent_batch() {
  checks=$((checks + 1))
  { grep "^bench grads model=$1 " "$TMP/out"; grep "^bench batch model=$1 threads=[0-9]* m=$2 " "$TMP/out"; } | awk '
    NR == 1 { for (i = 3; i <= NF; i++) { split($i, kv, "="); full[kv[1]] = kv[2] } }
    NR == 2 { for (i = 3; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] } }
    function off(a, b) { return (a - b) > 2e-3 * b || (b - a) > 2e-3 * b }
    END {
      bad = NR != 2 || !(v["s_per_pass"] > 0 && v["noise_s"] > 0 && v["m"] > 0)
      if (!bad && off(v["ex_per_s"], v["m"] / v["s_per_pass"])) bad = 1
      if (!bad && off(v["per_example_vs_full"],
                      (v["s_per_pass"] / v["m"]) / (full["s_per_pass"] / full["n"]))) bad = 1
      exit bad
    }' || fail "$1 m=$2: batch figures disagree: $(grep "^bench batch model=$1 " "$TMP/out")"
}

# consistent MODEL: the model's machine line agrees with itself and with its FLOP line.
consistent() {
  checks=$((checks + 1))
  local flop
  flop=$(sed -nE "s/^$1: [0-9]+ parameters, ([0-9]+) FLOP per example.*/\1/p" "$TMP/out")
  grep "^bench grads model=$1 " "$TMP/out" | tr ' ' '\n' | grep = | awk -F= -v flop="$flop" '
    { v[$1] = $2 }
    function off(a, b) { return (a - b) > 2e-3 * b || (b - a) > 2e-3 * b }
    END {
      bad = !(v["s_per_pass"] > 0 && v["sgemm_gflops"] > 0 && v["rss_mb"] > 1 && flop > 0)
      if (!(v["cpu_s_per_pass"] > 0)) bad = 1
      if (off(v["ex_per_s"], v["n"] / v["s_per_pass"])) bad = 1
      if (off(v["gflops"], v["ex_per_s"] * flop / 1e9)) bad = 1
      if (off(v["ratio"], v["gflops"] / v["sgemm_gflops"])) bad = 1
      exit bad
    }' || fail "$1: figures disagree: $(grep "^bench grads model=$1 " "$TMP/out")"
}

expect_ok all "$DPGD" bench grads --data "$MNIST" --n 300 --reps 1 --threads 2 --chunk 7
expect_out all-softmax "$(echo "$LINE" | sed 's/(softmax|cnn)/softmax/')"
expect_out all-cnn "$(echo "$LINE" | sed 's/(softmax|cnn)/cnn/')"
checks=$((checks + 1))
[ "$(tail -n 1 "$TMP/out" | grep -Ec "$BLINE")" -eq 1 ] || fail "last line is not a bench line"
checks=$((checks + 1))
[ "$(grep -Ec "$BLINE" "$TMP/out")" -eq 2 ] || fail "not one batch line per model (m = 256)"
consistent softmax
consistent cnn
consistent_batch softmax 256
consistent_batch cnn 256

expect_ok batch "$DPGD" bench grads --data "$MNIST" --model softmax --n 300 --reps 1 \
  --threads 2 --batch 100,301,256
checks=$((checks + 1))
[ "$(grep -Ec "$BLINE" "$TMP/out")" -eq 2 ] || fail "--batch 100,301,256: not two batch lines"
consistent_batch softmax 100
expect_ok no-batch "$DPGD" bench grads --data "$MNIST" --model softmax --n 300 --reps 1 \
  --batch 0
checks=$((checks + 1))
[ "$(grep -c '^bench batch' "$TMP/out")" -eq 0 ] || fail "--batch 0 printed batch lines"

expect_ok cnn-only "$DPGD" bench grads --data "$MNIST" --model cnn --n 300 --reps 3 --threads 2
checks=$((checks + 1))
[ "$(grep -c '^bench grads ' "$TMP/out")" -eq 1 ] || fail "--model cnn printed other models"
consistent cnn

expect_ok help "$DPGD" bench --help
expect_out help-line 'bench grads model=M threads=T s_per_pass='
expect_fail bad-model "--model must be cnn, softmax or all" "$DPGD" bench grads --model lstm
expect_fail bad-reps "--reps must be" "$DPGD" bench grads --reps 0
expect_fail bad-threads "threads" "$DPGD" bench grads --threads x
expect_fail bad-option "unknown option '--fast'" "$DPGD" bench grads --fast
expect_fail no-value "--n needs a value" "$DPGD" bench grads --n
expect_fail bad-batch "--batch sizes must be at least 1" "$DPGD" bench grads --batch 256,0
expect_fail bad-batch-text "batch" "$DPGD" bench grads --batch 12x
expect_fail no-grads "expected 'dpgd bench grads" "$DPGD" bench
expect_fail bad-data "does not exist" "$DPGD" bench grads --data "$TMP/nowhere"
finish
