"""User codecs and filters registered from Python (python-blosc2's ``register_codec`` /
``register_filter``), checked against the real python-blosc2 wheel in both directions.

Every test uses its own ids: registrations are permanent for the process (as in C-Blosc2).
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
import zlib

import blosc2
import numpy as np
import oxblosc as ox
import pytest


def plus_one_fwd(input, output, meta, schunk):
    """The seed's example filter: +1 on every int64 (works in blosc2 and oxblosc)."""
    output.view(np.int64)[:] = input.view(np.int64) + 1


def plus_one_bwd(input, output, meta, schunk):
    output.view(np.int64)[:] = input.view(np.int64) - 1


def zlib_enc(input, output, meta, schunk):
    """A codec in Python: zlib at level `meta`; 0 when it does not fit (stored raw)."""
    c = zlib.compress(input.tobytes(), meta or 1)
    if len(c) > output.size:
        return 0
    output[: len(c)] = np.frombuffer(c, dtype=np.uint8)
    return len(c)


def zlib_dec(input, output, meta, schunk):
    d = zlib.decompress(input.tobytes())
    output[:] = np.frombuffer(d, dtype=np.uint8)
    return len(d)


ox.register_filter(170, plus_one_fwd, plus_one_bwd, name="plus_one")
ox.register_codec("pyzlib", 171, zlib_enc, zlib_dec, version=2)
blosc2.register_filter(170, plus_one_fwd, plus_one_bwd, name="plus_one")
blosc2.register_codec("pyzlib", 171, zlib_enc, zlib_dec, version=2)

DATA = np.arange(200_000, dtype=np.int64) * 3


@pytest.fixture
def blosc2_one_thread():
    """python-blosc2 refuses Python plugins with several threads (and opens with its global count)."""
    old = blosc2.set_nthreads(1)
    yield
    blosc2.set_nthreads(old)


@pytest.mark.parametrize("slot", range(6))
@pytest.mark.parametrize("nthreads", [1, 4])
def test_user_filter_and_codec_in_every_slot(slot, nthreads):
    filters = [0] * 6
    filters[slot] = 170
    filters[(slot + 1) % 6] = ox.Filter.SHUFFLE
    for codec in (ox.Codec.LZ4, 171):
        cp = {
            "codec": codec,
            "codec_meta": 6,
            "typesize": 8,
            "filters": filters,
            "nthreads": nthreads,
            "blocksize": 65536,
        }
        c = ox.compress2(DATA, **cp)
        assert len(c) < DATA.nbytes // 5
        assert c[16:22] == bytes(filters)
        if codec == 171:
            assert (c[2] >> 5, c[22], c[23], c[1]) == (6, 171, 6, 2)
        back = np.frombuffer(ox.decompress2(c, nthreads=nthreads), dtype=np.int64)
        np.testing.assert_array_equal(back, DATA)


@pytest.mark.parametrize("nthreads", [1, 3])
def test_schunk_with_user_plugins_opens_in_python_blosc2_and_back(tmp_path, nthreads, blosc2_one_thread):
    cparams = {"codec": 171, "codec_meta": 5, "filters": [170, ox.Filter.SHUFFLE], "typesize": 8}
    ours = tmp_path / "ours.b2frame"
    s = ox.SChunk(
        chunksize=80_000 * 8, data=DATA, urlpath=str(ours), mode="w", cparams={**cparams, "nthreads": nthreads}
    )
    assert s.nchunks == 3
    del s
    theirs = blosc2.open(str(ours), dparams={"nthreads": 1})
    np.testing.assert_array_equal(np.frombuffer(theirs[:], dtype=np.int64), DATA)
    # python-blosc2 writes (one thread: its rule for Python plugins); oxblosc reads.
    path = tmp_path / "theirs.b2frame"
    blosc2.SChunk(
        chunksize=80_000 * 8,
        data=DATA,
        urlpath=str(path),
        mode="w",
        cparams={**cparams, "nthreads": 1},
        dparams={"nthreads": 1},
    )
    back = ox.open(str(path), dparams={"nthreads": nthreads})
    np.testing.assert_array_equal(np.frombuffer(back[:], dtype=np.int64), DATA)
    # Same pipeline, same bytes (zlib and the filter are deterministic).
    for i in range(3):
        assert back.get_chunk(i) == theirs.get_chunk(i)


def test_ndarray_with_a_user_filter():
    a = ox.asarray(
        DATA.reshape(400, 500),
        chunks=(100, 500),
        blocks=(20, 500),
        cparams={"filters": [170], "typesize": 8, "nthreads": 2},
    )
    np.testing.assert_array_equal(a[:], DATA.reshape(400, 500))
    np.testing.assert_array_equal(a[123:130, 7], DATA.reshape(400, 500)[123:130, 7])


def test_ids_outside_the_user_range_and_taken_ids_are_refused():
    for bad in (0, 5, 32, 159, 256, -1):
        with pytest.raises(ValueError, match="between 160 and 255"):
            ox.register_filter(bad, plus_one_fwd, plus_one_bwd)
        with pytest.raises(ValueError, match="between 160 and 255"):
            ox.register_codec("x", bad, zlib_enc, zlib_dec)
    with pytest.raises(ValueError, match="already taken by 'plus_one'"):
        ox.register_filter(170, plus_one_fwd, plus_one_bwd)
    with pytest.raises(ValueError, match="already taken by 'pyzlib'"):
        ox.register_codec("again", 171, zlib_enc, zlib_dec)
    with pytest.raises(TypeError):
        ox.register_codec("x", 172, zlib_enc, 3)
    with pytest.raises(ValueError, match="no installed package declares filter 173"):
        ox.register_filter(173, None, None, name="plugin_example")
    rows = {r["id"]: r for r in ox.registered_codecs()}
    assert rows[171] == {"id": 171, "name": "pyzlib", "version": 2, "origin": "user"}
    assert rows[5]["name"] == "zstd" and rows[5]["origin"] == "built-in"
    assert any(r["id"] == 170 and r["name"] == "plus_one" for r in ox.registered_filters())


def _raise(input, output, meta, ctx):
    raise RuntimeError(f"boom in block {ctx.block}")


def _bad_size_enc(input, output, meta, ctx):
    return output.size + 1


def _none_enc(input, output, meta, ctx):
    return None


def _short_dec(input, output, meta, ctx):
    return output.size - 1


ox.register_filter(180, _raise, _raise, name="raising")
ox.register_filter(181, plus_one_fwd, _raise, name="raising_backward")
ox.register_codec("too_big", 182, _bad_size_enc, zlib_dec)
ox.register_codec("returns_none", 183, _none_enc, zlib_dec)
ox.register_codec("short_decoder", 184, zlib_enc, _short_dec)


@pytest.mark.parametrize("nthreads", [1, 4])
def test_failing_callbacks_are_clear_errors_for_that_chunk(tmp_path, nthreads):
    kw = {"typesize": 8, "nthreads": nthreads, "blocksize": 65536}
    with pytest.raises(ox.ChunkError, match=r"raising.*RuntimeError: boom in block"):
        ox.compress2(DATA, filters=[180], **kw)
    with pytest.raises(ox.ChunkError, match="too_big.*returned 65537, more than its output's 65536 bytes"):
        ox.compress2(DATA, codec=182, filters=[], **kw)
    with pytest.raises(ox.ChunkError, match="returns_none.*must return the number of bytes.*NoneType"):
        ox.compress2(DATA, codec=183, filters=[], **kw)
    c = ox.compress2(DATA, codec=184, filters=[], **kw)
    with pytest.raises(ox.ChunkError, match="short_decoder.*returned 65535, expected 65536"):
        ox.decompress2(c, nthreads=nthreads)
    c = ox.compress2(DATA, filters=[181], **kw)
    with pytest.raises(ox.ChunkError, match="raising_backward.*boom"):
        ox.decompress2(c, nthreads=nthreads)
    # A failed append leaves the file and the handle as they were.
    path = tmp_path / "f.b2frame"
    s = ox.SChunk(chunksize=DATA.nbytes, urlpath=str(path), mode="w", cparams={"filters": [ox.Filter.SHUFFLE], **kw})
    s.append_data(DATA)
    before = path.read_bytes()
    s.cparams = {"filters": [180], **kw}
    with pytest.raises(ox.ChunkError, match="boom"):
        s.append_data(DATA)
    assert s.nchunks == 1 and path.read_bytes() == before
    del s
    np.testing.assert_array_equal(np.frombuffer(ox.open(str(path))[:], dtype=np.int64), DATA)


def test_slow_callbacks_from_several_threads_do_not_hang_the_pool():
    # In a child process with a timeout: a deadlock would hang, not fail.
    code = textwrap.dedent(
        """
        import threading, time
        import numpy as np, oxblosc as ox
        def fwd(i, o, meta, ctx):
            time.sleep(0.002)
            o[:] = i ^ 0x5A
        ox.register_filter(249, fwd, fwd)
        data = np.arange(300_000, dtype=np.int32)
        errors = []
        def work():
            try:
                for _ in range(3):
                    c = ox.compress2(data, typesize=4, filters=[249, 1], nthreads=4, blocksize=16384)
                    assert (np.frombuffer(ox.decompress2(c, nthreads=3), np.int32) == data).all()
            except Exception as e:
                errors.append(e)
        ts = [threading.Thread(target=work) for _ in range(3)]
        [t.start() for t in ts]
        [t.join() for t in ts]
        print("ok", errors)
        """
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "ok []"


def test_reading_ids_nobody_registered_names_them(tmp_path, blosc2_one_thread):
    # python-blosc2 writes with a user filter oxblosc does not have, and with NDLZ.
    blosc2.register_filter(190, plus_one_fwd, plus_one_bwd, name="only_in_blosc2")
    path = tmp_path / "user.b2frame"
    blosc2.SChunk(
        chunksize=DATA.nbytes,
        data=DATA,
        urlpath=str(path),
        mode="w",
        cparams={"filters": [190], "typesize": 8, "nthreads": 1},
        dparams={"nthreads": 1},
    )
    with pytest.raises(ox.ChunkError, match=r"filter 190 is a user-defined filter.*register_filter"):
        ox.open(str(path))[:]
    c = blosc2.compress2(DATA, typesize=8, codec=blosc2.Codec.ZSTD)
    c = bytearray(c)
    c[2] = (c[2] & 0x1F) | (6 << 5)
    # NDLZ and ZFP (32-35) are built in now.
    for cid, name, provider in [(36, "openhtj2k", "blosc2-openhtj2k"), (37, "grok", "blosc2-grok")]:
        c[22] = cid
        with pytest.raises(ox.ChunkError, match=rf"codec {cid} \({name}\) is not available.*{provider}"):
            ox.decompress2(bytes(c))


def test_installed_plugin_package_is_loaded_by_id_on_first_need(tmp_path, blosc2_one_thread):
    """examples/plugin-example, installed into the venv, provides filter 250 and codec 251
    through entry points; a fresh process uses them by id without registering anything."""
    from .helpers import install_plugin_example

    install_plugin_example(tmp_path)
    # python-blosc2 writes a file with the same filter, registered there by hand.
    try:
        blosc2.register_filter(250, plus_one_fwd, plus_one_bwd, name="plus_one")
    except ValueError:
        pass  # already registered in this process
    path = tmp_path / "theirs.b2frame"
    blosc2.SChunk(
        chunksize=DATA.nbytes // 2,
        data=DATA,
        urlpath=str(path),
        mode="w",
        cparams={"filters": [250, ox.Filter.SHUFFLE], "typesize": 8, "nthreads": 1},
        dparams={"nthreads": 1},
    )
    code = textwrap.dedent(
        f"""
        import numpy as np, oxblosc as ox
        data = np.arange(200_000, dtype=np.int64) * 3
        before = {{r["id"] for r in ox.registered_filters() + ox.registered_codecs()}}
        assert 250 not in before and 251 not in before
        ox.register_codec("run_length", 251, None, None)  # python-blosc2's dynamic-plugin call
        assert 251 in {{r["id"] for r in ox.registered_codecs()}}
        c = ox.compress2(data, typesize=8, filters=[250, 1], codec=251, nthreads=3)
        assert (c[16], c[17], c[22]) == (250, 1, 251)
        assert (np.frombuffer(ox.decompress2(c, nthreads=2), np.int64) == data).all()
        assert (np.frombuffer(ox.open({str(path)!r})[:], np.int64) == data).all()
        rows = {{r["id"]: r for r in ox.registered_filters() + ox.registered_codecs()}}
        print(rows[250]["name"], rows[250]["origin"], rows[251]["name"], rows[251]["origin"])
        """
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == [
        "plus_one",
        "package",
        "oxblosc-plugin-example",
        "run_length",
        "package",
        "oxblosc-plugin-example",
    ]
