"""Check the layering rules of docs/architecture.md from `cargo metadata`.

A crate may depend only on crates below it; front-ends only on the facade `oxblosc`.
"""

import json
import subprocess
import sys

LAYER = {
    "oxblosc-chunk": 1,
    "oxblosc-expr": 1,
    "oxblosc-frame": 2,
    "oxblosc-nd": 3,
    "oxblosc-table": 4,
    "oxblosc": 5,
    "oxblosc-cli": 6,
    "oxblosc-python": 6,
    "oxblosc-hdf5": 6,
}
FRONT_ENDS = {"oxblosc-cli", "oxblosc-python", "oxblosc-hdf5"}


def main() -> int:
    meta = json.loads(subprocess.check_output(["cargo", "metadata", "--format-version", "1", "--no-deps"], text=True))
    problems = []
    for pkg in meta["packages"]:
        name = pkg["name"]
        if name not in LAYER:
            problems.append(f"{name}: crate not placed in a layer (add it to scripts/check_layers.py)")
            continue
        for dep in pkg["dependencies"]:
            d = dep["name"]
            if d not in LAYER or dep.get("kind") == "dev":
                continue
            if name in FRONT_ENDS and d != "oxblosc":
                problems.append(f"{name} -> {d}: front-ends depend only on the facade `oxblosc`")
            elif LAYER[d] >= LAYER[name]:
                problems.append(f"{name} -> {d}: a crate depends only on crates below it")
    for p in problems:
        print("layering:", p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
