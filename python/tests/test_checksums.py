"""Per-chunk checksums from Python: files written by the ``oxblosc`` CLI, verify-on-read via
``oxblosc.open(..., verify_checksums=True)``, and the ``oxblosc`` console script."""

import os
import shutil
import subprocess
import sys

import numpy as np
import oxblosc
import pytest


def _cli():
    """The console script installed next to this interpreter (the venv's bin/)."""
    return shutil.which("oxblosc", path=os.path.dirname(sys.executable))


def test_python_keeps_checksums_and_catches_damage(tmp_path):
    path = str(tmp_path / "x.b2frame")
    s = oxblosc.SChunk(chunksize=4000, urlpath=path, mode="w", cparams={"typesize": 4})
    s.enable_checksums()
    for k in range(4):
        s.append_data((np.arange(1000, dtype="i4") * (k + 1)).tobytes() if k != 2 else np.full(1000, 7, "i4").tobytes())
    assert s.checksums == "xxh3-64"
    del s
    s = oxblosc.open(path)
    assert s.verify() == 4
    chunk3 = s.get_chunk(3)
    raw = bytearray(open(path, "rb").read())
    at = raw.find(chunk3) + len(chunk3) // 2
    raw[at] ^= 0x01
    open(path, "wb").write(bytes(raw))
    s = oxblosc.open(path)
    with pytest.raises(oxblosc.ChunkError, match="checksum mismatch"):
        s.verify()
    s = oxblosc.open(path, verify_checksums=True)
    assert s.verify_checksums
    s.decompress_chunk(0)
    with pytest.raises(oxblosc.ChunkError, match="chunk 3"):
        s.decompress_chunk(3)
    s.verify_checksums = False
    s.get_chunk(3)  # no check without the option


def test_console_script_runs_the_cli(tmp_path):
    exe = _cli()
    if exe is None:
        pytest.skip("oxblosc console script not installed (make develop installs it)")
    out = subprocess.run([exe, "--help"], capture_output=True, text=True)
    assert out.returncode == 0 and "compress" in out.stdout and "verify" in out.stdout
    src = tmp_path / "d.bin"
    src.write_bytes(np.linspace(0, 1, 100_000).tobytes())
    assert subprocess.run([exe, "compress", "-q", str(src)]).returncode == 0
    s = oxblosc.open(str(src) + ".b2frame", verify_checksums=True)
    assert s.checksums == "xxh3-64"
    assert bytes(s[:]) == src.read_bytes()
    assert subprocess.run([exe, "verify", "-q", str(src) + ".b2frame"]).returncode == 0
