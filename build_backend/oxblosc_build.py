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
import sys
from pathlib import Path

import maturin
from maturin import (  # noqa: F401  (re-exported PEP 517 hooks)
    build_sdist,
    get_requires_for_build_sdist,
)

ROOT = Path(__file__).resolve().parent.parent
EXE = "oxblosc.exe" if os.name == "nt" else "oxblosc"


def _rust_version() -> str:
    for line in (ROOT / "Cargo.toml").read_text().splitlines():
        if line.startswith("rust-version"):
            return line.split("=", 1)[1].strip().strip('"')
    return "a recent"


def _require_cargo() -> None:
    """Fail early, in one readable paragraph, when there is no Rust toolchain."""
    if shutil.which("cargo") is None:
        raise SystemExit(
            "\noxblosc: building from source needs a Rust toolchain, and `cargo` is not on PATH.\n"
            f"  Install Rust {_rust_version()} or newer (https://rustup.rs, or your distribution's "
            "`cargo` package),\n  make sure `cargo --version` works in this shell, then run `pip install .` again.\n"
        )


def _bundle_cli(release: bool) -> None:
    _require_cargo()
    cmd = ["cargo", "build", "-q", "-p", "oxblosc-cli"] + (["--release"] if release else [])
    subprocess.run(cmd, cwd=ROOT, check=True)
    target = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
    built = target / ("release" if release else "debug") / EXE
    dest = ROOT / "python" / "oxblosc" / "_bin"
    dest.mkdir(parents=True, exist_ok=True)
    shutil.copy2(built, dest / EXE)
    _strip(dest / EXE)


def _strip(binary: Path) -> None:
    """Drop symbols and debug info from the bundled binary (the release profile keeps line
    tables for backtraces; a wheel does not need them): ~28 MB -> a few MB."""
    tool = shutil.which("strip")
    if tool is None or os.name == "nt":
        print("oxblosc build: no `strip` tool; the bundled CLI binary keeps its debug info")
        return
    flags = ["-x"] if sys.platform == "darwin" else ["--strip-all"]
    if subprocess.run([tool, *flags, str(binary)]).returncode != 0:
        print("oxblosc build: `strip` failed; the bundled CLI binary keeps its debug info")


# The hooks that need cargo check for it first: without this, maturin would try to fetch a
# temporary toolchain from the internet and fail far from the cause.
def get_requires_for_build_wheel(config_settings=None):
    _require_cargo()
    return maturin.get_requires_for_build_wheel(config_settings)


def get_requires_for_build_editable(config_settings=None):
    _require_cargo()
    return maturin.get_requires_for_build_editable(config_settings)


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    _require_cargo()
    return maturin.prepare_metadata_for_build_wheel(metadata_directory, config_settings)


def prepare_metadata_for_build_editable(metadata_directory, config_settings=None):
    _require_cargo()
    return maturin.prepare_metadata_for_build_editable(metadata_directory, config_settings)


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    _bundle_cli(release=True)
    return maturin.build_wheel(wheel_directory, config_settings, metadata_directory)


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    _bundle_cli(release=True)
    return maturin.build_editable(wheel_directory, config_settings, metadata_directory)
