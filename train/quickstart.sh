#!/usr/bin/env bash
# quickstart.sh -- the README's main job on a fresh machine: installs missing Debian
# packages, builds dpgd, gets MNIST (checksum-verified), trains plain and filtered
# private GD on it and shows their comparison.
set -euo pipefail
cd "$(dirname "$0")/.."
. cmake/deps.sh
dpgd_install_deps
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DDPGD_TESTS=OFF >/dev/null
cmake --build build -j"$(nproc)" --target dpgd >/dev/null
DPGD=build/train/dpgd

# MNIST into data/mnist: copied from ../shared/data/mnist when it is there (CI and
# the project's machines), downloaded from the public mirrors otherwise. Both verify
# the MD5 of every decompressed file; files already there and verified are kept (a
# second run needs no network). tests/run.sh does the same.
bash data/fetch-mnist.sh --prefer ../shared/data/mnist data/mnist

"$DPGD" data info data/mnist

# Train softmax regression on full MNIST at eps = 0.5 (delta = 1e-5, exact accountant)
# twice: plain private GD and the same with individual privacy filtering, then print
# the comparison table and draw the figures. About a minute on 2 cores. A rerun skips
# what is finished (delete runs/quickstart to start over).
OUT=runs/quickstart
"$DPGD" sweep --config configs/quickstart-plain.ini --config configs/quickstart-filtered.ini \
  --set data.dir=data/mnist --set output.diagnostics=true --seeds 1 --out "$OUT"
echo
cat "$OUT/summary.md"
echo
"$DPGD" plot --out "$OUT/figures" "$OUT/quickstart-plain/seed1" "$OUT/quickstart-filtered/seed1"
echo "figures in $OUT/figures; per-run logs, metrics.csv, summary.json and model.bin in $OUT/*/seed1"
echo "points.csv there is the per-point privacy report: SENSITIVE, keep it local"
