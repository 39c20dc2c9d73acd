#!/usr/bin/env bash
# quickstart.sh -- the README's main job on a fresh machine: installs missing Debian
# packages, builds dpgd, gets MNIST (checksum-verified), and shows a result.
set -euo pipefail
cd "$(dirname "$0")/.."
. cmake/deps.sh
dpgd_install_deps
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DDPGD_TESTS=OFF >/dev/null
cmake --build build -j"$(nproc)" --target dpgd >/dev/null
DPGD=build/train/dpgd

# MNIST into data/mnist: copied from ../shared/data/mnist when it is there (CI and
# the project's machines), downloaded from the public mirrors otherwise. Both verify
# the MD5 of every decompressed file.
if [ ! -f data/mnist/train-images-idx3-ubyte.gz ] && [ ! -f data/mnist/train-images-idx3-ubyte ]; then
  if [ -d ../shared/data/mnist ]; then
    bash data/fetch-mnist.sh --from ../shared/data/mnist data/mnist
  else
    bash data/fetch-mnist.sh data/mnist
  fi
fi

"$DPGD" data info data/mnist
