#!/usr/bin/env bash
# run.sh -- the README's test command: installs missing Debian packages, configures,
# builds (Release, warnings are errors) and runs the whole ctest suite. Extra arguments go
# to ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
. cmake/deps.sh
dpgd_install_deps
BUILD=${DPGD_BUILD:-build}
cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DDPGD_TESTS=ON -DDPGD_WERROR=ON >/dev/null
cmake --build "$BUILD" -j"$(nproc)"
ctest --test-dir "$BUILD" --output-on-failure --no-tests=error -j"$(nproc)" "$@"
