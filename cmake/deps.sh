# deps.sh -- sourced by tests/run.sh, train/quickstart.sh and .ci/run: installs the
# Debian packages dpgd needs when any is missing (as root, or through sudo).
DPGD_DEBIAN_PACKAGES="build-essential cmake pkg-config libopenblas-dev libgsl-dev libpng-dev
zlib1g-dev libinih-dev libsodium-dev libcmocka-dev gnuplot-nox curl python3 python3-numpy
python3-pytest python3-venv libjemalloc2 libfftw3-dev"
# python3-venv: tests/python/wheel.sh installs the wheel into a fresh virtual environment;
# libjemalloc2: tests/python/test_packaging.py saves a filter under another allocator;
# libfftw3-dev: the scattering features' 2-D FFTs of sizes 36, 18 and 9 (data/scatter.c).
# The MPI build (cmake -DDPGD_MPI=ON, train/MPI.md): dpgd_install_deps $DPGD_MPI_PACKAGES
DPGD_MPI_PACKAGES="libopenmpi-dev openmpi-bin"

dpgd_install_deps() { # [EXTRA_PACKAGE ...]
  local missing=() p
  for p in $DPGD_DEBIAN_PACKAGES "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  echo "dpgd: installing Debian packages: ${missing[*]}" >&2
  local sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq &&
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
}
