"""Whether a speed change left `fuse check` and `fuse explain` saying exactly what
they said: record their outputs (stdout, stderr, exit status; text and --format
json, and explain in demand mode) over the examples, mutations of them (lines
dropped, doubled or broken, for the diagnostics' paths) and generated programs
(benchmarks/gen_program.py, and lines reading undefined tensors), then compare
two recordings byte for byte.

    PYTHONPATH=<base tree> python benchmarks/same_outputs.py record base.json
    PYTHONPATH=<new tree>  python benchmarks/same_outputs.py record new.json
    python benchmarks/same_outputs.py compare base.json new.json

Each command runs as its own process (`python -m fuse_lang.cli`) from a folder
outside any tree, so that the tree on PYTHONPATH is the one imported, on files
written into that folder by the same recipe each time, so that two recordings
name the same paths.
"""
from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from gen_program import generate  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
COMMANDS = (["check"], ["check", "--format", "json"], ["explain"],
            ["explain", "--format", "json"], ["explain", "--mode", "demand"])
FOLDER = Path("/tmp/fuse_same_outputs")  # the same paths in every recording


def _mutations(text: str, rng: random.Random) -> str:
    lines = text.splitlines()
    for _ in range(3):
        if not lines:
            break
        k = rng.randrange(len(lines))
        how = rng.randrange(3)
        if how == 0:
            del lines[k]
        elif how == 1:
            lines.insert(k, lines[rng.randrange(len(lines))])
        else:
            lines[k] = lines[k].replace("[", "[q,", 1) if "[" in lines[k] else lines[k] + " +"
    return "\n".join(lines) + "\n"


def programs() -> list[Path]:
    """The programs compared: the examples, then files written into FOLDER."""
    FOLDER.mkdir(exist_ok=True)
    out = sorted((ROOT / "examples").rglob("*.fuse"))
    rng = random.Random(7)
    for example in sorted((ROOT / "examples").glob("*.fuse")):
        for n in range(2):
            path = FOLDER / f"mutated_{example.stem}_{n}.fuse"
            path.write_text(_mutations(example.read_text(encoding="utf-8"), rng),
                            encoding="utf-8")
            out.append(path)
    for lines in (30, 2000):
        path = FOLDER / f"generated_{lines}.fuse"
        path.write_text(generate(lines, FOLDER / "data"), encoding="utf-8")
        out.append(path)
    path = FOLDER / "undefined_300.fuse"
    path.write_text("".join(f"A{k}[x] = U{k}[x]\n" for k in range(300)), encoding="utf-8")
    return out + [path]


def record(target: Path) -> None:
    found = {}
    for path in programs():
        for command in COMMANDS:
            done = subprocess.run([sys.executable, "-m", "fuse_lang.cli", *command, str(path)],
                                  capture_output=True, text=True, cwd=FOLDER)
            found[f"{' '.join(command)} {path}"] = [done.returncode, done.stdout, done.stderr]
    target.write_text(json.dumps(found, indent=0, sort_keys=True), encoding="utf-8")
    print(f"{len(found)} outputs recorded in {target}")


def compare(first: Path, second: Path) -> int:
    a = json.loads(first.read_text(encoding="utf-8"))
    b = json.loads(second.read_text(encoding="utf-8"))
    differing = sorted(key for key in a.keys() | b.keys() if a.get(key) != b.get(key))
    for key in differing:
        print(f"differs: {key}")
    print(f"{len(a.keys() & b.keys())} outputs compared, {len(differing)} differ")
    return 1 if differing else 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["record"] and len(sys.argv) == 3:
        record(Path(sys.argv[2]))
    elif sys.argv[1:2] == ["compare"] and len(sys.argv) == 4:
        sys.exit(compare(Path(sys.argv[2]), Path(sys.argv[3])))
    else:
        sys.exit(__doc__)
