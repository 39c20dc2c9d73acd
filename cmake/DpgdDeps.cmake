# Finds every dependency the standard way; a missing one stops configuration with the
# Debian package that provides it.
find_package(PkgConfig)

macro(dpgd_missing what pkg)
  message(FATAL_ERROR "dpgd: ${what} not found. On Debian/Ubuntu: apt-get install ${pkg}")
endmacro()

# OpenBLAS: FindBLAS with the vendor pinned, plus the cblas.h header that goes with it
# (openblas_set_num_threads is declared there).
set(BLA_VENDOR OpenBLAS)
find_package(BLAS)
if(NOT BLAS_FOUND)
  dpgd_missing("OpenBLAS" "libopenblas-dev")
endif()
set(_openblas_hint)
if(PKG_CONFIG_FOUND)
  pkg_check_modules(PC_OPENBLAS QUIET openblas)
  set(_openblas_hint ${PC_OPENBLAS_INCLUDE_DIRS})
endif()
find_path(OPENBLAS_INCLUDE_DIR cblas.h
          HINTS ${_openblas_hint}
          PATH_SUFFIXES openblas openblas-pthread x86_64-linux-gnu/openblas-pthread)
if(NOT OPENBLAS_INCLUDE_DIR)
  dpgd_missing("OpenBLAS header cblas.h" "libopenblas-dev")
endif()
add_library(dpgd_openblas INTERFACE)
target_link_libraries(dpgd_openblas INTERFACE ${BLAS_LIBRARIES})
target_include_directories(dpgd_openblas INTERFACE ${OPENBLAS_INCLUDE_DIR})

find_package(GSL)
if(NOT GSL_FOUND)
  dpgd_missing("GSL" "libgsl-dev")
endif()
# GSL::gsl's imported target links libgslcblas, which defines cblas_sgemm too; linked
# before OpenBLAS it shadows OpenBLAS's sgemm (about 20x slower). GSL uses OpenBLAS's
# CBLAS instead (tests/model test_sgemm_is_openblas checks which sgemm is called).
set_property(TARGET GSL::gsl PROPERTY INTERFACE_LINK_LIBRARIES dpgd_openblas)

find_package(PNG)
if(NOT PNG_FOUND)
  dpgd_missing("libpng" "libpng-dev")
endif()

find_package(ZLIB)
if(NOT ZLIB_FOUND)
  dpgd_missing("zlib" "zlib1g-dev")
endif()

if(DPGD_OPENMP)
  find_package(OpenMP)
  if(NOT OpenMP_C_FOUND)
    dpgd_missing("OpenMP for C" "gcc (libgomp1), or configure with -DDPGD_OPENMP=OFF")
  endif()
endif()

if(DPGD_MPI)
  find_package(MPI COMPONENTS C)
  if(NOT MPI_C_FOUND)
    dpgd_missing("MPI for C (-DDPGD_MPI=ON)" "libopenmpi-dev openmpi-bin")
  endif()
endif()

if(NOT PKG_CONFIG_FOUND)
  dpgd_missing("pkg-config" "pkg-config")
endif()
pkg_check_modules(INIH IMPORTED_TARGET inih)
if(NOT INIH_FOUND)
  dpgd_missing("inih" "libinih-dev")
endif()

# FFTW3 (double): the scattering features' FFTs (data/scatter.c). Chosen over GSL's FFT,
# which is 1-D only, because it plans 2-D transforms of any size (36, 18, 9 here) in one
# call and runs them faster (docs/SCATTER.md: 27 against 31 us for 36 x 36, 0.4 against
# 1.4 us for 9 x 9, measured on this project's machine).
pkg_check_modules(FFTW3 IMPORTED_TARGET fftw3)
if(NOT FFTW3_FOUND)
  dpgd_missing("FFTW3" "libfftw3-dev")
endif()

# libsodium: the research streams' BLAKE2b keys (train/stream.c) and the reference their
# ChaCha20 keystream (train/chacha.c) is tested against.
pkg_check_modules(SODIUM IMPORTED_TARGET libsodium)
if(NOT SODIUM_FOUND)
  dpgd_missing("libsodium" "libsodium-dev")
endif()

if(DPGD_TESTS)
  pkg_check_modules(CMOCKA IMPORTED_TARGET cmocka)
  if(NOT CMOCKA_FOUND)
    dpgd_missing("cmocka (tests; or configure with -DDPGD_TESTS=OFF)" "libcmocka-dev")
  endif()
endif()
