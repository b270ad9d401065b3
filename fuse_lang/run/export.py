"""Export: a program as one graph of its framework, to run outside Fuse.

`program.export("torch")` captures the whole program with `torch.export`
(non-strict: the Python evaluator runs once, at capture, as it does for a
compiled run) and gives an `ExportedProgram`; `program.export("jax")` gives a
jitted callable and its `jax.export.Exported` (StableHLO text, serializable).
The graph's arguments are the program's inputs, sources and params (their
values at export are the example inputs), its results the program's exports,
in order.  What has no single straight graph is refused with a FuseError
naming it: a recursive group run to a fixpoint (Datalog rules, numeric
recursion: the number of rounds depends on the data), Monte Carlo projection
(its draws are made in NumPy) and a mesh.  A recurrence, over an offset or a
virtual index, has a fixed number of steps: it is unrolled into the graph, one
pass per step (run.recurrence).  docs/backends.md.
"""
from __future__ import annotations

import io
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping

import numpy as np

from ..io.sinks import atomic_write
from .backends import BackendError, get_backend
from .backends.base import Backend
from .execution import Execution, RunCaches, RunCounters, RunSettings
from .results import FuseError
from .run_plan import EQUATION, TENSOR, GroupPlan

FORMATS = {"torch": "torch", "jax": "jax", "stablehlo": "jax"}


@dataclass
class Exported:
    """A program exported to a framework.  `artifact`: the torch.export
    ExportedProgram, or the jitted jax callable; `jax_export`: the
    jax.export.Exported (jax only; `stablehlo` is its text)."""

    format: str
    artifact: Any
    inputs: tuple[str, ...]  # the graph's arguments, in order
    outputs: tuple[str, ...]  # its results, in order: the program's exports
    example_inputs: dict[str, np.ndarray] = field(repr=False)
    stablehlo: str | None = field(default=None, repr=False)
    jax_export: Any = field(default=None, repr=False)

    def run(self, inputs: Mapping[str, Any] | None = None) -> dict[str, np.ndarray]:
        """Run the exported graph (inputs by name; missing ones: the example
        inputs) and hand back the exports as NumPy arrays."""
        given = dict(self.example_inputs)
        unknown = set(inputs or {}) - set(given)
        if unknown:
            raise FuseError(f"the exported graph takes {', '.join(self.inputs) or 'no inputs'}; "
                            f"not {', '.join(sorted(unknown))}")
        given.update({k: np.asarray(v, dtype=np.float32) for k, v in (inputs or {}).items()})
        args = [given[name] for name in self.inputs]
        if self.format == "torch":
            import torch

            results = self.artifact.module()(*[torch.as_tensor(a) for a in args])
        else:
            results = self.artifact(*args)
        return {name: np.asarray(value.detach().cpu() if hasattr(value, "detach") else value)
                for name, value in zip(self.outputs, results)}

    def to_bytes(self) -> bytes:
        """torch: the .pt2 archive torch.export.save writes; jax: the StableHLO text."""
        if self.format == "torch":
            import torch

            buffer = io.BytesIO()
            torch.export.save(self.artifact, buffer)
            return buffer.getvalue()
        assert self.stablehlo is not None
        return self.stablehlo.encode()

    def save(self, path: str | Path) -> None:
        """Write `to_bytes()` to `path`, whole or not at all."""
        atomic_write(Path(path), self.to_bytes())


def export_program(program: Any, format: str, inputs: Mapping[str, Any] | None) -> Exported:
    """The program's whole graph captured by `format`'s framework (see the module)."""
    if format not in FORMATS:
        raise FuseError(f"export format must be one of {', '.join(map(repr, FORMATS))}, "
                        f"not {format!r}")
    framework = FORMATS[format]
    backend = _backend_for(program, framework)
    if program.config.projection == "monte_carlo":
        raise FuseError("a program run with projection='monte_carlo' cannot be exported: its "
                        "draws are made in NumPy, outside any graph")
    if program.backend.sharded:
        raise FuseError("a program sharded over a device mesh cannot be exported (export "
                        "captures a graph for one device)")
    given = {name: np.asarray(value) for name, value in (inputs or {}).items()}
    plan = program.run_plan(given)
    analysis = plan.analysis
    # the program on the export's backend, as one graph
    settings = RunSettings(backend, program.base_dir, program.memory_limit, False, True, None,
                           RunCounters())
    caches = RunCaches()
    with backend.context():
        outer = Execution(settings, plan, caches, given, False)
        groups = plan.schedule(False).groups
        _refuse_loops(analysis, groups)
        names = plan.outputs
        if not names:
            raise FuseError("the program has no exports to export (add `export NAME`)")
        bases = outer.bases_of([list(g.names) for g in groups])
        order = tuple(sorted(bases))

        def whole(*arrays: Any) -> tuple:
            run = Execution(settings, plan, caches, given, False)
            run.bases = dict(zip(order, arrays))
            for group in groups:
                run.one(group)
            return tuple(run.values[n] for n in names)

        args = [bases[n] for n in order]
        examples = {n: np.asarray(backend.to_numpy(bases[n])) for n in order}
        try:
            if framework == "torch":
                return _torch_export(whole, args, order, names, examples)
            return _jax_export(whole, args, order, names, examples)
        except FuseError as err:
            raise FuseError(f"the program cannot be exported to {format}: {err}") from None
        except Exception as err:  # noqa: BLE001 - the framework's reason, in one line
            reason = str(err).strip().splitlines()[0] if str(err).strip() else ""
            raise FuseError(f"the program cannot be exported to {format}: "
                            f"{type(err).__name__}: {reason}") from None


def _backend_for(program: Any, framework: str) -> Backend:
    """The framework's backend on the program's device (cpu when the program runs
    on another framework) and in its precision."""
    device = program.backend.device if program.backend.name == framework else "cpu"
    try:
        return get_backend(framework, device, program.backend.precision)
    except BackendError as err:
        raise FuseError(str(err)) from None


def _refuse_loops(analysis: Any, groups: tuple[GroupPlan, ...]) -> None:
    """A group with no single straight graph is refused, by name (the module says why)."""
    for planned in groups:
        group = planned.names
        if planned.how in (EQUATION, TENSOR):
            continue
        if planned.recurrence is not None:
            continue  # a fixed number of steps, one pass each: unrolled in the graph
        info = analysis.tensors[group[0]]
        stmt = analysis.program.statements[info.statements[0] if info.statements else 0]
        line = analysis.lines.position(stmt.span.start)[0] + 1
        names = ", ".join(f"`{n}`" for n in group)
        if all(analysis.tensors[n].boolean for n in group):
            why = "is recursive Datalog: its rounds run until no new fact, a number the data decides"
        else:
            why = "is recursive: it runs to a fixpoint, a number of rounds the data decides"
        raise FuseError(f"line {line}: {names} {why}; export needs one straight graph "
                        f"(run it with `fuse run` instead)")


def _torch_export(whole: Callable, args: list, order: tuple[str, ...],
                  names: tuple[str, ...], examples: dict) -> Exported:
    import torch

    class Program(torch.nn.Module):
        def forward(self, *arrays: torch.Tensor) -> tuple:
            return whole(*arrays)

    artifact = torch.export.export(Program(), tuple(args), strict=False)
    return Exported("torch", artifact, order, names, examples)


def _jax_export(whole: Callable, args: list, order: tuple[str, ...],
                names: tuple[str, ...], examples: dict) -> Exported:
    import jax

    jitted = jax.jit(whole)
    exported = jax.export.export(jitted)(*args)
    return Exported("jax", jitted, order, names, examples, exported.mlir_module(), exported)
