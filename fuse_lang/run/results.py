"""What a run hands back (`RunResult`, `QueryAnswer`) and how it fails (`FuseError`)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..check.cone import NotRun
from ..front.diagnostics import Diagnostic


class FuseError(Exception):
    """A program that cannot be compiled or run. `diagnostics` says where and why."""

    def __init__(self, message: str, diagnostics: tuple[Diagnostic, ...] = ()) -> None:
        super().__init__(message)
        self.diagnostics = diagnostics


@dataclass
class QueryAnswer:
    """A query's answer (`Ancestor(Alice, x)?`): the queried tensor with the
    query's constants selected, and for a Boolean tensor the matching tuples."""
    text: str
    tensor: str
    value: np.ndarray  # the tensor with the query's constants selected
    free: tuple[str, ...]  # the query's variables, one per axis of value
    tuples: list[tuple] | None  # Boolean queries: the matching tuples, by name
    # a numeric query over values (`Count[x]?` with `x` over names): per axis of
    # value, its values by position (None: a positional axis); None where none has
    keys: tuple[Any, ...] | None = None


@dataclass
class RunResult:
    """What a run gives back: `outputs` (each export, or with none each leaf
    tensor, by name), the queries' answers, the sink files written, and what a
    targeted run left out.  `relation(name)` reads a Boolean output as tuples of
    values; `why(...)` explains a tuple or a number.  In a notebook it displays
    as the editor's results view does (docs/notebooks.md)."""
    outputs: dict[str, np.ndarray]
    queries: list[QueryAnswer] = field(default_factory=list)
    sinks: list[str] = field(default_factory=list)
    # a run of some targets only: what it left out and why (check.cone)
    not_run: list[NotRun] = field(default_factory=list)
    # trace=True: per equation and per fixpoint round what ran (run.trace; plain data)
    trace: dict | None = None
    # projection="monte_carlo": per estimated tensor its sampled index, samples and
    # standard error (run.interpret.monte_carlo; plain data)
    estimates: dict[str, dict] = field(default_factory=dict)
    # backend="auto": {"backend", "device", "why"} of the choice (run.config)
    backend: dict | None = None
    # the rounds each recursive group (by its tensors) took to its fixpoint
    rounds: dict[tuple[str, ...], int] = field(default_factory=dict)
    # the RunPlan this run executed (run.run_plan)
    plan: Any = None
    # what `why` reads: the program and the run's inputs (run.why.explainer)
    explainer: Any = field(default=None, repr=False, compare=False)
    # how long `execute` took, planning included (seconds)
    seconds: float = 0.0
    # (file name, SVG or PNG bytes) of each output's picture, shown with the result in
    # a notebook: `fuse_lang.plot(result)` or `%%fuse --plot` draws them (ide.plots)
    pictures: list[tuple[str, bytes]] = field(default_factory=list, repr=False, compare=False)

    def why(self, name: str, index: Any, *, limit: int = 50, top: int = 5) -> Any:
        """Why a tuple holds (a `Derivation`: a minimal-height derivation tree, cut
        after `limit` nodes), why it does not (a `WhyNot`), or why an element of a
        numeric tensor is what it is (a `NumberWhy`: per equation the `top` terms of
        its sum).  `index`: the tuple's values (`("Alice", "Eve")`) or the element's
        positions (`(3,)`).  Plain frozen dataclasses (run.why.data; docs/why.md);
        computed on the first call from a re-evaluation of the run's inputs."""
        if self.explainer is None:
            raise FuseError("this result keeps nothing to explain (it was not made by "
                            "CompiledProgram.execute)")
        return self.explainer.why(name, index, limit=limit, top=top)

    def __repr__(self) -> str:
        outputs = ", ".join(f"{name} {tuple(getattr(v, 'shape', ()))}"
                            for name, v in self.outputs.items())
        queries = "; ".join(q.text for q in self.queries)
        return (f"RunResult(outputs: {outputs or 'none'}"
                + (f"; queries: {queries}" if queries else "")
                + (f"; sinks: {', '.join(map(str, self.sinks))}" if self.sinks else "") + ")")

    def relation(self, name: str) -> Any:
        """The output `name`, a relation (a Boolean tensor), as a `Relation`: its
        tuples as values (symbols, ints, floats) with `.tuples()`, `.to_pandas()`;
        FuseError for a name that is not a relation among the outputs."""
        from .relation import of_output

        if name not in self.outputs:
            raise FuseError(f"`{name}` is not among this run's outputs (those are: "
                            f"{', '.join(self.outputs) or 'none'})")
        relation = of_output(name, self.outputs[name], getattr(self.plan, "analysis", None))
        if relation is None:
            raise FuseError(f"`{name}` is not a relation (a Boolean tensor): its value is "
                            f"result.outputs[{name!r}]")
        return relation

    def relations(self) -> dict[str, Any]:
        """Every relation among the outputs, by name, as a `Relation`."""
        analysis = getattr(self.plan, "analysis", None)
        if analysis is None:
            return {}
        return {name: self.relation(name) for name in self.outputs
                if name in analysis.tensors and analysis.tensors[name].boolean}

    def _repr_html_(self) -> str | None:
        from .display import rich

        return rich(self, "text/html")

    def _repr_markdown_(self) -> str | None:
        from .display import rich

        return rich(self, "text/markdown")
