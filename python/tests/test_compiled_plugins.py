"""Compiled plugins (the C ABI of docs/plugins.md) from an installed package.

examples/plugin-example is pip-installed into the venv: its C library provides codec 252
(rle_c) and filter 253 (plus_one_c). Fresh processes use them by id from Python and from
the ``oxblosc`` CLI, and files cross between the two.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import oxblosc as ox
import pytest

from .helpers import REPO, install_plugin_example

DATA = np.arange(300_000, dtype=np.int64) // 5


@pytest.fixture(scope="module")
def example_installed(tmp_path_factory):
    install_plugin_example(tmp_path_factory.mktemp("plugin"))


def _python(code: str, **env) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, **env},
    )


def test_python_uses_the_compiled_codec_and_filter_by_id(example_installed, tmp_path):
    r = _python(
        f"""
        import numpy as np, oxblosc as ox
        from concurrent.futures import ThreadPoolExecutor
        data = np.arange(300_000, dtype=np.int64) // 5
        assert not {{252, 253}} & {{r["id"] for r in ox.registered_codecs() + ox.registered_filters()}}
        for nthreads in (1, 4):
            c = ox.compress2(data, typesize=8, codec=252, filters=[253, 1], nthreads=nthreads)
            assert (c[22], c[16], c[17]) == (252, 253, 1) and len(c) < data.nbytes // 4, len(c)
            assert (np.frombuffer(ox.decompress2(c, nthreads=nthreads), np.int64) == data).all()
        a = ox.asarray(data.reshape(600, 500), urlpath={str(tmp_path / "a.b2nd")!r}, mode="w",
                       cparams={{"codec": 252, "filters": [253, ox.Filter.SHUFFLE], "nthreads": 2}})
        assert (ox.open({str(tmp_path / "a.b2nd")!r})[:] == data.reshape(600, 500)).all()
        def work(t):
            d = data * (t + 1)
            c = ox.compress2(d, typesize=8, codec=252, filters=[253], nthreads=2)
            return (np.frombuffer(ox.decompress2(c, nthreads=2), np.int64) == d).all()
        with ThreadPoolExecutor(4) as pool:
            assert all(pool.map(work, range(8)))
        rows = {{(r["id"], r["name"]): r["origin"] for r in ox.registered_codecs() + ox.registered_filters()}}
        print(rows[(252, "rle_c")], "|", rows[(253, "plus_one_c")])
        """
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "package oxblosc-plugin-example | package oxblosc-plugin-example"


def _cli(args, env) -> subprocess.CompletedProcess:
    return subprocess.run(args, capture_output=True, text=True, timeout=120, env=env)


def test_cli_compresses_and_decompresses_with_the_compiled_codec(example_installed, tmp_path):
    raw = tmp_path / "data.bin"
    raw.write_bytes(DATA.tobytes())
    frame, back = tmp_path / "data.b2frame", tmp_path / "back.bin"
    # No activated venv: the console script tells the binary where its environment's plugins are.
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "OXBLOSC_PLUGIN_PATH")}
    script = Path(sys.executable).parent / "oxblosc"
    args = ["compress", "--codec", "252", "--filter", "253", "--filter", "shuffle", "--typesize", "8"]
    r = _cli([str(script), *args, str(raw), str(frame)], env)
    assert r.returncode == 0, r.stderr
    assert frame.stat().st_size < DATA.nbytes // 4
    r = _cli([str(script), "decompress", str(frame), str(back)], env)
    assert r.returncode == 0, r.stderr
    assert back.read_bytes() == raw.read_bytes()
    # The CLI's file opens in Python (the same plugins, found through entry points).
    s = ox.open(str(frame))
    assert s.cparams.codec == 252 and list(s.cparams.filters[:2]) == [253, 1]
    assert np.frombuffer(s[:], np.int64).tolist() == DATA.tolist()
    # The binary itself, in an activated venv ($VIRTUAL_ENV), finds them too ...
    from oxblosc._cli import binary_path

    back.unlink()
    r = _cli([str(binary_path()), "decompress", str(frame), str(back)], {**env, "VIRTUAL_ENV": sys.prefix})
    assert r.returncode == 0, r.stderr
    assert back.read_bytes() == raw.read_bytes()
    # ... so does a venv root on OXBLOSC_PLUGIN_PATH, and a binary installed in a venv's bin/.
    back.unlink()
    r = _cli([str(binary_path()), "decompress", str(frame), str(back)], {**env, "OXBLOSC_PLUGIN_PATH": sys.prefix})
    assert r.returncode == 0, r.stderr
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "pyvenv.cfg").write_text("home = /usr/bin\n")
    (venv / "lib" / "python3.11").mkdir(parents=True)
    site = next(Path(p) for p in sys.path if p.endswith("site-packages") and p.startswith(sys.prefix))
    (venv / "lib" / "python3.11" / "site-packages").symlink_to(site)
    shutil.copy2(binary_path(), venv / "bin" / "oxblosc")
    back.unlink()
    r = _cli([str(venv / "bin" / "oxblosc"), "decompress", str(frame), str(back)], env)
    assert r.returncode == 0, r.stderr
    assert back.read_bytes() == raw.read_bytes()
    # ... and without any of that it cannot: the error names the codec.
    r = _cli([str(binary_path()), "decompress", "-f", str(frame), str(back)], env)
    assert r.returncode != 0 and "codec 252" in r.stderr, r.stderr


def _site_with(tmp_path: Path, abi: int) -> Path:
    """A site-packages-like dir with a package declaring compiled codec 200 in a library
    built from the Rust tests' misbehaving plugin with another ABI version."""
    site = tmp_path / "site"
    (site / "badpkg").mkdir(parents=True)
    src = REPO / "crates" / "oxblosc-chunk" / "tests" / "native" / "misbehave.c"
    inc = REPO / "crates" / "oxblosc-chunk" / "include"
    cc = os.environ.get("CC", "cc")
    out = site / "badpkg" / "libbad.so"
    cmd = [cc, "-shared", "-fPIC", f"-I{inc}", f"-DABI_VERSION={abi}", str(src), "-o", str(out)]
    subprocess.run(cmd, check=True)
    info = site / "badpkg-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: badpkg\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[oxblosc.compiled_codecs]\n200 = badpkg.libbad\n")
    return site


def test_an_abi_mismatch_warns_and_the_chunk_names_library_and_id(tmp_path):
    site = _site_with(tmp_path, abi=7)
    c = bytearray(ox.compress2(np.arange(50_000, dtype=np.int64), typesize=8, codec=ox.Codec.ZSTD))
    c[2] = (c[2] & 0x1F) | (6 << 5)  # compcode 6: the codec id is in byte 22
    c[22] = 200
    (tmp_path / "c.bin").write_bytes(bytes(c))
    code = f"""
        import warnings, oxblosc as ox
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            try:
                ox.decompress2(open({str(tmp_path / "c.bin")!r}, "rb").read())
            except ox.ChunkError as e:
                print("ERROR", e)
        print("WARN", *[str(x.message) for x in w])
        """
    r = _python(code, PYTHONPATH=str(site))
    assert r.returncode == 0, r.stderr
    err = next(line for line in r.stdout.splitlines() if line.startswith("ERROR"))
    warn = next(line for line in r.stdout.splitlines() if line.startswith("WARN"))
    for text in (err, warn):
        assert "libbad.so" in text and "codec 200" in text and "ABI version 7" in text, text
    assert "loading its plugin failed" in err
    # The same through OXBLOSC_PLUGIN_PATH (no entry point on sys.path): the same message.
    r = _python(code, OXBLOSC_PLUGIN_PATH=str(site))
    assert r.returncode == 0, r.stderr
    assert "ABI version 7" in r.stdout and "libbad.so" in r.stdout, r.stdout
