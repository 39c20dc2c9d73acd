"""dpgd_build: the PEP 517 build backend of `pip install .` (pyproject.toml).

It needs nothing but the standard library, so that `pip install .` works offline with
pip's build isolation (a backend such as setuptools or scikit-build-core would first be
downloaded into the isolated environment; Debian 12 has no scikit-build-core). It
builds libdpgd with CMake (target dpgd_shared, in a temporary build folder, or in
DPGD_WHEEL_BUILD_DIR when that is set) and writes a wheel holding the package
python/dpgd with the library inside it (dpgd/libdpgd.so.0, found first by
dpgd/_lib.py). The library links the system's OpenBLAS, GSL, libpng, zlib and inih
(cmake/deps.sh installs them), so the wheel is for this platform; the package calls the
library through ctypes, so it does not depend on the Python version (tag py3-none).
"""

import base64
import hashlib
import os
import re
import shutil
import subprocess
import sysconfig
import tarfile
import tempfile
import zipfile

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
NAME = "dpgd"
SUMMARY = ("Differentially private gradient descent with individual privacy filtering "
           "and an exact privacy accountant (bindings of libdpgd)")


def _version():
    with open(os.path.join(ROOT, "CMakeLists.txt")) as f:
        m = re.search(r"project\(dpgd VERSION ([0-9.]+)", f.read())
    if not m:
        raise RuntimeError("dpgd_build: no project(dpgd VERSION ...) in CMakeLists.txt")
    return m.group(1)


def _metadata():
    return ("Metadata-Version: 2.1\nName: %s\nVersion: %s\nSummary: %s\n"
            "License: GPL-3.0-or-later\nRequires-Python: >=3.8\n"
            "Provides-Extra: arrays\nRequires-Dist: numpy; extra == \"arrays\"\n"
            % (NAME, _version(), SUMMARY))


def _tag():
    plat = sysconfig.get_platform().replace("-", "_").replace(".", "_")
    return "py3-none-" + plat


def _run(cmd):
    print("dpgd_build: " + " ".join(cmd), flush=True)
    subprocess.run(cmd, check=True)


def _build_library(build_dir):
    cmake = shutil.which("cmake")
    if not cmake:
        raise RuntimeError("dpgd_build: cmake is needed (apt-get install cmake; the other "
                           "build dependencies: . cmake/deps.sh && dpgd_install_deps)")
    _run([cmake, "-S", ROOT, "-B", build_dir, "-DCMAKE_BUILD_TYPE=Release",
          "-DDPGD_TESTS=OFF", "-DDPGD_FAULT_INJECTION=OFF"])
    _run([cmake, "--build", build_dir, "--target", "dpgd_shared",
          "-j", str(os.cpu_count() or 1)])
    lib = os.path.join(build_dir, "lib", "libdpgd.so.0")
    if not os.path.exists(lib):
        raise RuntimeError("dpgd_build: the build made no %s" % lib)
    return os.path.realpath(lib)


def _record_line(arcname, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
    return "%s,sha256=%s,%d" % (arcname, digest.decode(), len(data))


def _package_files():
    pkg = os.path.join(ROOT, "python", NAME)
    for name in sorted(os.listdir(pkg)):
        if name.endswith(".py"):
            yield os.path.join(pkg, name), NAME + "/" + name


def _write_wheel(path, lib):
    dist = "%s-%s.dist-info" % (NAME, _version())
    files = [(arc, open(src, "rb").read()) for src, arc in _package_files()]
    files.append((NAME + "/libdpgd.so.0", open(lib, "rb").read()))
    files.append((dist + "/METADATA", _metadata().encode()))
    files.append((dist + "/WHEEL", ("Wheel-Version: 1.0\nGenerator: dpgd_build\n"
                                    "Root-Is-Purelib: false\nTag: %s\n" % _tag()).encode()))
    files.append((dist + "/LICENSE", open(os.path.join(ROOT, "LICENSE"), "rb").read()))
    record = [_record_line(a, d) for a, d in files] + [dist + "/RECORD,,"]
    files.append((dist + "/RECORD", ("\n".join(record) + "\n").encode()))
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for arc, data in files:
            info = zipfile.ZipInfo(arc, date_time=(2020, 1, 1, 0, 0, 0))
            info.external_attr = (0o755 if arc.endswith(".so.0") else 0o644) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(info, data)


# ---- PEP 517 hooks ------------------------------------------------------------------------

def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    name = "%s-%s-%s.whl" % (NAME, _version(), _tag())
    build_dir = os.environ.get("DPGD_WHEEL_BUILD_DIR")
    tmp = None
    if not build_dir:
        tmp = tempfile.mkdtemp(prefix="dpgd-wheel-")
        build_dir = tmp
    try:
        lib = _build_library(build_dir)
        _write_wheel(os.path.join(wheel_directory, name), lib)
    finally:
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)
    return name


def build_sdist(sdist_directory, config_settings=None):
    """The tracked files of the git checkout (an sdist needs the C sources too)."""
    try:
        out = subprocess.run(["git", "-C", ROOT, "ls-files", "-z"], check=True,
                             capture_output=True).stdout
    except (OSError, subprocess.CalledProcessError):
        raise RuntimeError("dpgd_build: an sdist is made from a git checkout of dpgd")
    base = "%s-%s" % (NAME, _version())
    name = base + ".tar.gz"
    with tarfile.open(os.path.join(sdist_directory, name), "w:gz") as t:
        for rel in sorted(p for p in out.decode().split("\0") if p):
            t.add(os.path.join(ROOT, rel), arcname=base + "/" + rel, recursive=False)
        meta = _metadata().encode()
        info = tarfile.TarInfo(base + "/PKG-INFO")
        info.size = len(meta)
        import io
        t.addfile(info, io.BytesIO(meta))
    return name
