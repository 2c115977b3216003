"""A minimal PEP 517 backend for this example: builds the wheel with zipfile.

It keeps the example installable offline without setuptools/wheel (``requires = []``).
Metadata (name, version, entry points) is read from ``pyproject.toml``. The compiled plugins
(``csrc/*.c``) are built with the C compiler (``$CC``, default ``cc``) into one shared
library inside the package, against oxblosc's ``oxblosc_plugin.h`` (found in
``$OXBLOSC_INCLUDE`` or the oxblosc repository this example sits in); the wheel is then
tagged for this platform. POSIX compilers only (``-shared -fPIC``).
"""

from __future__ import annotations

import base64
import hashlib
import os
import shlex
import subprocess
import sys
import sysconfig
import tempfile
import tomllib
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent
LIBRARY = "liboxblosc_example"


def _library_suffix() -> str:
    return ".dylib" if sys.platform == "darwin" else ".so"


def _build_library() -> bytes:
    """Compile csrc/*.c into the plugin library and return its bytes."""
    include = os.environ.get("OXBLOSC_INCLUDE") or str(ROOT.parents[1] / "crates" / "oxblosc-chunk" / "include")
    if not (Path(include) / "oxblosc_plugin.h").is_file():
        raise RuntimeError(f"oxblosc_plugin.h not found in {include}: set OXBLOSC_INCLUDE to oxblosc's include dir")
    sources = sorted(str(p) for p in (ROOT / "csrc").glob("*.c"))
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / (LIBRARY + _library_suffix())
        cc = shlex.split(os.environ.get("CC", "cc"))
        cmd = [*cc, "-O2", "-Wall", "-Wextra", "-shared", "-fPIC", "-fvisibility=hidden", f"-I{include}", *sources]
        subprocess.run([*cmd, "-o", str(out)], check=True)
        return out.read_bytes()


def _platform_tag() -> str:
    return sysconfig.get_platform().replace("-", "_").replace(".", "_")


def _project() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def _dist_info(p: dict) -> dict[str, str]:
    name = p["name"].replace("-", "_")
    meta = [f"Metadata-Version: 2.1", f"Name: {p['name']}", f"Version: {p['version']}"]
    meta += [f"Requires-Dist: {d}" for d in p.get("dependencies", [])]
    eps = []
    for group, entries in p.get("entry-points", {}).items():
        eps.append(f"[{group}]")
        eps += [f"{k} = {v}" for k, v in entries.items()]
    wheel = f"Wheel-Version: 1.0\nGenerator: plugin-example-backend\nRoot-Is-Purelib: false\nTag: py3-none-{_platform_tag()}\n"
    d = f"{name}-{p['version']}.dist-info"
    return {
        f"{d}/METADATA": "\n".join(meta) + "\n",
        f"{d}/WHEEL": wheel,
        f"{d}/entry_points.txt": "\n".join(eps) + "\n",
    }


def _record_line(path: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{path},sha256={digest},{len(data)}"


def get_requires_for_build_wheel(config_settings=None):
    return []


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    p = _project()
    name = p["name"].replace("-", "_")
    files = {str(f.relative_to(ROOT)): f.read_bytes() for f in (ROOT / name).rglob("*.py")}
    files[f"{name}/{LIBRARY}{_library_suffix()}"] = _build_library()
    files.update({k: v.encode() for k, v in _dist_info(p).items()})
    record_path = f"{name}-{p['version']}.dist-info/RECORD"
    record = [_record_line(k, v) for k, v in files.items()] + [f"{record_path},,"]
    wheel_name = f"{name}-{p['version']}-py3-none-{_platform_tag()}.whl"
    with zipfile.ZipFile(Path(wheel_directory) / wheel_name, "w", zipfile.ZIP_DEFLATED) as z:
        for k, v in files.items():
            z.writestr(k, v)
        z.writestr(record_path, "\n".join(record) + "\n")
    return wheel_name
