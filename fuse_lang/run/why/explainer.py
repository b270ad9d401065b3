"""`RunResult.why`: the run's values, read on the first why, and each why answered.

The values come from a reference re-evaluation: the run's program on NumPy (the
same program when the run was NumPy's), with the run's inputs, every tensor kept
(`CompiledProgram.every_value`).  So the answer is the same whatever backend or
representation the run used, and a run that asks nothing pays nothing.
"""
from __future__ import annotations

import re
from numbers import Integral, Number
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from ...check.value_tables import position_table
from ..results import FuseError

if TYPE_CHECKING:  # (every run makes an Explainer; the search is imported on the first why)
    from .data import Derivation, NumberWhy, WhyNot
    from .model import Model

DEFAULT_LIMIT = 50  # nodes of a derivation shown before "... K more"
DEFAULT_TOP = 5  # terms of a sum shown


class Explainer:
    """What a result keeps to answer whys: its program and inputs (references)."""

    def __init__(self, program: Any, given: Mapping[str, Any]) -> None:
        self.program = program
        self.given = given
        # how a why names a source's file: {path: label}; the notebook names the
        # files it writes its variables to by the variables (notebook.magic)
        self.source_labels: dict[str, str] = {}
        # how a why names an input given at run time: {tensor: label} (the notebook
        # names an array it gives a source declared with a file by its variable)
        self.input_labels: dict[str, str] = {}
        self._model: Model | None = None

    @property
    def ready(self) -> bool:
        """Whether the run's values are read already (a why now costs its search only)."""
        return self._model is not None

    def model(self) -> Model:
        from .model import Model

        if self._model is None:
            program = self.program
            demand = getattr(program, "demand", None)
            if demand is not None and demand.source is not None:
                # demand mode ran a rewrite of the program: a why explains the program
                program = program.variant(analysis=demand.source)
            plan, values = program.every_value(self.given)
            given = {n: v for n, v in self.given.items() if n in plan.analysis.tensors}
            self._model = Model(plan.analysis, plan, values, self.program.base_dir, given,
                               self.source_labels, self.input_labels)
        return self._model

    def why(self, name: str, index: Sequence[Any], limit: int = DEFAULT_LIMIT,
            top: int = DEFAULT_TOP) -> Derivation | WhyNot | NumberWhy:
        for option, count in (("limit", limit), ("top", top)):
            if isinstance(count, bool) or not isinstance(count, Integral) or count < 1:
                raise FuseError(f"why's {option} is a whole number of 1 or more, not "
                                f"{count!r}")
        analysis = self.program.analysis
        demand = getattr(self.program, "demand", None)
        if demand is not None and demand.source is not None:
            analysis = demand.source  # (a why explains the program, not demand mode's rewrite)
        tensor = analysis.tensors.get(name)
        left_out = {n.what: n.reason for n in getattr(self.program, "not_run", ())}
        if tensor is None:
            raise FuseError(_unknown(name, analysis, left_out, demand))
        index = _as_tuple(index)
        axes = [a for a in tensor.axes if not a.virtual]
        if len(index) != len(axes):
            raise FuseError(f"`{name}` has {len(axes)} "
                            f"{'axis' if len(axes) == 1 else 'axes'}, "
                            f"but {len(index)} {'value was' if len(index) == 1 else 'values were'}"
                            f" given")
        from .data import WhyNot, show_value, tuple_text
        from .derive import NotExplained, TooLarge, derivation, why_not

        model = self.model()
        if name not in model.values and name in left_out:
            raise FuseError(_left_out(name, left_out[name]))
        if name not in model.values:
            raise FuseError(f"`{name}` is not computed by this run ("
                            + ("the run computed only its targets' dependency cone)" if left_out
                               else "nothing it exports, queries or writes reads it)"))
        # (the analysis the values were computed under: the inputs' shapes may differ)
        axes = [a for a in model.analysis.tensors[name].axes if not a.virtual]
        positions = []
        for pos, (axis, value) in enumerate(zip(axes, index)):
            position = _position(model.analysis.domain_symbols.get(axis.domain) or None, value,
                                 axis.extent)
            if position is None:
                if tensor.boolean:
                    text = tuple_text(name, tuple(index))
                    return WhyNot(name, tuple(index), text, (),
                                  f"{show_value(value)} is no value of `{name}`'s column "
                                  f"{pos + 1}: no tuple of `{name}` holds it")
                values = model.analysis.domain_symbols.get(axis.domain)
                if values:
                    shown = ", ".join(show_value(v) for v in values[:5])
                    raise FuseError(f"{show_value(value)} is not a value of `{name}`'s axis "
                                    f"{pos} (its values: {shown}"
                                    f"{', ...' if len(values) > 5 else ''})")
                whole = isinstance(value, Integral) and not isinstance(value, bool)
                raise FuseError(f"{show_value(value)} is "
                                f"{'outside' if whole else 'no position of'} `{name}`'s axis "
                                f"{pos} (positions 0 to {(axis.extent or 1) - 1})")
            positions.append(position)
        key = (name, tuple(positions))
        if not tensor.boolean:
            from .numbers import number_why

            return _at_run_precision(number_why(model, key, int(top)),
                                     self.program.config.precision)
        try:
            if model.holds(key):
                return derivation(model, key, int(limit))
            return why_not(model, key)
        except NotExplained as err:
            raise FuseError(f"{tuple_text(name, tuple(index))} holds, but the rules that give "
                            f"it are of a form why does not explain ({err}; docs/why.md)"
                            ) from None
        except TooLarge as err:
            raise FuseError(f"the why of {tuple_text(name, tuple(index))} is too large to "
                            f"search: {err}") from None


def _unknown(name: str, analysis: Any, left_out: Mapping[str, str], demand: Any) -> str:
    """Why a name the run's analysis does not hold has no why."""
    from ...check.cone import NOT_NEEDED

    if name in left_out:
        return _left_out(name, left_out[name])
    asked = demand.asked_as(name) if demand is not None else ""
    if asked:
        return (f"`{name}` is not a tensor of this program: {asked}; a why explains the "
                f"program's own relations")
    known = ", ".join(sorted(analysis.tensors)) or "none"
    broken = [n for n, reason in left_out.items() if reason != NOT_NEEDED]
    cut = f"; the run left out {', '.join(broken)} for errors, and what reads " \
        f"{'it' if len(broken) == 1 else 'them'}" if broken else ""
    return f"`{name}` is not a tensor of this program (those are: {known}{cut})"


def _left_out(name: str, reason: str) -> str:
    """Why a tensor the run left out has no why: not needed by its targets, or an error
    (a run past errors leaves out what has one, and what reads it)."""
    from ...check.cone import NOT_NEEDED

    cone = "the run computed only its targets' dependency cone" if reason == NOT_NEEDED \
        else "the run left out what has errors, and what reads it"
    return f"`{name}` is not computed by this run: {reason} ({cone})"


def _at_run_precision(answer: NumberWhy, precision: str) -> NumberWhy:
    """The answer, saying so where the run's precision is one the reference engine
    does not compute in (bf16, fp16: it re-evaluates in fp32), so that the number
    explained can differ from the run's in the digits the run's precision drops."""
    if precision not in ("bf16", "fp16"):
        return answer
    import dataclasses

    said = (f"the run computed in {precision}; these values are the reference engine's, "
            f"in fp32 (docs/why.md), so the run's value can differ in the digits "
            f"{precision} drops")
    return dataclasses.replace(answer, note=f"{answer.note}; {said}" if answer.note else said)


def _as_tuple(index: Any) -> tuple:
    """A why's index as a tuple: one value alone, or a sequence of them (a NumPy array)."""
    if isinstance(index, (str, Number)):
        return (index,)
    try:
        return tuple(index)
    except TypeError:
        raise FuseError(f"why's index is the tuple's values or the element's positions "
                        f"(`(\"Alice\", \"Eve\")`, `(3,)`), not {index!r}") from None


def _position(values: tuple | None, value: Any, extent: int | None) -> int | None:
    """A value's position on an axis (None: the axis does not hold it)."""
    if values is None:  # positional: an integer is its own position
        if isinstance(value, str) and re.fullmatch(r"-?\d+", value):
            value = int(value)
        if isinstance(value, Integral) and not isinstance(value, bool) and \
                0 <= value < (extent or 0):
            return int(value)  # (a NumPy integer too: `np.argwhere`'s positions)
        return None
    # (a quoted "25" is a string, not the integer 25: LANGUAGE.md §14; True is not 1)
    return None if isinstance(value, bool) else position_table(values).get(value)
