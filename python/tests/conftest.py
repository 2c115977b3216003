"""Pytest configuration: a fixed, derandomized Hypothesis profile (reproducible CI) and fixtures.

The real ``blosc2`` wheel is the interop oracle. The whole suite is budgeted to about three
minutes on two cores (dev-profile build).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import uuid
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

from .helpers import vectors_dir

settings.register_profile(
    "oxblosc-ci",
    derandomize=True,
    deadline=None,
    max_examples=40,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    print_blob=True,
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "oxblosc-ci"))


@pytest.fixture(scope="session")
def vectors() -> Path:
    d = vectors_dir()
    if not d.is_dir():
        pytest.fail(f"C-Blosc2 test vectors not found at {d}; set OXBLOSC_SHARED=/path/to/shared")
    return d


@pytest.fixture
def small_tmpfs(tmp_path: Path):
    """A 1 MiB tmpfs (needs root); skipped where it cannot be mounted."""
    if shutil.which("mount") is None or os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    d = tmp_path / f"tmpfs-{uuid.uuid4().hex[:6]}"
    d.mkdir()
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(d)], capture_output=True)
    if r.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs: {r.stderr.decode()[:200]}")
    try:
        yield d
    finally:
        subprocess.run(["umount", "-l", str(d)], check=False)  # lazy: a handle may still be open
