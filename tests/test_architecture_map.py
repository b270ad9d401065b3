"""docs/architecture.md is the map of the code, true by test: its module map
names every module of fuse_lang and fuse_lsp, and nothing it names is missing;
the limits of docs/architecture.md ("Sizes") hold for every module."""
from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MAP = ROOT / "docs" / "architecture.md"
PACKAGES = ("fuse_lang", "fuse_lsp")
MENTION = re.compile(r"\b((?:fuse_lang|fuse_lsp)(?:/[A-Za-z_0-9]+)*/[A-Za-z_0-9]+\.py)\b")
MODULE_LINES, FUNCTION_LINES, CLASS_LINES = 600, 80, 400


def modules() -> set[str]:
    """Every module file, as its path from the repository root (packages'
    `__init__.py` aside: a package is named by its folder)."""
    return {p.relative_to(ROOT).as_posix() for package in PACKAGES
            for p in (ROOT / package).rglob("*.py") if p.name != "__init__.py"}


def module_map() -> str:
    text = MAP.read_text(encoding="utf-8")
    start = text.index("## Module map")
    end = text.find("\n## ", start + 1)
    return text[start:end if end != -1 else len(text)]


def test_the_map_names_every_module():
    named = set(MENTION.findall(module_map()))
    missing = sorted(modules() - named)
    assert not missing, f"modules the map of docs/architecture.md does not name: {missing}"


def test_the_map_names_no_module_that_does_not_exist():
    named = set(MENTION.findall(MAP.read_text(encoding="utf-8")))
    gone = sorted(n for n in named if not (ROOT / n).is_file())
    assert not gone, f"docs/architecture.md names modules that do not exist: {gone}"


def test_modules_functions_and_classes_keep_their_sizes():
    too_long = []
    for name in sorted(modules() | {p.relative_to(ROOT).as_posix() for package in PACKAGES
                                    for p in (ROOT / package).rglob("__init__.py")}):
        text = (ROOT / name).read_text(encoding="utf-8")
        if len(text.splitlines()) > MODULE_LINES:
            too_long.append(f"{name}: {len(text.splitlines())} lines")
        for node in ast.walk(ast.parse(text)):
            lines = getattr(node, "end_lineno", 0) - getattr(node, "lineno", 0) + 1
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) \
                    and lines > FUNCTION_LINES:
                too_long.append(f"{name}:{node.lineno} {node.name}(): {lines} lines")
            elif isinstance(node, ast.ClassDef) and lines > CLASS_LINES:
                too_long.append(f"{name}:{node.lineno} class {node.name}: {lines} lines")
    assert not too_long, "over the limits of docs/architecture.md: " + "; ".join(too_long)
