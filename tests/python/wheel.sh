# wheel.sh -- `pip install .` as a Python user does it, offline: builds the wheel with the
# project's PEP 517 backend (python/build_backend/dpgd_build.py: CMake builds libdpgd),
# installs it into a fresh virtual environment with no index, and runs the package's
# tests from the installed wheel: not from the source tree (no PYTHONPATH, no DPGD_LIB,
# run from a folder outside the repository).
# Set by ctest: DPGD_PYTHON (an interpreter with numpy and pytest), DPGD_SOURCE_DIR,
# DPGD_BUILD_DIR, DPGD_BIN.
. "$(dirname "${BASH_SOURCE[0]}")/../e2e/lib.sh"
PY=${DPGD_PYTHON:?DPGD_PYTHON is set by ctest}
SRC=${DPGD_SOURCE_DIR:?}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
unset PYTHONPATH DPGD_LIB

expect_ok "venv" "$PY" -m venv --system-site-packages "$TMP/venv"
[ $failures -eq 0 ] || finish
V=$TMP/venv/bin/python
# A build folder kept in the test build, so that a second run is incremental.
expect_ok "pip wheel" env DPGD_WHEEL_BUILD_DIR="${DPGD_BUILD_DIR:?}/wheel-build" \
  "$V" -m pip wheel --no-index --no-deps --no-cache-dir -w "$TMP/dist" "$SRC"
whl=$(ls "$TMP"/dist/dpgd-*.whl 2>/dev/null | head -1)
checks=$((checks + 1))
[ -n "$whl" ] || { fail "pip wheel made no dpgd-*.whl: $(tail -c 300 "$TMP/err")"; finish; }
expect_ok "wheel contents" "$V" -m zipfile -l "$whl"
for f in dpgd/__init__.py dpgd/_lib.py dpgd/libdpgd.so.0 "dist-info/RECORD" "dist-info/WHEEL"; do
  expect_out "wheel holds $f" "$f"
done
expect_ok "pip install" "$V" -m pip install --no-index --no-cache-dir "$whl"

mkdir -p "$TMP/run"
cd "$TMP/run" || exit 1
expect_ok "import from the venv" "$V" -c 'import dpgd, sys
assert dpgd.__file__.startswith(sys.prefix), dpgd.__file__
assert dpgd.library_path.startswith(sys.prefix), dpgd.library_path
print(dpgd.library_path)'
expect_out "library inside the package" "site-packages/dpgd/libdpgd.so.0$"
# The README's example, from the installed package.
expect_ok "README example" "$V" -c 'import dpgd
print(dpgd.account([dpgd.Gaussian(sigma=170, count=112)], delta=1e-5))'
expect_out "README example" "^exact +0\.20"

cp "$HERE"/conftest.py "$HERE"/test_accounting.py "$HERE"/test_errors.py \
  "$HERE"/test_filter.py "$HERE"/test_private_sum.py "$HERE"/test_packaging.py .
expect_ok "pytest from the wheel" "$V" -m pytest -q -p no:cacheprovider .
sed -n '$p' "$TMP/out"
[ $failures -eq 0 ] || tail -20 "$TMP/out" >&2
finish
