#!/usr/bin/env bash
# smoke.sh [SECONDS] -- the CI smoke pass of the libFuzzer targets: configures and builds
# them with clang in build-fuzz/ (DPGD_FUZZ_BUILD overrides), then runs every target
# for SECONDS (default 5), two at a time (DPGD_FUZZ_JOBS), each starting from its
# committed corpus tests/fuzz/corpus/<target>/ and what its seed_<target>.py writes,
# with its dictionary. The runs work on copies (the committed corpus is not changed) and
# write their temp files to /dev/shm when it is writable. Exits non-zero if a target
# crashes, leaks, trips a sanitizer, times out on an input or runs out of memory; the
# log and the reproducer are then under build-fuzz/smoke/<target>/ and the end of the
# log is printed. Replay one with: build-fuzz/tests/fuzz/<target> <reproducer>.
set -euo pipefail
cd "$(dirname "$0")/../.."
SECONDS_EACH=${1:-5}
BUILD=${DPGD_FUZZ_BUILD:-build-fuzz}
JOBS=${DPGD_FUZZ_JOBS:-2}
command -v clang >/dev/null || { echo "smoke.sh: clang is needed (apt-get install clang)" >&2; exit 1; }
t0=$(date +%s)
cmake -S . -B "$BUILD" -DCMAKE_C_COMPILER=clang -DDPGD_FUZZ=ON -DDPGD_TESTS=OFF >/dev/null
targets=()
for f in tests/fuzz/fuzz_*.c; do targets+=("$(basename "$f" .c)"); done
cmake --build "$BUILD" -j"$JOBS" --target "${targets[@]}" >/dev/null
t1=$(date +%s)
echo "smoke.sh: built ${#targets[@]} fuzz targets in $((t1 - t0)) s; ${SECONDS_EACH} s each, $JOBS at a time"

tmp=${TMPDIR:-/tmp}
[ -d /dev/shm ] && [ -w /dev/shm ] && tmp=/dev/shm
export BUILD SECONDS_EACH tmp

run_one() {
  local t=$1 work=$BUILD/smoke/$1
  rm -rf "$work"
  mkdir -p "$work/corpus" "$work/artifacts"
  if [ -d "tests/fuzz/corpus/$t" ]; then cp tests/fuzz/corpus/"$t"/* "$work/corpus/"; fi
  if [ -f "tests/fuzz/seed_$t.py" ]; then python3 "tests/fuzz/seed_$t.py" "$work/corpus"; fi
  local dict=()
  if [ -f "tests/fuzz/${t#fuzz_}.dict" ]; then dict=(-dict="tests/fuzz/${t#fuzz_}.dict"); fi
  if TMPDIR=$tmp "$BUILD/tests/fuzz/$t" -max_total_time="$SECONDS_EACH" -max_len=65536 \
       -timeout=25 -rss_limit_mb=2560 -print_final_stats=1 \
       -artifact_prefix="$work/artifacts/" "${dict[@]}" "$work/corpus" >"$work/log" 2>&1; then
    echo "ok   $t: $(grep -E '^#[0-9]+[[:space:]]+DONE' "$work/log" | tail -1 |
                    sed -E 's/^#([0-9]+)[[:space:]]+DONE[[:space:]]+/\1 runs, /')"
  else
    echo "FAIL $t: see $work/log; reproducer in $work/artifacts/"
    tail -40 "$work/log" | sed "s/^/  $t| /"
    return 1
  fi
}
export -f run_one

status=0
printf '%s\n' "${targets[@]}" | xargs -P "$JOBS" -I{} bash -c 'run_one {}' || status=1
echo "smoke.sh: $([ $status = 0 ] && echo passed || echo FAILED) in $(($(date +%s) - t0)) s"
exit $status
