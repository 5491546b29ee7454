#!/usr/bin/env python3
"""Checks that no file under src/ includes a header of a higher layer (docs/architecture.md).

Layers, lowest first; folders on one line share a layer and may include each other. Public
headers (include/nxrt) may be included from anywhere. Prints each upward include and exits 1 if
there is any (or if src/ has a folder that is not listed here).
"""
import pathlib
import re
import sys

LAYERS = [
    ["base"],
    ["model", "graph"],
    ["devices"],
    ["plugins", "ort_plugins"],  # the nxrt plugin ABI host and the onnxruntime plugin host
    ["session"],
    ["controlflow"],  # If/Loop/Scan run their bodies as session plans; fills plugins' slots
    ["api"],
]
RANK = {folder: rank for rank, folders in enumerate(LAYERS) for folder in folders}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^/"]+)/[^"]+"', re.M)


def main() -> int:
    src = pathlib.Path(__file__).resolve().parents[2] / "src"
    problems = []
    for path in sorted(p for p in src.rglob("*") if p.suffix in (".h", ".cc", ".c", ".inc")):
        folder = path.relative_to(src).parts[0]
        if folder not in RANK:
            problems.append(f"src/{folder}/: not in any layer of {pathlib.Path(__file__).name}")
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        for m in INCLUDE.finditer(text):
            target = m.group(1)
            if target == "nxrt" or RANK.get(target, -1) <= RANK[folder]:
                continue
            line = text[: m.start()].count("\n") + 1
            problems.append(f"{path.relative_to(src.parent)}:{line}: {folder}/ includes {target}/ "
                            f"(a higher layer)")
    problems = list(dict.fromkeys(problems))  # an unlisted folder is reported once
    for p in problems:
        print(p)
    if problems:
        print(f"{len(problems)} layering violation(s); layers, lowest first: "
              + " < ".join(", ".join(f) for f in LAYERS))
        return 1
    print("src/ layering: no upward include")
    return 0


if __name__ == "__main__":
    sys.exit(main())
