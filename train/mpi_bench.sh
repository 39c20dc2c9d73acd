#!/usr/bin/env bash
# mpi_bench.sh -- 'dpgd train' under mpirun with 1 and 2 ranks of 1 thread each, on the
# full MNIST training set (train/MPI.md): plain private GD for a few steps; prints, per
# rank count, the median time of a step's clipped sum (compute, communication and the
# combination on rank 0) and the wall time per step of the whole run (set-up included),
# then the speed-up of 2 ranks over 1 and the bytes the ranks exchange per step, and the
# CPU time (user + system of all ranks, from /usr/bin/time on mpirun) per step: on a
# shared machine a second rank may get only part of a core, so the speed-up is also
# given per CPU second (1.0: the second rank's CPU time bought a proportional speed-up).
# Timings are non-private diagnostics of this machine at this moment (say how loaded).
# Usage: train/mpi_bench.sh [BUILD_DIR (build-mpi)] [MODEL (softmax|cnn)] [STEPS (10)]
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build-mpi} MODEL=${2:-softmax} STEPS=${3:-10}
DPGD=$(cd "$BUILD/train" && pwd)/dpgd
MNIST=${DPGD_MNIST_DIR:-data/mnist}
export OMP_NUM_THREADS=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
declare -A med cpu
for np in 1 2; do
  /usr/bin/time -f '%U %S' -o "$TMP/time$np" mpirun --allow-run-as-root --oversubscribe --bind-to none -np $np "$DPGD" train \
    --config configs/softmax.ini --set data.dir="$MNIST" --set model.type="$MODEL" \
    --set model.threads=1 --set train.steps="$STEPS" --set privacy.calibrate=none \
    --set privacy.sigma=3 --set train.eval_every=0 --set output.checkpoint_every=0 \
    --set output.progress=false --out "$TMP/np$np" >/dev/null 2>"$TMP/err$np"
  line=$(grep '^dpgd: mpi:' "$TMP/err$np")
  med[$np]=$(sed -n 's/.*median sum time \([0-9.]*\) s.*/\1/p' <<<"$line")
  bytes=$(sed -n 's/.* \([0-9]*\) bytes exchanged.*/\1/p' <<<"$line")
  wall=$(sed -n 's/.*"wall_s": \([0-9.]*\).*/\1/p' "$TMP/np$np/summary.json")
  cpu[$np]=$(awk '{ print $1 + $2 }' "$TMP/time$np")
  awk -v np=$np -v m="${med[$np]}" -v w="$wall" -v s="$STEPS" -v b="$bytes" -v mo="$MODEL" \
    -v c="${cpu[$np]}" \
    'BEGIN { printf "mpi_bench model=%s ranks=%d threads=1 median_sum_s=%s wall_s_per_step=%.4f cpu_s_per_step=%.4f bytes_per_step=%s\n", mo, np, m, w / s, c / s, b }'
done
cmp -s "$TMP/np1/model.bin" "$TMP/np2/model.bin" || echo "mpi_bench: WARNING: model.bin differs between 1 and 2 ranks"
awk -v a="${med[1]}" -v b="${med[2]}" -v c1="${cpu[1]}" -v c2="${cpu[2]}" \
  'BEGIN { printf "mpi_bench speedup_2_over_1=%.3f (median sum time) cpu_ratio_2_over_1=%.3f (whole runs, set-up included) speedup_per_cpu=%.3f (1.0: twice the CPU bought twice the speed)\n", a / b, c2 / c1, (a / b) / (c2 / c1) }'
