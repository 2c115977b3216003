"""The ``oxblosc`` console script: runs the command-line binary bundled with the package.

The CLI is the Rust binary of ``crates/oxblosc-cli`` (the Python package does not link it);
``make develop`` / ``make develop-release`` build it and place it in ``oxblosc/_bin/``. This shim
execs it with the same arguments, so exit codes and output are the binary's own.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

_NAME = "oxblosc.exe" if os.name == "nt" else "oxblosc"


def binary_path() -> Path:
    """Where the bundled binary lives (it may be missing in a build that did not bundle it)."""
    return Path(__file__).resolve().parent / "_bin" / _NAME


def main() -> int:
    exe = binary_path()
    if not exe.is_file():
        sys.stderr.write(
            f"oxblosc: the command-line binary is not bundled in this install ({exe}); "
            "build it with `make develop` or `cargo build --release -p oxblosc-cli`\n"
        )
        return 2
    args = [str(exe), *sys.argv[1:]]
    if os.name == "posix":
        os.execv(args[0], args)
    return subprocess.call(args)


if __name__ == "__main__":
    sys.exit(main())
