#!/usr/bin/env bash
# run.sh [SECONDS] [TARGET...] -- builds the libFuzzer targets with clang (in
# build-fuzz/) and runs each for SECONDS (default 60) on one core, starting from its
# committed corpus tests/fuzz/corpus/<target>/ (copied: the inputs a run finds stay in
# build-fuzz/corpus/<target>/) and what its seed_<target>.py writes (if any), with its
# <name>.dict (if any). Prints libFuzzer's summary per target; exits non-zero if any
# target found a crash. tests/fuzz/smoke.sh is the short CI pass over the same targets.
set -euo pipefail
cd "$(dirname "$0")/../.."
SECONDS_EACH=${1:-60}
shift || true
BUILD=${DPGD_FUZZ_BUILD:-build-fuzz}
command -v clang >/dev/null || { echo "run.sh: clang is needed (apt-get install clang)" >&2; exit 1; }
cmake -S . -B "$BUILD" -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DDPGD_FUZZ=ON -DDPGD_TESTS=OFF >/dev/null
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  for f in tests/fuzz/fuzz_*.c; do targets+=("$(basename "$f" .c)"); done
fi
cmake --build "$BUILD" -j2 --target "${targets[@]}"
tmp=${TMPDIR:-/tmp} # the targets that parse a path write their input here
if [ -d /dev/shm ] && [ -w /dev/shm ]; then tmp=/dev/shm; fi
status=0
for t in "${targets[@]}"; do
  corpus=$BUILD/corpus/$t
  mkdir -p "$corpus" "$BUILD/artifacts/$t"
  if [ -d "tests/fuzz/corpus/$t" ]; then cp tests/fuzz/corpus/"$t"/* "$corpus/"; fi
  if [ -f "tests/fuzz/seed_$t.py" ]; then python3 "tests/fuzz/seed_$t.py" "$corpus"; fi
  dict=()
  if [ -f "tests/fuzz/${t#fuzz_}.dict" ]; then dict=(-dict="tests/fuzz/${t#fuzz_}.dict"); fi
  echo "== $t: ${SECONDS_EACH}s"
  log=$BUILD/$t.log
  if TMPDIR=$tmp "$BUILD/tests/fuzz/$t" -max_total_time="$SECONDS_EACH" -max_len=65536 -print_final_stats=1 \
    -artifact_prefix="$BUILD/artifacts/$t/" "${dict[@]}" "$corpus" >"$log" 2>&1; then
    grep -E '^(Done|stat::number_of_executed_units|stat::peak_rss_mb)|^#[0-9]+[[:space:]]+(DONE|INITED)' "$log" || tail -3 "$log"
    echo "   corpus: $(ls "$corpus" | wc -l) inputs; no crash"
  else
    status=1
    echo "   FAILED: see $log; reproducer in $BUILD/artifacts/$t/"
    tail -30 "$log"
  fi
done
exit $status
