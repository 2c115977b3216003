"""PEP 517 build backend: maturin, plus the ``oxblosc`` command-line binary in the wheel.

maturin builds the Python extension only. ``pip install .`` should also put the ``oxblosc``
command on PATH, so before maturin packs a wheel this backend builds ``crates/oxblosc-cli``
with cargo and copies the binary to ``python/oxblosc/_bin/`` (listed in ``[tool.maturin]
include``); the ``oxblosc`` console script (``oxblosc/_cli.py``) execs it. Everything else
is maturin's own hooks, re-exported unchanged.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import maturin
from maturin import (  # noqa: F401  (re-exported PEP 517 hooks)
    build_sdist,
    get_requires_for_build_editable,
    get_requires_for_build_sdist,
    get_requires_for_build_wheel,
    prepare_metadata_for_build_editable,
    prepare_metadata_for_build_wheel,
)

ROOT = Path(__file__).resolve().parent.parent
EXE = "oxblosc.exe" if os.name == "nt" else "oxblosc"


def _bundle_cli(release: bool) -> None:
    cmd = ["cargo", "build", "-q", "-p", "oxblosc-cli"] + (["--release"] if release else [])
    subprocess.run(cmd, cwd=ROOT, check=True)
    target = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
    built = target / ("release" if release else "debug") / EXE
    dest = ROOT / "python" / "oxblosc" / "_bin"
    dest.mkdir(parents=True, exist_ok=True)
    shutil.copy2(built, dest / EXE)


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    _bundle_cli(release=True)
    return maturin.build_wheel(wheel_directory, config_settings, metadata_directory)


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    _bundle_cli(release=True)
    return maturin.build_editable(wheel_directory, config_settings, metadata_directory)
