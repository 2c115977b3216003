"""The README's ```bash and ```python blocks run top to bottom, as written, in one directory.

Only the input files the examples name are made up front (``data.bin``, ``temps.f32``,
``array.npy``, ``more.bin``). A block preceded by ``<!-- readme-test: skip ... -->`` is not
run (the Quick start block: it is how this test itself gets run).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np

README = Path(__file__).resolve().parents[2] / "README.md"
SKIP = "<!-- readme-test: skip"


def blocks(text: str) -> list[tuple[str, str, int]]:
    """(language, code, line) of each ```bash / ```python block not marked to skip."""
    out = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        m = re.match(r"^```(bash|python)\s*$", lines[i])
        if not m:
            i += 1
            continue
        start = i
        j = i + 1
        while j < len(lines) and lines[j] != "```":
            j += 1
        marked = any(lines[k].startswith(SKIP) for k in range(max(0, start - 2), start))
        if not marked:
            out.append((m.group(1), "\n".join(lines[start + 1 : j]) + "\n", start + 1))
        i = j + 1
    return out


def make_inputs(d: Path) -> None:
    rng = np.random.default_rng(0)
    (np.cumsum(rng.normal(size=600_000)) * 10).astype("<f8").tofile(d / "data.bin")
    (20 + np.sin(np.arange(300_000) / 500) * 5).astype("<f4").tofile(d / "temps.f32")
    np.save(d / "array.npy", np.asfortranarray(rng.random((300, 200))))
    (np.arange(100_000) * 0.5).astype("<f8").tofile(d / "more.bin")


def test_readme_blocks_parse():
    found = blocks(README.read_text())
    langs = [lang for lang, _, _ in found]
    assert "bash" in langs and "python" in langs, found
    assert not any("make demo" in code for _, code, _ in found), "the Quick start block is run"


def test_readme_blocks_run_top_to_bottom(tmp_path):
    make_inputs(tmp_path)
    env = dict(os.environ)
    # The venv's `oxblosc` console script (the bundled binary) comes first on PATH.
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    for lang, code, line in blocks(README.read_text()):
        cmd = ["bash", "-euo", "pipefail", "-c", code] if lang == "bash" else [sys.executable, "-c", code]
        r = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, f"README.md line {line} ({lang}) failed:\n{code}\n--- stderr:\n{r.stderr[-3000:]}"
