# mpi.sh -- 'dpgd train' under mpirun (the -DDPGD_MPI=ON build; train/MPI.md) on small
# MNIST subsets, against the same binary run without mpirun (one process):
# 1. softmax with Algorithm 7 and stopping queries, and the CNN: 1, 2 and 3 ranks give
#    the model.bin, metrics.csv and points.csv of one process, byte for byte;
# 2. DP-SGD with Poisson sampling (the sample drawn by rank 0), and with individual
#    filtering and held bounds (filter.hold: rank 0 lowers the caps before they are
#    scattered; about 1 point in 9 still active at the end): likewise with 3 ranks;
#    a secure run (full batch or DP-SGD: an integer sum on one process) is refused;
# 3. a 2-rank run whose rank 1 is killed (SIGKILL) mid-run ends non-zero, its checkpoint
#    intact; resumed with 3 ranks it ends with the bytes of the uninterrupted run;
# 4. a rank that cannot read the data (or reads other data) stops every rank at the
#    start, non-zero, with one dpgd error line naming the rank.
. "$(dirname "$0")/lib.sh"
CFG=${DPGD_SOURCE_DIR:-$(dirname "$0")/../..}/configs/softmax.ini
export OMP_NUM_THREADS=1
# Open MPI in containers: no single-copy (CMA) transfers between ranks, which need ptrace
# rights a container may not grant.
export OMPI_MCA_btl_vader_single_copy_mechanism=none
MPIRUN=(mpirun --allow-run-as-root --oversubscribe)
command -v mpirun >/dev/null || { echo "FAIL: mpirun not found (apt-get install openmpi-bin)"; exit 1; }
BASE=(--set data.dir="$MNIST" --set data.n_test=200 --set model.threads=1
      --set output.progress=false --set privacy.calibrate=none --set privacy.sigma=3
      --set train.eval_every=2)
SOFTMAX=("${BASE[@]}" --set data.n_train=1000 --set train.steps=8 --set filter.enabled=true
         --set filter.k=4 --set stopping.queries=2 --set stopping.every=3)
# The CNN with 2 threads per rank: the threads split each rank's chunks again.
CNN=("${BASE[@]}" --set data.n_train=300 --set train.steps=3 --set model.type=cnn
     --set model.threads=2 --set train.lr=0.05)
POISSON=("${BASE[@]}" --set data.n_train=1000 --set train.steps=6 --set train.sampling=poisson
         --set train.sample_rate=0.1)
HOLD=("${BASE[@]}" --set data.n_train=1000 --set train.steps=12 --set train.sampling=poisson
      --set train.sample_rate=0.1 --set privacy.clip=5 --set filter.enabled=true
      --set filter.k=6 --set filter.refresh=4 --set filter.hold=2)

# same NAME DIR_A DIR_B: the three result files are identical.
same() { expect_same_files "$1" "$2" "$3" "one process's"; }

# ranks NAME N SETTINGS...: N ranks train into $TMP/NAME.N; compared to $TMP/NAME.ref.
# DPGD_MPI_VERIFY: rank 0 also checks every step's sum against its own, bit for bit (the
# files alone would hardly notice a last-bit difference in a double sum).
ranks() {
  local name=$1 n=$2; shift 2
  expect_ok "$name-np$n" "${MPIRUN[@]}" -np "$n" -x DPGD_MPI_VERIFY=1 "$DPGD" train \
    --config "$CFG" "$@" --out "$TMP/$name.$n"
  checks=$((checks + 1))
  grep -q "^dpgd: mpi: $n ranks; median sum time" "$TMP/err" ||
    fail "$name-np$n: no mpi line on stderr: $(head -c 300 "$TMP/err")"
  if [ "$n" -gt 1 ]; then
    checks=$((checks + 1))
    grep -q "^dpgd: mpi: trust boundary: ranks 1..$((n - 1)) receive the caps .* without noise" "$TMP/err" ||
      fail "$name-np$n: no trust-boundary line on stderr: $(head -c 300 "$TMP/err")"
  fi
  same "$name-np$n" "$TMP/$name.ref" "$TMP/$name.$n"
}

# 1 and 2.
for model in SOFTMAX CNN POISSON HOLD; do
  declare -n S=$model
  expect_ok "$model-ref" "$DPGD" train --config "$CFG" "${S[@]}" --out "$TMP/$model.ref"
  case $model in POISSON | HOLD) nps="3" ;; *) nps="1 2 3" ;; esac
  for n in $nps; do ranks "$model" "$n" "${S[@]}"; done
done

# train.rng = secure, full batch or Poisson sampling: the step sums in integers on one
# process (model/SENSITIVITY.md 8), so under mpirun it is refused, with one error line from
# dpgd (mpirun adds its own banner about the non-zero exit, which is not dpgd's output).
for mode in full poisson; do
  checks=$((checks + 1))
  extra=()
  [ $mode = poisson ] && extra=(--set train.sampling=poisson --set train.sample_rate=0.2
                                --set privacy.calibrate=none --set privacy.sigma=2)
  "${MPIRUN[@]}" -np 2 "$DPGD" train --config "$CFG" "${BASE[@]}" --set data.n_train=500 \
    --set train.steps=3 --set train.rng=secure "${extra[@]}" --out "$TMP/secure-$mode" \
    >"$TMP/out" 2>"$TMP/err"
  rc=$?
  [ $rc -ne 0 ] && [ $rc -lt 128 ] && [ "$(grep -c '^dpgd: ' "$TMP/err")" -eq 1 ] &&
    grep -q '^dpgd: error: .*without mpirun' "$TMP/err" ||
    fail "secure-$mode: exit $rc, expected one 'dpgd: error: ... without mpirun' line: $(head -c 300 "$TMP/err")"
done

# 3. rank 1 killed mid-run (checkpoint every step), resumed with 3 ranks.
# Long enough (an fsync'ed checkpoint per step) that the kill lands mid-run on a fast
# machine too.
KILL=("${BASE[@]}" --set data.n_train=1000 --set train.steps=300 --set train.eval_every=50
      --set output.checkpoint_every=1 --set stopping.queries=2 --set stopping.every=100)
expect_ok kill-ref "$DPGD" train --config "$CFG" "${KILL[@]}" --out "$TMP/kill.ref"
"${MPIRUN[@]}" -np 2 "$DPGD" train --config "$CFG" "${KILL[@]}" --out "$TMP/kill" \
  >"$TMP/kill.out" 2>"$TMP/kill.err" &
mpi_pid=$!
for _ in $(seq 1 3000); do
  [ "$( (wc -l < "$TMP/kill/metrics.csv") 2>/dev/null || echo 0)" -gt 4 ] && break
  sleep 0.01
done
rank1=""
for p in $(ps -o pid= --ppid $mpi_pid); do
  tr '\0' '\n' < "/proc/$p/environ" 2>/dev/null | grep -qx OMPI_COMM_WORLD_RANK=1 && rank1=$p
done
checks=$((checks + 1))
if [ -n "$rank1" ]; then kill -9 "$rank1"; else fail "kill: rank 1's process not found"; fi
wait $mpi_pid
rc=$?
checks=$((checks + 1))
[ $rc -ne 0 ] || fail "kill: mpirun exited 0 after rank 1 was killed"
rows=$(($(wc -l < "$TMP/kill/metrics.csv") - 1))
checks=$((checks + 1))
[ ! -e "$TMP/kill/summary.json" ] && [ "$rows" -lt 300 ] ||
  fail "kill: the run finished before rank 1 was killed ($rows rows); make it longer"
echo "kill: rank 1 killed after $rows metrics rows; mpirun exit $rc"
expect_ok kill-resume "${MPIRUN[@]}" -np 3 "$DPGD" train --resume "$TMP/kill"
expect_out kill-resumed '^resuming +after step [0-9]+'
same kill-resume "$TMP/kill.ref" "$TMP/kill"

# 4. rank 1 runs in a directory whose relative data.dir is empty (or other data).
mkdir -p "$TMP/a" "$TMP/b/none"
ln -s "$(cd "$MNIST" && pwd)" "$TMP/a/data"
ln -s "$TMP/b/none" "$TMP/b/data"
BAD=(--set data.dir=data --set data.n_test=200 --set model.threads=1 --set train.steps=2
     --set output.progress=false --set privacy.calibrate=none --set privacy.sigma=3)
# one_error NAME PATTERN: a failed launch; exactly one dpgd line on stderr, matching.
one_error() {
  checks=$((checks + 1))
  [ "$rc" -ne 0 ] && [ "$rc" -lt 128 ] || fail "$1: exit $rc, expected a clean failure"
  checks=$((checks + 1))
  [ "$(grep -c '^dpgd: ' "$TMP/$1.err")" -eq 1 ] && grep -Eq "$2" "$TMP/$1.err" ||
    fail "$1: stderr: $(head -c 400 "$TMP/$1.err")"
}
"${MPIRUN[@]}" -np 1 -wdir "$TMP/a" "$DPGD" train --config "$CFG" "${BAD[@]}" --out "$TMP/bad" : \
  -np 1 -wdir "$TMP/b" "$DPGD" train >"$TMP/nodata.out" 2>"$TMP/nodata.err"
rc=$?
one_error nodata '^dpgd: error: cannot start the ranks: rank 1 of 2: '
if [ -e "$FASHION/train-images-idx3-ubyte" ] || [ -e "$FASHION/train-images-idx3-ubyte.gz" ]; then
  rm -f "$TMP/b/data" && ln -s "$FASHION" "$TMP/b/data"
  "${MPIRUN[@]}" -np 1 -wdir "$TMP/a" "$DPGD" train --config "$CFG" "${BAD[@]}" \
    --out "$TMP/bad2" : -np 1 -wdir "$TMP/b" "$DPGD" train >"$TMP/other.out" 2>"$TMP/other.err"
  rc=$?
  one_error other 'rank 1 of 2: its training set differs from rank 0.s'
else
  fashion_absent
fi
finish
