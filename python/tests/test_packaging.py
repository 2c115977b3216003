"""A newcomer's packaging paths: no Rust toolchain, stripped wheels, missing test data."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _path_without_cargo(tmp_path: Path) -> str:
    """A PATH holding only the tools the backend's import needs (python), no cargo."""
    d = tmp_path / "bin"
    d.mkdir()
    (d / "python3").symlink_to(sys.executable)
    return str(d)


@pytest.mark.parametrize("hook", ["prepare_metadata_for_build_wheel", "get_requires_for_build_wheel", "build_wheel"])
def test_build_without_cargo_says_what_is_missing(tmp_path, hook):
    code = (
        "import sys; sys.path.insert(0, 'build_backend'); import oxblosc_build as b; "
        f"b.{hook}(*([{str(tmp_path)!r}] if {hook!r} != 'get_requires_for_build_wheel' else []))"
    )
    env = {"PATH": _path_without_cargo(tmp_path), "HOME": str(tmp_path)}
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode != 0
    msg = r.stdout + r.stderr
    assert "needs a Rust toolchain" in msg and "cargo" in msg and "rustup.rs" in msg, msg
    assert "Traceback" not in msg, msg


def elf_sections(path: Path) -> set[str]:
    """Section names of a 64-bit little-endian ELF file."""
    b = path.read_bytes()
    assert b[:4] == b"\x7fELF" and b[4] == 2 and b[5] == 1, "ELF64 LE expected"
    shoff = int.from_bytes(b[0x28:0x30], "little")
    shentsize, shnum, shstrndx = (int.from_bytes(b[o : o + 2], "little") for o in (0x3A, 0x3C, 0x3E))
    headers = [b[shoff + k * shentsize : shoff + (k + 1) * shentsize] for k in range(shnum)]
    strtab = headers[shstrndx]
    str_off = int.from_bytes(strtab[0x18:0x20], "little")
    names = set()
    for h in headers:
        at = str_off + int.from_bytes(h[0:4], "little")
        names.add(b[at : b.index(b"\0", at)].decode())
    return names


@pytest.mark.skipif(sys.platform != "linux", reason="ELF")
def test_wheels_are_stripped(tmp_path):
    # The extension: maturin strips it when asked in pyproject.toml.
    conf = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert conf["tool"]["maturin"].get("strip") is True
    # The bundled CLI: the backend strips the copy it puts in the wheel.
    if shutil.which("strip") is None:
        pytest.skip("no strip tool")
    built = [p for p in (ROOT / "target" / d / "oxblosc" for d in ("debug", "release")) if p.exists()]
    if not built:
        pytest.skip("no CLI built under target/ (make develop)")
    exe = tmp_path / "oxblosc"
    shutil.copy2(built[0], exe)
    assert ".symtab" in elf_sections(exe), "cargo's own build keeps symbols: nothing to check"
    sys.path.insert(0, str(ROOT / "build_backend"))
    try:
        import oxblosc_build
    finally:
        sys.path.pop(0)
    before = exe.stat().st_size
    oxblosc_build._strip(exe)
    names = elf_sections(exe)
    assert ".symtab" not in names and ".debug_info" not in names, names
    assert exe.stat().st_size < before
    assert subprocess.run([str(exe), "--version"], capture_output=True).returncode == 0


def test_make_test_without_shared_says_what_it_needs(tmp_path):
    if shutil.which("make") is None:
        pytest.skip("no make")
    missing = tmp_path / "no-shared"
    r = subprocess.run(
        ["make", "-s", "check-shared", f"SHARED={missing}"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "MAKEFLAGS": ""},
    )
    assert r.returncode == 2, r.stdout + r.stderr
    assert "needs the shared test data" in r.stdout and str(missing) in r.stdout, r.stdout
    # `make test` runs that check before building anything.
    r = subprocess.run(["make", "-n", "test", f"SHARED={missing}"], cwd=ROOT, capture_output=True, text=True)
    first = [line for line in r.stdout.splitlines() if line.strip()][0]
    assert "vectors/c-blosc2-compat" in first, r.stdout
