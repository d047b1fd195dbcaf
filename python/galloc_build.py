"""galloc_build: the PEP 517 build backend of the galloc Python package.

It writes the wheel itself with zipfile: the package is pure Python plus three
prebuilt shared libraries, so setuptools and wheel (which a fresh Debian 12
venv lacks, and which cannot be fetched offline) are not needed. The
libraries come from Bazel's output (`./bazelw build --config=opt //:python_lib`), or from
the directory GALLOC_LIB_DIR names. The wheel is tagged py3-none-<platform>:
it holds native code for this machine. The console commands of
pyproject.toml's [project.scripts] go into entry_points.txt, from which pip
writes the `galloc` script.
"""
import base64
import hashlib
import io
import os
import re
import sysconfig
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
NAME = "galloc"
SUMMARY = ("PyTorch's CUDA caching allocator as a C library, from Python: galloc.Allocator, galloc.torch and "
           "trace analysis (galloc.replay, galloc.fit)")
REQUIRES_PYTHON = ">=3.10"
# Each library the package carries, and where //:python_lib builds it.
LIBS = {"libgalloc.so": "packaging", "libgalloc_torch.so": "torch_plugin", "libgalloc_tools.so": "tools/lib"}
PACKAGE_DATA = ("_torch_oom.cpp",)


def _version():
    with open(os.path.join(HERE, os.pardir, "packaging", "VERSION"), encoding="utf-8") as f:
        return f.read().strip()


def _tag():
    return "py3-none-" + sysconfig.get_platform().replace("-", "_").replace(".", "_")


def _metadata():
    return (f"Metadata-Version: 2.1\nName: {NAME}\nVersion: {_version()}\nSummary: {SUMMARY}\n"
            f"Requires-Python: {REQUIRES_PYTHON}\n")


def _scripts():
    """pyproject.toml's [project.scripts] as {command: "module:function"}: the
    table's `name = "value"` lines, read by hand (tomllib is Python >= 3.11;
    the package builds on 3.10's standard library)."""
    with open(os.path.join(HERE, "pyproject.toml"), encoding="utf-8") as f:
        text = f.read()
    table = re.search(r"^\[project\.scripts\]\n(.*?)(?=^\[|\Z)", text, re.M | re.S)
    return dict(re.findall(r'^([\w.-]+)\s*=\s*"([^"]+)"', table.group(1), re.M)) if table else {}


def _entry_points():
    """entry_points.txt: the console commands."""
    return "[console_scripts]\n" + "".join(f"{name} = {target}\n" for name, target in _scripts().items())


def _files():
    """(path in the wheel, bytes) of every file the package installs."""
    pkg = os.path.join(HERE, NAME)
    for name in sorted(os.listdir(pkg)):
        if name.endswith(".py") or name in PACKAGE_DATA:
            with open(os.path.join(pkg, name), "rb") as f:
                yield f"{NAME}/{name}", f.read()
    for lib, bazel_dir in LIBS.items():
        d = os.environ.get("GALLOC_LIB_DIR") or os.path.join(HERE, os.pardir, "bazel-bin", bazel_dir)
        path = os.path.join(d, lib)
        if not os.path.isfile(path):
            raise RuntimeError(f"galloc: {os.path.normpath(path)} not found: run `./bazelw build --config=opt //:python_lib` "
                               "in the repository first (or set GALLOC_LIB_DIR)")
        with open(path, "rb") as f:
            yield f"{NAME}/_lib/{lib}", f.read()


def _dist_info():
    return f"{NAME}-{_version()}.dist-info"


def _write_dist_info(directory):
    d = os.path.join(directory, _dist_info())
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "METADATA"), "w", encoding="utf-8") as f:
        f.write(_metadata())
    with open(os.path.join(d, "entry_points.txt"), "w", encoding="utf-8") as f:
        f.write(_entry_points())
    return _dist_info()


# ---- PEP 517 hooks ----

def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    return _write_dist_info(metadata_directory)


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    name = f"{NAME}-{_version()}-{_tag()}.whl"
    info = _dist_info()
    entries = list(_files()) + [
        (f"{info}/METADATA", _metadata().encode()),
        (f"{info}/WHEEL", f"Wheel-Version: 1.0\nGenerator: galloc_build\nRoot-Is-Purelib: false\nTag: {_tag()}\n"
         .encode()),
        (f"{info}/top_level.txt", f"{NAME}\n".encode()),
        (f"{info}/entry_points.txt", _entry_points().encode()),
    ]
    record = io.StringIO()
    with zipfile.ZipFile(os.path.join(wheel_directory, name), "w", zipfile.ZIP_DEFLATED) as z:
        for path, data in entries:
            info_z = zipfile.ZipInfo(path, date_time=(1980, 1, 1, 0, 0, 0))
            info_z.external_attr = (0o755 if path.endswith(".so") else 0o644) << 16
            info_z.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(info_z, data)
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            record.write(f"{path},sha256={digest},{len(data)}\n")
        record.write(f"{info}/RECORD,,\n")
        z.writestr(zipfile.ZipInfo(f"{info}/RECORD", date_time=(1980, 1, 1, 0, 0, 0)), record.getvalue())
    return name


def build_sdist(sdist_directory, config_settings=None):
    raise RuntimeError("galloc: no sdist: the package carries libraries built by Bazel; build a wheel")
