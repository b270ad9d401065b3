"""No import circle in fuse_lang and fuse_lsp: the graph of their imports,
read from the source (relative imports resolved, imports inside functions
included), has no cycle."""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("fuse_lang", "fuse_lsp")


def module_files() -> dict[str, Path]:
    """Every module of the packages by dotted name (a package by its own name)."""
    found = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            parts = path.relative_to(ROOT).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found[".".join(parts)] = path
    return found


def imported(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The modules of the packages that `name` (at `path`) imports."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[:len(anchor) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            out.add(base)
            # `from package import module` imports the module
            out.update(f"{base}.{alias.name}" for alias in node.names)
    return {m for m in out if m in modules and m != name}


def import_graph() -> dict[str, set[str]]:
    modules = module_files()
    return {name: imported(name, path, modules) for name, path in modules.items()}


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle as a path of module names (first == last), or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            if nxt not in state and (cycle := visit(nxt)) is not None:
                return cycle
        path.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (cycle := visit(node)) is not None:
            return cycle
    return None


def test_the_graph_sees_relative_imports():
    graph = import_graph()
    assert "fuse_lsp.state" in graph["fuse_lsp.features.hover"]
    assert "fuse_lsp.features.hover" in graph["fuse_lsp.server"]


def test_no_import_cycle():
    cycle = find_cycle(import_graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle or ())


# The engine's rooms in the order a program flows through them: a room imports
# only rooms to its left (docs/architecture.md).  The package's root module
# (`fuse_lang`) may import any room; `speed` (process-wide speed helpers with no
# Fuse imports) is below all; the command line is above the engine's rooms and
# the notebook magic above the command line (it prints diagnostics as `fuse check`
# does) and the language server above everything.
LAYERS = ("fuse_lang.speed", "fuse_lang.front", "fuse_lang.io", "fuse_lang.check",
          "fuse_lang.plan", "fuse_lang.run", "fuse_lang.ide", "fuse_lang.cli",
          "fuse_lang.notebook", "fuse_lsp")


def _layer(module: str) -> int | None:
    for rank, room in enumerate(LAYERS):
        if module == room or module.startswith(room + "."):
            return rank
    return None


def test_no_upward_arrow_between_the_layers():
    upward = []
    for name, targets in import_graph().items():
        rank = _layer(name)
        if rank is None:
            continue
        for target in targets:
            other = _layer(target)
            if other is not None and other > rank:
                upward.append(f"{name} -> {target}")
            if target == "fuse_lang" and name.startswith("fuse_lang."):
                upward.append(f"{name} -> {target}")
    assert not upward, "imports against the flow speed < front < io < check < plan < run < " \
        "ide < cli < notebook < fuse_lsp: " + ", ".join(sorted(upward))


def test_every_module_sits_in_a_layer():
    stray = [name for name in import_graph() if name != "fuse_lang" and _layer(name) is None]
    assert not stray, f"modules outside the layers (docs/architecture.md): {stray}"


def test_the_engine_never_imports_the_server():
    graph = import_graph()
    assert not [f"{name} -> {target}" for name, targets in graph.items()
                if name.startswith("fuse_lang") for target in targets
                if target.startswith("fuse_lsp")]


def test_no_private_name_is_imported_from_another_module():
    """A module's `_name` is its own: another module that needs it asks for a
    public name (docs/architecture.md)."""
    modules = module_files()
    private = []
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.ImportFrom) or node.module == "__future__":
                continue
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[:len(anchor) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            if base.startswith(PACKAGES):
                private += [f"{name}: from {base} import {alias.name}" for alias in node.names
                            if alias.name.startswith("_") and not alias.name.endswith("__")]
    assert not private, "private names imported across modules: " + "; ".join(private)
