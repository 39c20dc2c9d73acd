#!/usr/bin/env bash
# run.sh [SECONDS] [TARGET...] -- builds the libFuzzer targets with clang (in
# build-fuzz/) and runs each for SECONDS (default 60) on one core, starting from the
# corpus its seed_<target>.py writes (if any) and its <name>.dict (if any). Prints
# libFuzzer's summary per target; exits non-zero if any target found a crash.
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
status=0
for t in "${targets[@]}"; do
  corpus=$BUILD/corpus/$t
  mkdir -p "$corpus" "$BUILD/artifacts/$t"
  [ -f "tests/fuzz/seed_$t.py" ] && python3 "tests/fuzz/seed_$t.py" "$corpus"
  dict=()
  [ -f "tests/fuzz/${t#fuzz_}.dict" ] && dict=(-dict="tests/fuzz/${t#fuzz_}.dict")
  echo "== $t: ${SECONDS_EACH}s"
  log=$BUILD/$t.log
  if "$BUILD/tests/fuzz/$t" -max_total_time="$SECONDS_EACH" -max_len=65536 -print_final_stats=1 \
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
