#!/usr/bin/env bash
# run.sh -- the README's test command: installs missing Debian packages, gets MNIST the
# way the quickstart does (into data/mnist, checksum-verified: copied from
# ../shared/data/mnist when that exists, downloaded otherwise; skipped when
# DPGD_MNIST_DIR names the copy the tests should read), configures, builds (Release,
# warnings are errors) and runs the whole ctest suite. Extra arguments go to ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
. cmake/deps.sh
dpgd_install_deps
if [ -z "${DPGD_MNIST_DIR:-}" ]; then
  bash data/fetch-mnist.sh --prefer ../shared/data/mnist data/mnist
fi
BUILD=${DPGD_BUILD:-build}
cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DDPGD_TESTS=ON -DDPGD_WERROR=ON >/dev/null
cmake --build "$BUILD" -j"$(nproc)"
ctest --test-dir "$BUILD" --output-on-failure --no-tests=error -j"$(nproc)" "$@"
