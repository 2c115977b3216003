"""A minimal PEP 517 backend for this pure-Python example: builds the wheel with zipfile.

It keeps the example installable offline without setuptools/wheel (``requires = []``).
Metadata (name, version, entry points) is read from ``pyproject.toml``.
"""

from __future__ import annotations

import base64
import hashlib
import tomllib
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent


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
    wheel = "Wheel-Version: 1.0\nGenerator: plugin-example-backend\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
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
    files.update({k: v.encode() for k, v in _dist_info(p).items()})
    record_path = f"{name}-{p['version']}.dist-info/RECORD"
    record = [_record_line(k, v) for k, v in files.items()] + [f"{record_path},,"]
    wheel_name = f"{name}-{p['version']}-py3-none-any.whl"
    with zipfile.ZipFile(Path(wheel_directory) / wheel_name, "w", zipfile.ZIP_DEFLATED) as z:
        for k, v in files.items():
            z.writestr(k, v)
        z.writestr(record_path, "\n".join(record) + "\n")
    return wheel_name
