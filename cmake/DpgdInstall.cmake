# DpgdInstall.cmake -- what `cmake --install` puts under a prefix: libdpgd (shared and
# static, one library made of the objects of the internal libraries), the public headers
# and the umbrella <dpgd/dpgd.h>, dpgd.pc, the CMake package (dpgd::dpgd), the dpgd
# binary, its man page, the licence and the changelog. Included by the top-level
# CMakeLists.txt after every library folder; it names the internal libraries by target
# and finds the public headers by name, so that it does not depend on the source layout.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

# The internal libraries that make up libdpgd, leaf first.
set(DPGD_INTERNAL_LIBS dpgd_core dpgd_accounting dpgd_data dpgd_model dpgd_trainlib)
# The public header of each library folder (STYLE.md 2), in the order the umbrella header
# includes them; every header one of them includes with quotes must be in this list.
set(DPGD_PUBLIC_HEADERS dpgd_core.h dpgd_error.h dpgd_accounting.h dpgd_data.h
    dpgd_model.h dpgd_config.h dpgd_queries.h dpgd_audit.h dpgd_train.h
    dpgd_dgauss.h)

# ---- libdpgd: the same objects as the internal libraries, position independent --------
set(_dpgd_objects)
set(_dpgd_header_dirs)
foreach(lib IN LISTS DPGD_INTERNAL_LIBS)
  if(NOT TARGET ${lib})
    message(FATAL_ERROR "dpgd install: internal library target ${lib} does not exist; "
                        "update DPGD_INTERNAL_LIBS in cmake/DpgdInstall.cmake")
  endif()
  set_property(TARGET ${lib} PROPERTY POSITION_INDEPENDENT_CODE ON)
  list(APPEND _dpgd_objects $<TARGET_OBJECTS:${lib}>)
  get_target_property(_dir ${lib} SOURCE_DIR)
  list(APPEND _dpgd_header_dirs ${_dir})
endforeach()

# What the objects need at link time. The shared library records it (DT_NEEDED); the
# static one passes it on through dpgd.pc (Libs.private, Requires.private) and the CMake
# package (dpgd::dpgd_static). GSL::gsl links OpenBLAS's CBLAS, not libgslcblas
# (cmake/DpgdDeps.cmake).
set(_dpgd_deps dpgd_openblas GSL::gsl PNG::PNG ZLIB::ZLIB PkgConfig::INIH PkgConfig::SODIUM
    PkgConfig::FFTW3
    Threads::Threads m)
if(DPGD_OPENMP)
  list(APPEND _dpgd_deps OpenMP::OpenMP_C)
endif()
find_package(Threads REQUIRED)

add_library(dpgd_shared SHARED ${_dpgd_objects})
add_library(dpgd_static STATIC ${_dpgd_objects})
add_dependencies(dpgd_shared ${DPGD_INTERNAL_LIBS})
add_dependencies(dpgd_static ${DPGD_INTERNAL_LIBS})
set_target_properties(dpgd_shared PROPERTIES
  OUTPUT_NAME dpgd EXPORT_NAME dpgd LINKER_LANGUAGE C
  VERSION ${PROJECT_VERSION} SOVERSION ${PROJECT_VERSION_MAJOR}
  LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/lib)
set_target_properties(dpgd_static PROPERTIES
  OUTPUT_NAME dpgd EXPORT_NAME dpgd_static LINKER_LANGUAGE C
  ARCHIVE_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/lib)
target_link_libraries(dpgd_shared PRIVATE ${_dpgd_deps})
# The version script (made below from the public headers) exports exactly the functions
# they declare: the helpers the library folders share between their files stay local.
target_link_options(dpgd_shared PRIVATE
                    LINKER:--version-script=${CMAKE_BINARY_DIR}/libdpgd.map)
set_property(TARGET dpgd_shared APPEND PROPERTY LINK_DEPENDS ${CMAKE_BINARY_DIR}/libdpgd.map)
# A dependency missing from the list above fails the build here, not in a user's link.
# (Sanitizer runtimes are resolved by the executable, so not with them.)
if(NOT DPGD_SANITIZE AND NOT DPGD_FUZZ)
  target_link_options(dpgd_shared PRIVATE LINKER:--no-undefined)
endif()
# The static library's dependencies, as the installed package names them (dpgdConfig).
target_link_libraries(dpgd_static INTERFACE $<INSTALL_INTERFACE:dpgd::dpgd_static_deps>)

# ---- Public headers and the umbrella header ---------------------------------------------
set(_dpgd_headers)
set(DPGD_UMBRELLA_INCLUDES "")
foreach(h IN LISTS DPGD_PUBLIC_HEADERS)
  unset(_path)
  foreach(dir IN LISTS _dpgd_header_dirs)
    if(EXISTS ${dir}/${h})
      set(_path ${dir}/${h})
      break()
    endif()
  endforeach()
  if(NOT _path)
    message(FATAL_ERROR "dpgd install: public header ${h} is in none of the folders of "
                        "${DPGD_INTERNAL_LIBS}")
  endif()
  # A quoted include of a header that is not installed would break outside programs.
  file(STRINGS ${_path} _incs REGEX "^[ \t]*#[ \t]*include[ \t]*\"")
  foreach(line IN LISTS _incs)
    string(REGEX REPLACE ".*\"([^\"]+)\".*" "\\1" inc "${line}")
    if(NOT inc IN_LIST DPGD_PUBLIC_HEADERS)
      message(FATAL_ERROR "dpgd install: public header ${h} includes \"${inc}\", which is "
                          "not in DPGD_PUBLIC_HEADERS (cmake/DpgdInstall.cmake)")
    endif()
  endforeach()
  list(APPEND _dpgd_headers ${_path})
  string(APPEND DPGD_UMBRELLA_INCLUDES "#include \"${h}\"\n")
  # Every dpgd_ name followed by "(" is a function the header declares (types and
  # macros are upper case or not followed by a parenthesis).
  file(READ ${_path} _text)
  string(REGEX MATCHALL "dpgd_[a-z0-9_]+[ \t\n]*\\(" _decls "${_text}")
  foreach(d IN LISTS _decls)
    string(REGEX REPLACE "[ \t\n]*\\($" "" d "${d}")
    list(APPEND _dpgd_api ${d})
  endforeach()
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${_path})
endforeach()
list(REMOVE_DUPLICATES _dpgd_api)
list(SORT _dpgd_api)
list(JOIN _dpgd_api ";\n    " _dpgd_api_text)
configure_file(${CMAKE_CURRENT_LIST_DIR}/libdpgd.map.in ${CMAKE_BINARY_DIR}/libdpgd.map @ONLY)
configure_file(${CMAKE_CURRENT_LIST_DIR}/dpgd.h.in ${CMAKE_BINARY_DIR}/include/dpgd/dpgd.h
               @ONLY)
install(FILES ${CMAKE_BINARY_DIR}/include/dpgd/dpgd.h ${_dpgd_headers}
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/dpgd)

# ---- Libraries, binary and the CMake package ---------------------------------------------
install(TARGETS dpgd_shared EXPORT dpgdTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(TARGETS dpgd_static EXPORT dpgdStaticTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(TARGETS dpgd RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})

set(_dpgd_cmakedir ${CMAKE_INSTALL_LIBDIR}/cmake/dpgd)
install(EXPORT dpgdTargets NAMESPACE dpgd:: DESTINATION ${_dpgd_cmakedir})
install(EXPORT dpgdStaticTargets NAMESPACE dpgd:: DESTINATION ${_dpgd_cmakedir})
configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/dpgdConfig.cmake.in
  ${CMAKE_BINARY_DIR}/dpgdConfig.cmake INSTALL_DESTINATION ${_dpgd_cmakedir})
# 0.x: a minor release may change the API, so only the same major.minor is compatible.
write_basic_package_version_file(${CMAKE_BINARY_DIR}/dpgdConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_BINARY_DIR}/dpgdConfig.cmake ${CMAKE_BINARY_DIR}/dpgdConfigVersion.cmake
        DESTINATION ${_dpgd_cmakedir})

# ---- pkg-config ---------------------------------------------------------------------------
# Requires.private names the dependencies that ship a .pc file; GSL goes in Libs.private as
# -lgsl alone, because gsl.pc adds -lgslcblas, whose sgemm would shadow OpenBLAS's.
set(DPGD_PC_REQUIRES_PRIVATE "openblas zlib libpng inih libsodium fftw3")
set(_libs gsl)
if(DPGD_OPENMP)
  list(APPEND _libs ${OpenMP_C_LIB_NAMES})
endif()
list(APPEND _libs pthread m)
list(REMOVE_DUPLICATES _libs)
list(TRANSFORM _libs PREPEND "-l")
string(JOIN " " DPGD_PC_LIBS_PRIVATE ${_libs})
foreach(dir IN ITEMS LIBDIR INCLUDEDIR)
  if(IS_ABSOLUTE "${CMAKE_INSTALL_${dir}}")
    set(DPGD_PC_${dir} "${CMAKE_INSTALL_${dir}}")
  else()
    set(DPGD_PC_${dir} "\${prefix}/${CMAKE_INSTALL_${dir}}")
  endif()
endforeach()
# The prefix is the one given at install time (cmake --install --prefix P), so the file
# is configured twice: here with everything else, then by the install step.
set(DPGD_PC_PREFIX "@DPGD_PC_PREFIX@")
foreach(pc IN ITEMS dpgd dpgd-static)
  configure_file(${CMAKE_CURRENT_LIST_DIR}/${pc}.pc.in ${CMAKE_BINARY_DIR}/${pc}.pc.in @ONLY)
  install(CODE "
    set(DPGD_PC_PREFIX \"\${CMAKE_INSTALL_PREFIX}\")
    configure_file(\"${CMAKE_BINARY_DIR}/${pc}.pc.in\" \"${CMAKE_BINARY_DIR}/${pc}.pc\" @ONLY)")
  install(FILES ${CMAKE_BINARY_DIR}/${pc}.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
endforeach()

# ---- Man page: the text of `dpgd --help` and of every `dpgd CMD --help`, in roff ------------
if(NOT CMAKE_CROSSCOMPILING)
  add_custom_command(
    OUTPUT ${CMAKE_BINARY_DIR}/dpgd.1
    COMMAND ${CMAKE_COMMAND} -DDPGD=$<TARGET_FILE:dpgd> -DOUT=${CMAKE_BINARY_DIR}/dpgd.1
            -DVERSION=${PROJECT_VERSION} -P ${CMAKE_CURRENT_LIST_DIR}/DpgdMan.cmake
    DEPENDS dpgd ${CMAKE_CURRENT_LIST_DIR}/DpgdMan.cmake
    COMMENT "dpgd man page from dpgd --help" VERBATIM)
  add_custom_target(dpgd_man ALL DEPENDS ${CMAKE_BINARY_DIR}/dpgd.1)
  install(FILES ${CMAKE_BINARY_DIR}/dpgd.1 DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
endif()

# ---- The Python package, into the prefix's site-packages ---------------------------------
# PREFIX/lib/python3.X/site-packages/dpgd (the posix_prefix scheme's purelib, relative to
# the prefix); dpgd/_lib.py finds PREFIX/lib/libdpgd.so.0 from there. Users add that
# folder to PYTHONPATH when the prefix is not one the interpreter searches.
option(DPGD_PYTHON_INSTALL "cmake --install also installs the Python package" ON)
if(DPGD_PYTHON_INSTALL)
  find_package(Python3 COMPONENTS Interpreter)
  if(Python3_FOUND)
    execute_process(COMMAND ${Python3_EXECUTABLE} -c
      "import sysconfig; print(sysconfig.get_path('purelib', 'posix_prefix', vars={'base': '', 'platbase': ''}).lstrip('/'))"
      OUTPUT_VARIABLE _site OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE _rc)
  endif()
  if(Python3_FOUND AND _rc EQUAL 0 AND _site)
    set(DPGD_PYTHON_SITEDIR ${_site} CACHE STRING
        "Where cmake --install puts the Python package dpgd, relative to the prefix")
    install(DIRECTORY ${CMAKE_SOURCE_DIR}/python/dpgd DESTINATION ${DPGD_PYTHON_SITEDIR}
            FILES_MATCHING PATTERN "*.py" PATTERN "__pycache__" EXCLUDE)
  else()
    message(STATUS "dpgd: no python3: cmake --install leaves the Python package out")
  endif()
endif()

install(FILES ${CMAKE_SOURCE_DIR}/LICENSE ${CMAKE_SOURCE_DIR}/CHANGELOG.md
        ${CMAKE_SOURCE_DIR}/README.md DESTINATION ${CMAKE_INSTALL_DOCDIR})
# The documentation keeps the source tree's layout under DOCDIR, so that its relative
# links resolve and the installed headers' "docs/MATH.md" is found under DOCDIR: the
# topic pages, the derivations beside the code, and the figures the pages show.
install(DIRECTORY ${CMAKE_SOURCE_DIR}/docs DESTINATION ${CMAKE_INSTALL_DOCDIR}
        FILES_MATCHING PATTERN "*.md")
foreach(dir accounting model train)
  file(GLOB _dpgd_derivations ${CMAKE_SOURCE_DIR}/${dir}/*.md)
  install(FILES ${_dpgd_derivations} DESTINATION ${CMAKE_INSTALL_DOCDIR}/${dir})
endforeach()
install(DIRECTORY ${CMAKE_SOURCE_DIR}/configs/paper/figures
        DESTINATION ${CMAKE_INSTALL_DOCDIR}/configs/paper FILES_MATCHING PATTERN "*.png")
