"""Export: a program as one graph of its framework, to run outside Fuse.

`program.export("torch")` captures the whole program with `torch.export`
(non-strict: the Python evaluator runs once, at capture, as it does for a
compiled run) and gives an `ExportedProgram` whose module takes the program's
inputs as keyword arguments by their source names, keeps its params (and the
tensors a weights manifest gives) as parameters under their Fuse names, and
returns a dict of the exports by name.  `program.export("jax")` gives the
`jax.export.Exported` (serializable; StableHLO text) of the same function, its
params baked in as constants.  `dynamic=("n",)` makes every input axis of index
`n` (its domain) a symbolic size (torch.export.Dim, jax symbolic shapes); the
export is then run at another size and compared with the engine's run there, so
a graph that fixed the size anyway is refused, never handed back wrong.

What has no single straight graph is refused with a FuseError naming it: a
recursive group run to a fixpoint (Datalog rules, numeric recursion: the number
of rounds depends on the data), Monte Carlo projection (its draws are made in
NumPy) and a mesh.  A recurrence, over an offset or a virtual index, has a fixed
number of steps: it is unrolled into the graph, one pass per step
(run.recurrence).  docs/backends.md, "Export".
"""
from __future__ import annotations

import io
import json
import keyword
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from ..check.kinds import SOURCE_KINDS, TensorKind
from ..io.sinks import atomic_write
from .backends import BackendError, get_backend
from .backends.base import Backend
from .execution import Execution, RunCaches, RunCounters, RunSettings
from .interpret.statement import statement_info, variables_by_statement
from .results import FuseError
from .run_plan import EQUATION, TENSOR, GroupPlan, RunPlan

# the formats and their frameworks; "jax" and "stablehlo" are one capture whose
# bytes are the serialized jax.export artifact and the StableHLO text
FORMATS = {"torch": "torch", "jax": "jax", "stablehlo": "jax"}
METADATA = "fuse.json"  # the torch archive's extra file: names, outputs, dynamic axes


@dataclass
class Exported:
    """A program exported to a framework.  `artifact`: the torch.export
    ExportedProgram, or the jitted jax function; `jax_export`: the
    jax.export.Exported (jax only; `stablehlo` is its text).  The graph takes
    `inputs` (Fuse names) as keyword arguments spelled `arguments[name]`, keeps
    `state` (torch: the module's parameters, by Fuse name; jax: constants) and
    returns a dict of `outputs` by Fuse name."""

    format: str
    artifact: Any
    inputs: tuple[str, ...]  # the graph's named inputs (sources), by Fuse name
    outputs: tuple[str, ...]  # the program's exports, the keys of the result
    example_inputs: dict[str, np.ndarray] = field(repr=False)
    stablehlo: str | None = field(default=None, repr=False)
    jax_export: Any = field(default=None, repr=False)
    state: tuple[str, ...] = ()  # params and weights: the module's state
    arguments: dict[str, str] = field(default_factory=dict)  # Fuse name -> keyword
    dynamic: dict[str, list[tuple[str, int]]] = field(default_factory=dict)  # index -> axes
    # each input's dtype in the graph (NumPy arrays are cast to it: bfloat16 has none)
    dtypes: dict[str, str] = field(default_factory=dict)
    device: str = "cpu"  # torch: where the graph's state lives (its inputs go there)

    @property
    def framework(self) -> str:
        return FORMATS[self.format]

    def run(self, inputs: Mapping[str, Any] | None = None) -> dict[str, np.ndarray]:
        """Run the exported graph (inputs by Fuse name; missing ones: the example
        inputs) and hand back the exports as NumPy arrays."""
        given = dict(self.example_inputs)
        unknown = set(inputs or {}) - set(given)
        if unknown:
            held = sorted(unknown & set(self.state))
            why = f" ({', '.join(held)}: the export's state, fixed at export)" if held else ""
            raise FuseError(f"the exported graph takes {', '.join(self.inputs) or 'no inputs'}; "
                            f"not {', '.join(sorted(unknown))}{why}")
        given.update({k: np.asarray(v, dtype=given[k].dtype) for k, v in (inputs or {}).items()})
        keywords = {self.arguments[n]: given[n] for n in self.inputs}
        if self.framework == "torch":
            import torch

            results = self.artifact.module()(**{
                k: torch.as_tensor(v, device=self.device).to(getattr(torch, self.dtypes[n]))
                if n in self.dtypes else torch.as_tensor(v, device=self.device)
                for n, (k, v) in zip(self.inputs, keywords.items())})
            return {name: np.asarray((value.float() if value.dtype == torch.bfloat16 else value)
                                     .detach().cpu()) for name, value in results.items()}
        import jax.numpy as jnp

        results = self.jax_export.call(**{
            k: jnp.asarray(v, dtype=jnp.bfloat16) if self.dtypes.get(n) == "bfloat16" else v
            for n, (k, v) in zip(self.inputs, keywords.items())})
        return {name: np.asarray(value.astype(jnp.float32) if value.dtype == jnp.bfloat16
                                 else value) for name, value in results.items()}

    def metadata(self) -> dict:
        """What a user needs beside the graph: the keyword of each input, the state,
        the outputs and the dynamic axes (the torch archive holds it as fuse.json)."""
        return {"inputs": {self.arguments[n]: n for n in self.inputs},
                "state": list(self.state), "outputs": list(self.outputs),
                "dynamic": {k: [list(a) for a in v] for k, v in self.dynamic.items()}}

    def to_bytes(self) -> bytes:
        """torch: the .pt2 archive torch.export.save writes (with fuse.json); jax:
        the serialized jax.export artifact (`Exported.serialize()`); stablehlo: the
        StableHLO text."""
        if self.format == "torch":
            import torch

            buffer = io.BytesIO()
            torch.export.save(self.artifact, buffer,
                              extra_files={METADATA: json.dumps(self.metadata())})
            return buffer.getvalue()
        if self.format == "jax":
            return bytes(self.jax_export.serialize())
        assert self.stablehlo is not None
        return self.stablehlo.encode()

    def save(self, path: str | Path) -> None:
        """Write `to_bytes()` to `path`, whole or not at all."""
        atomic_write(Path(path), self.to_bytes())


def python_names(names: Sequence[str]) -> dict[str, str]:
    """Each Fuse name's keyword argument: itself when it is a Python identifier
    and no keyword; else each prime spelled `_prime`, `::` spelled `__`, a
    keyword given a trailing `_`; and `_` appended while the spelling is taken."""
    out: dict[str, str] = {}
    taken = {n for n in names if n.isidentifier() and not keyword.iskeyword(n)}
    for name in names:
        if name in taken:
            out[name] = name
            continue
        spelled = name.replace("'", "_prime").replace("::", "__")
        if keyword.iskeyword(spelled):
            spelled += "_"
        while spelled in taken:
            spelled += "_"
        taken.add(spelled)
        out[name] = spelled
    return out


@dataclass
class Capture:
    """What the framework captures: `whole(values by Fuse name)` -> the exports
    by name; the inputs' and the state's example values; the dynamic axes."""
    whole: Callable[[Mapping[str, Any]], dict]
    inputs: dict[str, Any]  # the backend's arrays, by Fuse name
    state: dict[str, Any]
    names: dict[str, str]  # Fuse name -> keyword
    dynamic: dict[str, list[tuple[str, int]]]
    outputs: tuple[str, ...]
    # sources outside the graph (a loss's targets) with a dynamic axis: their example
    # values and those axes, grown with the inputs when the export is checked
    aside: dict[str, tuple[np.ndarray, list[int]]] = field(default_factory=dict)


def export_program(program: Any, format: str, inputs: Mapping[str, Any] | None,
                   dynamic: Sequence[str] = ()) -> Exported:
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
    weights = set()
    if program.weights is not None:  # a manifest's (or checkpoint's) tensors: the state
        held = program.weights.inputs(backend, list(program.analysis.tensors))
        weights = set(held) - set(given)  # a tensor given as an input stays one (it wins)
        given = {**{n: np.asarray(backend.to_numpy(v)) for n, v in held.items()}, **given}
    capture = _capture(program, backend, given, weights, tuple(dynamic))
    shown = format + (f" with {', '.join(f'`{i}`' for i in capture.dynamic)} dynamic"
                      if capture.dynamic else "")
    try:
        made = _made(capture, backend, framework)
    except FuseError as err:
        raise FuseError(f"the program cannot be exported to {shown}: {err}") from None
    except Exception as err:  # noqa: BLE001 - the framework's reason, in one line
        raise FuseError(f"the program cannot be exported to {shown}: "
                        f"{_reason(err, capture.dynamic)}") from None
    made.format = format
    if capture.dynamic:
        _check_dynamic(program, made, {n: np.asarray(backend.to_numpy(v))
                                       for n, v in capture.state.items()}, capture.aside)
    return made


def _made(capture: Capture, backend: Backend, framework: str) -> Exported:
    """The Exported of `framework`'s capture (run.export_capture)."""
    from .export_capture import capture_jax, capture_torch

    examples = {n: np.asarray(backend.to_numpy(v)) for n, v in capture.inputs.items()}
    named = {"state": tuple(capture.state), "arguments": dict(capture.names),
             "dynamic": capture.dynamic, "dtypes": {
                 n: str(v.dtype).removeprefix("torch.") for n, v in capture.inputs.items()}}
    if framework == "torch":
        held = [*capture.inputs.values(), *capture.state.values()]
        return Exported("torch", capture_torch(capture), tuple(capture.inputs),
                        capture.outputs, examples, **named,
                        device=str(held[0].device) if held else "cpu")
    jitted, exported = capture_jax(capture)
    return Exported("jax", jitted, tuple(capture.inputs), capture.outputs, examples,
                    exported.mlir_module(), exported, **named)


def _capture(program: Any, backend: Backend, given: dict[str, np.ndarray], weights: set[str],
             dynamic: tuple[str, ...]) -> Capture:
    """The program on the export's backend as one function of its bases."""
    plan = program.run_plan(given)
    analysis = plan.analysis
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

    tensors = analysis.tensors
    state = {n: v for n, v in sorted(bases.items())
             if tensors[n].kind == TensorKind.PARAM or n in weights}
    taken = {n: v for n, v in sorted(bases.items()) if n not in state
             and (tensors[n].kind in SOURCE_KINDS or n in given)}
    axes = _dynamic_axes(analysis, dynamic, taken, state)
    with backend.context():
        aside = _aside(outer, backend, axes, set(bases))

    def whole(values: Mapping[str, Any]) -> dict:
        # the dynamic sizes as the framework traces them (symbolic), in the plan
        sizes = {analysis.tensors[n].axes[k].domain: values[n].shape[k]
                 for pairs in axes.values() for n, k in pairs}
        run = Execution(settings, symbolic_plan(plan, sizes) if sizes else plan, caches,
                        given, False)
        run.bases = {**bases, **values}
        with backend.context():
            for group in groups:
                run.one(group)
        return {n: run.values[n] for n in names}

    # the rest of the bases (facts written in the program) are constants of the graph
    return Capture(whole, taken, state, python_names(list(taken)), axes, tuple(names), aside)


def _aside(outer: Execution, backend: Backend, axes: Mapping[str, list[tuple[str, int]]],
           used: set[str]) -> dict[str, tuple[np.ndarray, list[int]]]:
    """The sources the exports do not read (a loss's targets) that share a dynamic
    axis' domain: the engine's run at another size needs them at that size too."""
    tensors = outer.analysis.tensors
    domains = {tensors[n].axes[k].domain for pairs in axes.values() for n, k in pairs}
    out = {}
    for name, info in tensors.items():
        ks = [k for k, a in enumerate(info.axes) if a.domain in domains]
        if name in used or info.kind not in SOURCE_KINDS or not ks:
            continue
        base, has = outer.base(name)
        if has:
            out[name] = (np.asarray(backend.to_numpy(base)), ks)
    return out


def symbolic_plan(plan: RunPlan, sizes: Mapping[int, Any]) -> RunPlan:
    """`plan` with the extents of the domains in `sizes` replaced by those sizes
    (the framework's symbolic ones, while it traces): the shapes it allocates and
    broadcasts to, and each statement's index extents."""
    analysis = plan.analysis

    def sized(name: str, shape: tuple) -> tuple:
        axes = analysis.tensors[name].axes if name in analysis.tensors else ()
        if len(axes) != len(shape):
            return shape
        return tuple(sizes.get(a.domain, e) for a, e in zip(axes, shape))

    variables = {k: [(n, sizes.get(d, e), d) for n, e, d in table]
                 for k, table in variables_by_statement(analysis).items()}
    statements = {k: statement_info(analysis, k, variables) for k in plan.statements}
    shapes = {n: sized(n, s) for n, s in plan.shapes.items()}
    return replace(plan, statements=statements, shapes=shapes)


def _dynamic_axes(analysis: Any, dynamic: tuple[str, ...], inputs: Mapping[str, Any],
                  state: Mapping[str, Any]) -> dict[str, list[tuple[str, int]]]:
    """Per dynamic index: the (input, axis) pairs in its domain.  An index no input
    has, or one the state has too (the state's shapes are fixed), is refused."""
    tensors = analysis.tensors
    out: dict[str, list[tuple[str, int]]] = {}
    for index in dynamic:
        domains = {a.domain for n in (*inputs, *state) for a in tensors[n].axes
                   if a.index == index}
        axes = [(n, k) for n in inputs for k, a in enumerate(tensors[n].axes)
                if a.domain in domains]
        fixed = [n for n in state for a in tensors[n].axes if a.domain in domains]
        if fixed:
            what = "the param" if tensors[fixed[0]].kind == TensorKind.PARAM else \
                "the weights' tensor"  # a manifest's tensors are state too
            raise FuseError(f"the axis `{index}` cannot be dynamic: {what} `{fixed[0]}` "
                            f"has it, and the exported state has one size")
        if not axes:
            shown = ", ".join(f"{n}{tensors[n].axes_text}" for n in inputs) or "none"
            raise FuseError(f"no input of the program has an axis `{index}` to make dynamic "
                            f"(its inputs: {shown})")
        for name, k in axes:
            if int(np.shape(inputs[name])[k]) < 2:
                raise FuseError(f"a dynamic axis needs an example of at least 2 positions: "
                                f"`{name}` has {np.shape(inputs[name])[k]} along `{index}`")
        out[index] = axes
    return out


def _grown(value: np.ndarray, axes: Sequence[int]) -> np.ndarray:
    for k in axes:
        value = np.concatenate([value, np.take(value, [0], axis=k)], axis=k)
    return value


def _check_dynamic(program: Any, made: Exported, state: dict[str, np.ndarray],
                   aside: Mapping[str, tuple[np.ndarray, list[int]]]) -> None:
    """Run the export with each dynamic axis one position longer (the first
    position repeated) and compare with the engine's run at that size: a graph
    that fixed the size (an extent taken from the analysis) is refused."""
    grown = {}
    for name, value in made.example_inputs.items():
        grown[name] = _grown(value, sorted({k for pairs in made.dynamic.values()
                                            for n, k in pairs if n == name}))
    indices = ", ".join(f"`{i}`" for i in made.dynamic)
    try:
        ours = made.run(grown)
        theirs = program.variant().run({**grown, **state, **{
            n: _grown(value, ks) for n, (value, ks) in aside.items()}}, write_sinks=False)
    except Exception as err:  # noqa: BLE001 - the reason, in one line
        raise FuseError(f"the program cannot be exported with {indices} dynamic: at another "
                        f"size it fails ({_reason(err, {})})") from None
    for name in made.outputs:
        if np.shape(ours[name]) != np.shape(theirs[name]) or not np.allclose(
                ours[name], theirs[name], rtol=1e-3, atol=1e-4):
            raise FuseError(f"the program cannot be exported with {indices} dynamic: its graph "
                            f"fixes the size (`{name}` differs from a run at another size); "
                            f"export it without --dynamic")


def _reason(err: BaseException, dynamic: Mapping[str, Any]) -> str:
    """The framework's reason in one line; a dynamic axis the graph specialised says so."""
    text = str(err).strip()
    first = text.splitlines()[0] if text else ""
    from .export_capture import framework_symbol as symbol

    if dynamic and ("Constraints violated" in text or "specializ" in text
                    or "InconclusiveDimension" in type(err).__name__):
        named = [i for i in dynamic if re.search(
            rf"[('\s]{re.escape(symbol(i))}[)',\s]", first)] or list(dynamic)
        axes = ", ".join(f"`{i}`" for i in named)
        return f"its graph fixes the size of {axes}, which cannot be dynamic ({first})"
    return f"{type(err).__name__}: {first}"


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
