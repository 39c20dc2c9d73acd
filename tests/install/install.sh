# install.sh -- the installed dpgd as a user of the library sees it. Installs the build
# into a temporary prefix (cmake --install), checks what is there, then builds
# tests/install/outside.c against that prefix only, with pkg-config (shared, then static
# through Libs.private) and with a CMake project (find_package(dpgd): dpgd::dpgd and
# dpgd::dpgd_static), and runs each program: it checks the accountant against the
# Gaussian closed form and trains two steps of softmax regression on MNIST.
# Set by ctest: DPGD_BUILD_DIR, DPGD_CMAKE, DPGD_CC, DPGD_VERSION, DPGD_SANITIZE.
. "$(dirname "${BASH_SOURCE[0]}")/../e2e/lib.sh"
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
BUILD=${DPGD_BUILD_DIR:?DPGD_BUILD_DIR is set by ctest}
VERSION=${DPGD_VERSION:?DPGD_VERSION is set by ctest}
CMAKE=${DPGD_CMAKE:-cmake}
CC=${DPGD_CC:-cc}
# A sanitizer build's libdpgd needs the sanitizer runtime first in the program.
CFLAGS="-std=c11 -Wall -Wextra -Werror"
case ${DPGD_SANITIZE:-OFF} in ON | TRUE | 1) CFLAGS="$CFLAGS -fsanitize=address,undefined" ;; esac

P=$TMP/prefix
expect_ok "cmake --install" "$CMAKE" --install "$BUILD" --prefix "$P"
[ $failures -eq 0 ] || finish
PC=$(find "$P" -name dpgd.pc)
LIB=$(dirname "$(dirname "$PC")")
INC=$P/include/dpgd

# ---- What is installed -----------------------------------------------------------------
checks=$((checks + 1))
for f in "$P/bin/dpgd" "$INC/dpgd.h" "$LIB/libdpgd.so.$VERSION" "$LIB/libdpgd.a" \
         "$LIB/pkgconfig/dpgd-static.pc" "$LIB/cmake/dpgd/dpgdConfig.cmake" "$LIB/cmake/dpgd/dpgdConfigVersion.cmake" \
         "$P/share/doc/dpgd/LICENSE" "$P/share/doc/dpgd/CHANGELOG.md"; do
  [ -s "$f" ] || fail "not installed: ${f#"$P"/}"
done
checks=$((checks + 1))
[ "$(readlink "$LIB/libdpgd.so")" = libdpgd.so.0 ] || fail "libdpgd.so does not point to libdpgd.so.0"
checks=$((checks + 1))
soname=$(readelf -d "$LIB/libdpgd.so.$VERSION" 2>/dev/null | sed -n 's/.*SONAME.*\[\(.*\)\]/\1/p')
[ "$soname" = "libdpgd.so.${VERSION%%.*}" ] || fail "SONAME '$soname', want libdpgd.so.${VERSION%%.*}"
# Every header a public header includes with quotes is installed beside it; nothing but
# the dpgd_*.h public headers and dpgd.h is.
for h in "$INC"/*; do
  checks=$((checks + 1))
  case ${h##*/} in dpgd.h | dpgd_*.h) ;; *) fail "unexpected file in include/dpgd: ${h##*/}" ;; esac
  for inc in $(sed -n 's/^[ \t]*#[ \t]*include[ \t]*"\([^"]*\)".*/\1/p' "$h"); do
    [ -f "$INC/$inc" ] || fail "${h##*/} includes \"$inc\", which is not installed"
  done
done
# The shared library exports the dpgd_ API only.
checks=$((checks + 1))
other=$(nm -D --defined-only "$LIB/libdpgd.so" | awk '$3 !~ /^dpgd_/ { print $3 }' | head -5)
[ -z "$other" ] || fail "libdpgd.so exports symbols outside dpgd_: $other"

# Every exported function is declared in an installed public header: nothing internal
# is reachable from outside (the version script is made from the headers).
for sym in $(nm -D --defined-only "$LIB/libdpgd.so" | awk '{ print $3 }'); do
  checks=$((checks + 1))
  grep -qE "(^|[^a-z0-9_])$sym[[:space:]]*\(" "$INC"/*.h ||
    fail "libdpgd.so exports $sym, which no installed header declares"
done

# ---- The Python package in the prefix's site-packages, finding the prefix's library ---------
SITE=$(find "$P" -path '*/site-packages/dpgd/__init__.py' | head -1)
checks=$((checks + 1))
if [ -z "$SITE" ]; then
  fail "not installed: lib/python3.X/site-packages/dpgd"
else
  case ${DPGD_SANITIZE:-OFF} in
    ON | TRUE | 1) echo "note: sanitizer build, the installed Python package is not imported" ;;
    *)
      expect_ok "python: import installed dpgd" env -u DPGD_LIB \
        PYTHONPATH="$(dirname "$(dirname "$SITE")")" python3 -c 'import dpgd
print(dpgd.library_path)
print(dpgd.account([dpgd.Gaussian(sigma=170, count=112)], delta=1e-5).exact.value)'
      expect_out "python: the prefix's library" "^$LIB/libdpgd.so.0\$"
      expect_out "python: account" "^0\.20"
      ;;
  esac
fi

# ---- One version everywhere -----------------------------------------------------------------
export PKG_CONFIG_PATH=$LIB/pkgconfig
expect_ok "dpgd --version" "$P/bin/dpgd" --version
expect_out "dpgd --version" "^dpgd $VERSION\$"
expect_ok "pkg-config --modversion" pkg-config --modversion dpgd
expect_out "pkg-config --modversion" "^$VERSION\$"
checks=$((checks + 1))
grep -q "^#define DPGD_VERSION_STRING \"$VERSION\"" "$INC/dpgd.h" || fail "dpgd.h version is not $VERSION"
checks=$((checks + 1))
[ "$(pkg-config --variable=prefix dpgd)" = "$P" ] || fail "dpgd.pc prefix is not $P"

# ---- The documentation: the source tree's layout under share/doc/dpgd --------------------------
# Every page of docs/ and every derivation beside the code is installed; each relative link
# of an installed page resolves in the installed tree; each docs/ page an installed header
# cites is there; dpgd --help names the folder (this prefix's: the binary finds it).
DOC=$P/share/doc/dpgd
SRC=${DPGD_SOURCE_DIR:?DPGD_SOURCE_DIR is set by ctest}
for f in "$SRC"/README.md "$SRC"/docs/*.md "$SRC"/accounting/*.md "$SRC"/model/*.md "$SRC"/train/*.md; do
  checks=$((checks + 1))
  cmp -s "$f" "$DOC/${f#"$SRC"/}" || fail "not installed: share/doc/dpgd/${f#"$SRC"/}"
done
while IFS= read -r page; do
  for target in $(grep -oE '\]\([^)# ]+' "$page" | sed 's/^](//' | grep -vE '^[a-z]+:'); do
    checks=$((checks + 1))
    [ -e "$(dirname "$page")/$target" ] ||
      fail "installed ${page#"$DOC"/} links to $target, which is not installed"
  done
done < <(find "$DOC" -name '*.md')
for cited in $(grep -ohE 'docs/[A-Z_]+\.md' "$INC"/*.h | sort -u); do
  checks=$((checks + 1))
  [ -s "$DOC/$cited" ] || fail "an installed header cites $cited, not installed in share/doc/dpgd"
done
expect_ok "dpgd --help" "$P/bin/dpgd" --help
expect_out "dpgd --help names the installed documentation" "installed in $DOC/"

expect_ok "dpgd version" "$P/bin/dpgd" version
expect_out "dpgd version" "^dpgd $VERSION\$"

# ---- The man page: installed, free of groff warnings, one section per command ------------------
MAN=$P/share/man/man1/dpgd.1
checks=$((checks + 1))
if [ ! -s "$MAN" ]; then
  fail "not installed: share/man/man1/dpgd.1"
elif ! command -v groff >/dev/null || ! command -v man >/dev/null; then
  echo "note: groff or man missing (apt-get install man-db), the man page is not rendered"
else
  warn=$(groff -man -ww -z -Tutf8 "$MAN" 2>&1)
  [ -z "$warn" ] || fail "dpgd.1: groff warnings: $(echo "$warn" | head -3)"
  MANWIDTH=80 man -l "$MAN" >"$TMP/man.txt" 2>&1 || fail "man -l dpgd.1 failed"
  for cmd in $("$P/bin/dpgd" --help | sed -n '/^commands:/,/^$/s/^  \([a-z]*\) .*/\1/p'); do
    checks=$((checks + 1))
    grep -q "^   dpgd $cmd\$" "$TMP/man.txt" || fail "dpgd.1 has no section for dpgd $cmd"
  done
  checks=$((checks + 1)) # the configured prefix's folder (the page is written at build time)
  sed -n '/^SEE ALSO/,$p' "$TMP/man.txt" | tr -s ' \n' ' ' | grep -q 'installed in [^ ]*/share/doc/dpgd/' ||
    fail "dpgd.1: SEE ALSO does not name the installed documentation"
fi

# ---- The outside program, built against the prefix ------------------------------------------
# It is copied out of the source tree so that no header there can stand in for an
# installed one.
mkdir -p "$TMP/src" && cp "$HERE/outside.c" "$TMP/src/"

# run_outside NAME EXE: runs it on MNIST into its own run directory.
run_outside() {
  expect_ok "$1: run" "$2" "$MNIST" "$TMP/run-$1"
  expect_out "$1: run" "^outside: 0 failures"
  sed "s/^outside:/$1:/" "$TMP/out"
  checks=$((checks + 1))
  [ -s "$TMP/run-$1/summary.json" ] || fail "$1: no summary.json in the run directory"
}

# pkg-config, shared, with the documentation's own line (nothing added but the rpath the
# prefix needs): the program needs libdpgd.so.0 from the prefix.
# shellcheck disable=SC2046,SC2086
expect_ok "pkg-config shared: build" $CC $CFLAGS -o "$TMP/outside-pc" "$TMP/src/outside.c" \
  $(pkg-config --cflags --libs dpgd) -Wl,-rpath,"$LIB"
checks=$((checks + 1))
ldd "$TMP/outside-pc" | grep -q "libdpgd.so.0 => $LIB/libdpgd.so.0" ||
  fail "pkg-config shared: libdpgd.so.0 is not the installed one: $(ldd "$TMP/outside-pc" | grep dpgd)"
run_outside pc-shared "$TMP/outside-pc"

# pkg-config, static libdpgd (its dependencies stay shared), the documentation's line:
# the dpgd-static module must name everything libdpgd.a needs.
# shellcheck disable=SC2046,SC2086
expect_ok "pkg-config static: build" $CC $CFLAGS -o "$TMP/outside-pc-static" \
  "$TMP/src/outside.c" $(pkg-config --cflags --libs dpgd-static)
checks=$((checks + 1))
! readelf -d "$TMP/outside-pc-static" | grep -q 'libdpgd' || fail "pkg-config static: links libdpgd.so"
checks=$((checks + 1))
! readelf -d "$TMP/outside-pc-static" | grep -q 'libgslcblas' ||
  fail "pkg-config static: links libgslcblas (its sgemm would shadow OpenBLAS's)"
run_outside pc-static "$TMP/outside-pc-static"

# CMake: find_package(dpgd) from the prefix, dpgd::dpgd and dpgd::dpgd_static.
cat >"$TMP/src/CMakeLists.txt" <<'EOF'
cmake_minimum_required(VERSION 3.25)
project(outside LANGUAGES C)
find_package(dpgd 0.1 REQUIRED COMPONENTS static)
add_executable(outside_shared outside.c)
target_link_libraries(outside_shared PRIVATE dpgd::dpgd m)
add_executable(outside_static outside.c)
target_link_libraries(outside_static PRIVATE dpgd::dpgd_static m)
EOF
expect_ok "cmake project: configure" env CMAKE_PREFIX_PATH="$P" "$CMAKE" -S "$TMP/src" \
  -B "$TMP/cmake-build" -DCMAKE_C_COMPILER="$CC" -DCMAKE_C_FLAGS="$CFLAGS" \
  -DCMAKE_FIND_PACKAGE_NO_PACKAGE_REGISTRY=ON -DCMAKE_FIND_PACKAGE_NO_SYSTEM_PACKAGE_REGISTRY=ON
checks=$((checks + 1))
grep -q "^dpgd_DIR:PATH=$LIB/cmake/dpgd\$" "$TMP/cmake-build/CMakeCache.txt" ||
  fail "cmake project: dpgd not found in the prefix: $(grep dpgd_DIR "$TMP/cmake-build/CMakeCache.txt")"
expect_ok "cmake project: build" "$CMAKE" --build "$TMP/cmake-build"
checks=$((checks + 1))
! readelf -d "$TMP/cmake-build/outside_static" | grep -q 'libdpgd' ||
  fail "cmake project: dpgd::dpgd_static links libdpgd.so"
run_outside cmake-shared "$TMP/cmake-build/outside_shared"
run_outside cmake-static "$TMP/cmake-build/outside_static"

finish
