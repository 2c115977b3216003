"""The ``oxblosc`` console script: runs the command-line binary bundled with the package.

The CLI is the Rust binary of ``crates/oxblosc-cli`` (the Python package does not link it);
``make develop`` / ``make develop-release`` build it and place it in ``oxblosc/_bin/``. This shim
execs it with the same arguments, so exit codes and output are the binary's own. It appends
this environment's site-packages to ``OXBLOSC_PLUGIN_PATH``, so the binary finds the compiled
plugins of packages installed here (docs/plugins.md) even when the venv is not activated.
"""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
from pathlib import Path

_NAME = "oxblosc.exe" if os.name == "nt" else "oxblosc"


def binary_path() -> Path:
    """Where the bundled binary lives (it may be missing in a build that did not bundle it)."""
    return Path(__file__).resolve().parent / "_bin" / _NAME


def _plugin_path() -> str:
    """``OXBLOSC_PLUGIN_PATH`` with this environment's site-packages after the user's entries."""
    dirs = [d for d in os.environ.get("OXBLOSC_PLUGIN_PATH", "").split(os.pathsep) if d]
    for key in ("purelib", "platlib"):
        d = sysconfig.get_paths()[key]
        if d not in dirs:
            dirs.append(d)
    return os.pathsep.join(dirs)


def main() -> int:
    exe = binary_path()
    if not exe.is_file():
        sys.stderr.write(
            f"oxblosc: the command-line binary is not bundled in this install ({exe}); "
            "build it with `make develop` or `cargo build --release -p oxblosc-cli`\n"
        )
        return 2
    args = [str(exe), *sys.argv[1:]]
    os.environ["OXBLOSC_PLUGIN_PATH"] = _plugin_path()
    if os.name == "posix":
        os.execv(args[0], args)
    return subprocess.call(args)


if __name__ == "__main__":
    sys.exit(main())
