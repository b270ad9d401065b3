"""What a why answers, as plain data: frozen dataclasses, and `to_json`.

A tuple that holds has a `Derivation` (a tree: each node a tuple, the rule that
gave it with its bindings and checked conditions, its children; leaves are facts,
file rows or inputs); one that does not has a `WhyNot` (per rule that could give it,
the first goal of its body that nothing matches).  An element of a numeric tensor
has a `NumberWhy` (per equation: its nonlinearity and the top terms of its sum).
"""
from __future__ import annotations

import dataclasses
import math
import re
from dataclasses import dataclass
from typing import Any

from .. import display

_SYMBOL = re.compile(r"[A-Z][A-Za-z0-9_]*")
# the levels of a derivation shown (deeper ones are cut, counted, as past the size limit)
MAX_DEPTH = 200


def show_value(value: Any) -> str:
    """A value as a program writes it: `Alice`, `"New York"`, `-7`, `2.5`."""
    if isinstance(value, str):
        if _SYMBOL.fullmatch(value):
            return value
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, float) and value.is_integer():
        return repr(value)
    return str(value)


def tuple_text(relation: str, values: tuple) -> str:
    """`Ancestor(Alice, Eve)`."""
    return f"{relation}({', '.join(show_value(v) for v in values)})"


class _Shown:
    """A why's answer in a notebook (`_repr_html_`, `_repr_markdown_`): `fuse why`'s
    text, through run.display (the renderers are the ide layer's; None until
    they are loaded, and the notebook shows the repr)."""

    __slots__ = ()

    def _repr_html_(self) -> str | None:
        return display.rich(self, "text/html")

    def _repr_markdown_(self) -> str | None:
        return display.rich(self, "text/markdown")


@dataclass(frozen=True)
class Place:
    """Where something is written: a file (the program's, or a relation file) and a
    1-based line; `text` is what that line says (the equation, the fact, the row).
    A cell of an array file (`.npy`, `.npz`) has line 0 and its positions as text
    (`[0, 1]`)."""

    file: str
    line: int
    text: str


@dataclass(frozen=True)
class Condition:
    """A condition a rule checked: `no tuple of Banned(Bob, _)`, `30 > 18`."""

    kind: str  # "not" or "comparison"
    text: str


@dataclass(frozen=True)
class Derivation(_Shown):
    """Why a tuple holds: a node of a minimal-height derivation tree."""

    relation: str
    values: tuple
    text: str  # `Ancestor(Alice, Eve)`
    height: int  # 0 for a leaf; else 1 + the largest height of its children
    kind: str  # "rule", or for a leaf "fact", "file" or "input"
    place: Place | None  # the rule's equation, the fact's line, the file's row
    bindings: tuple[tuple[str, Any], ...] = ()  # the rule's variables and their values
    conditions: tuple[Condition, ...] = ()
    children: tuple["Derivation", ...] = ()
    more: int = 0  # nodes below this one cut at the size limit ("... K more")

    def size(self) -> int:
        """The nodes shown, this one included."""
        return 1 + sum(child.size() for child in self.children)

    def to_json(self) -> dict:
        return to_json(self)


@dataclass(frozen=True)
class Blocked:
    """A rule that could give the tuple, and the first goal of its body that fails."""

    place: Place
    goal: str  # the atom, negation or comparison, its head variables replaced by values
    reason: str  # in words: `no tuple matches`, `a tuple matches`, `30 > 40 is false`


@dataclass(frozen=True)
class WhyNot(_Shown):
    """Why a tuple does not hold: each rule of its relation and where it stops."""

    relation: str
    values: tuple
    text: str
    rules: tuple[Blocked, ...]
    note: str = ""  # a relation with no rules: what it is (facts, a file, an input)

    def to_json(self) -> dict:
        return to_json(self)


@dataclass(frozen=True)
class Factor:
    """One factor of a term: its reference as written with the bindings, its value;
    for a read of one element of a tensor, which, as `why` takes it (to ask its
    own why: `result.why(f.tensor, f.index)`), else None and ()."""

    text: str
    value: float
    tensor: str | None = None
    index: tuple = ()


@dataclass(frozen=True)
class Term:
    """One term of a summed product: the projected indices' values, its factors."""

    bindings: tuple[tuple[str, Any], ...]
    factors: tuple[Factor, ...]
    value: float


@dataclass(frozen=True)
class Contribution:
    """One equation's part of a number: its sum before the nonlinearity, the top terms."""

    place: Place
    nonlinearity: str | None  # `sig`, `softmax along p'`, ... (None: none)
    projected: tuple[str, ...]  # the indices summed
    total: float  # the terms projected by `op` (before the nonlinearity)
    terms: tuple[Term, ...]  # the top ones by magnitude
    count: int  # how many terms the sum has that are not 0
    share: float  # sum of |top terms| over sum of |all terms| (1.0 when all are shown)
    note: str = ""  # a form not split into terms: what it is
    op: str = "sum"  # the projection: sum, or max, min, mean (`max=`, `min=`, `avg=`)


@dataclass(frozen=True)
class NumberWhy(_Shown):
    """Why an element of a numeric tensor has its value."""

    tensor: str
    index: tuple
    text: str  # `Y[3]`
    value: float
    parts: tuple[Contribution, ...]
    note: str = ""  # an input or a source: where the number comes from

    def to_json(self) -> dict:
        return to_json(self)


def to_json(node: Any) -> Any:
    """A why's data as JSON-ready dicts, lists and plain values (a NaN or an
    infinity as None)."""
    if dataclasses.is_dataclass(node) and not isinstance(node, type):
        out = {"type": type(node).__name__}
        for field in dataclasses.fields(node):
            out[field.name] = to_json(getattr(node, field.name))
        return out
    if isinstance(node, tuple) and len(node) == 2 and isinstance(node[0], str) \
            and not isinstance(node[1], (tuple, list)):
        return [node[0], _plain(node[1])]
    if isinstance(node, (tuple, list)):
        return [to_json(item) for item in node]
    return _plain(node)


def _plain(value: Any) -> Any:
    if hasattr(value, "item") and callable(value.item):  # a NumPy scalar
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None  # strict JSON: no NaN or infinity (a sum not split, say)
    return value
