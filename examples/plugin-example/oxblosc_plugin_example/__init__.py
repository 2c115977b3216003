"""Example oxblosc plugins, found by id through the package's entry points."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np


def _forward(input, output, meta, ctx):
    output.view(np.int64)[:] = input.view(np.int64) + 1


def _backward(input, output, meta, ctx):
    output.view(np.int64)[:] = input.view(np.int64) - 1


#: Filter 250: +1 on every int64 (the block size is a multiple of 8 for int64 data).
plus_one = SimpleNamespace(name="plus_one", forward=_forward, backward=_backward)


def _encode(input, output, meta, ctx):
    """Runs of equal bytes as (count, byte) pairs; 0 when that does not fit (stored raw)."""
    data = input.tobytes()
    out = bytearray()
    i = 0
    while i < len(data):
        j = i
        while j < len(data) and j - i < 255 and data[j] == data[i]:
            j += 1
        out += bytes((j - i, data[i]))
        if len(out) > output.size:
            return 0
        i = j
    output[: len(out)] = np.frombuffer(bytes(out), dtype=np.uint8)
    return len(out)


def _decode(input, output, meta, ctx):
    pairs = input.reshape(-1, 2)
    decoded = np.repeat(pairs[:, 1], pairs[:, 0])
    output[: decoded.size] = decoded
    return int(decoded.size)


#: Codec 251: byte run-length encoding.
run_length = SimpleNamespace(name="run_length", version=1, encoder=_encode, decoder=_decode)
