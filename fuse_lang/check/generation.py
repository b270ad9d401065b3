"""What generating tokens from a program needs (docs/generation.md), read from its
analysis alone: the token input (the ids that `gather(Emb[c,d], X[n,p], axis=c)`
reads rows at), its sequence axis (the token input's last axis), the vocabulary
(gather's `axis=`), the tensor whose row at the last position gives the next
token's logits (the target, or the argument of the target's `softmax`), and the
program cut to that tensor with the token input made an input of its own.

A program that cannot generate raises GenerationProblem: a diagnostic code
(`generate-no-tokens`, `generate-no-logits`, `generate-no-window`), its words and
the place in the program it concerns."""
from __future__ import annotations

import re
from dataclasses import dataclass

from ..front import ir
from ..front.diagnostics import Diagnostic, make
from ..front.span import Span
from .analysis import Analysis
from .cone import dependency_cone, tensor_cone

# the file name of the token input in the cut program: never read (the ids are
# given to every run as an input, which takes a source's place, LANGUAGE.md §9)
TOKEN_SOURCE = "fuse-generate-tokens.npy"

SEQUENCE, VOCABULARY, BATCH = "sequence", "vocabulary", "batch"


class GenerationProblem(Exception):
    """Why a program cannot generate: a diagnostic (code, words, place)."""

    def __init__(self, code: str, message: str, span: Span) -> None:
        super().__init__(message)
        self.diagnostic: Diagnostic = make(code, message, span)


@dataclass(frozen=True)
class GenerationRoles:
    """Which tensor plays which part in generation."""

    tokens: str  # the token input: the ids gather reads rows at
    sequence: int  # the position of its sequence axis (its last)
    sequence_index: str  # that axis' index name, as the program writes it
    target: str  # the tensor asked for (`--target`, else the export over the vocabulary)
    logits: str  # the tensor read: the target, or the argument of its softmax
    probabilities: bool  # `logits` holds probabilities (a softmax's value): its log is taken
    roles: tuple[str, ...]  # per axis of `logits`: SEQUENCE, VOCABULARY or BATCH
    window: int | None  # the sequence axis' extent, where the analysis knows it
    vocabulary: int | None  # the vocabulary axis' extent
    text: str  # the program cut to `logits`, the token input a source of its own

    def token_shape(self, rank: int, window: int) -> tuple[int, ...]:
        """The token input's shape in generation: one position of every other axis."""
        return tuple(window if k == self.sequence else 1 for k in range(rank))


def generation_roles(analysis: Analysis, tokens: str | None = None,
                     target: str | None = None) -> GenerationRoles:
    """The roles of `analysis`' tensors in generation (`tokens`, `target`: chosen by
    name, else found); GenerationProblem for a program that cannot generate."""
    gathers = _gathers(analysis)
    target_name = _target(analysis, target, gathers)
    cone, _ = tensor_cone(analysis, [target_name])
    candidates = {name: vocab for name, vocab in gathers.items() if name in cone}
    token_name = _token_input(analysis, tokens, candidates, target_name)
    token_info = analysis.tensors[token_name]
    axes = [a for a in token_info.axes if not a.virtual]
    sequence = len(axes) - 1
    _, vocab_extent = candidates[token_name]
    logits, probabilities = _logits_of(analysis, target_name, vocab_extent)
    roles = _axis_roles(analysis, logits, axes, sequence, vocab_extent)
    return GenerationRoles(token_name, sequence, axes[sequence].index or f"_g{sequence}",
                           target_name, logits, probabilities, roles, axes[sequence].extent,
                           vocab_extent, _cut_text(analysis, logits, token_name))


def _gathers(analysis: Analysis) -> dict[str, tuple[int, int | None]]:
    """Each tensor read as gather's ids (`gather(Emb[c,d], X[n,p], axis=c)`: X), with
    the domain and extent of the axis read along (c: the vocabulary)."""
    found: dict[str, tuple[int, int | None]] = {}
    for k, stmt in enumerate(analysis.program.statements):
        if not isinstance(stmt, ir.Equation):
            continue
        for node in ir.walk(stmt.rhs):
            if not (isinstance(node, ir.Call) and node.name == "gather" and len(node.args) == 2
                    and isinstance(node.args[1], ir.Ref) and node.args[1].indices):
                continue
            axis = next((kw.value for kw in node.kwargs if kw.name == "axis"), None)
            if isinstance(axis, ir.Ref) and (k, axis.name) in analysis.var_extents:
                extent, domain = analysis.var_extents[(k, axis.name)]
                found.setdefault(node.args[1].name, (domain, extent))
    return {n: v for n, v in found.items() if n in analysis.tensors}


def _place(analysis: Analysis, name: str | None) -> Span:
    """Where a problem about tensor `name` is reported: its first definition, else
    the program's start."""
    info = analysis.tensors.get(name) if name else None
    if info is not None and info.statements:
        return analysis.program.statements[info.statements[0]].span
    return Span(0, 0)


def _target(analysis: Analysis, target: str | None,
            gathers: dict[str, tuple[int, int | None]]) -> str:
    if target is not None:
        if target not in analysis.tensors:
            raise GenerationProblem("generate-no-logits", f"`{target}` is not a tensor of this "
                                    f"program: the target names the tensor of the next "
                                    f"token's logits or probabilities", Span(0, 0))
        return target
    if not gathers:
        raise GenerationProblem(
            "generate-no-tokens", "this program reads no token ids: generation feeds integer "
            "ids to the tensor that a `gather(Emb[c,d], X[n,p], axis=c)` reads rows at (a "
            "one-hot input is not one)",
            _place(analysis, analysis.exports[0] if analysis.exports else None))
    fitting = [n for n in analysis.exports if n in analysis.tensors and any(
        _has_axes(analysis, n, tokens, extent) for tokens, (_, extent) in gathers.items())]
    if len(fitting) != 1:
        said = "no export" if not fitting else f"several exports ({', '.join(fitting)})"
        raise GenerationProblem(
            "generate-no-logits", f"{said} of this program has both the token input's "
            f"sequence axis and the vocabulary axis: name the tensor of the next token's "
            f"logits or probabilities (`--target NAME`, `target=`)",
            _place(analysis, (fitting or analysis.exports or [None])[0]))
    return fitting[0]


def _has_axes(analysis: Analysis, name: str, tokens: str, vocabulary: int | None) -> bool:
    """Whether `name` has the last axis of `tokens` (the sequence) and another of
    the vocabulary's extent."""
    token_axes = [a for a in analysis.tensors[tokens].axes if not a.virtual]
    if not token_axes:
        return False
    sequence = token_axes[-1].domain
    axes = [a for a in analysis.tensors[name].axes if not a.virtual]
    return any(a.domain == sequence for a in axes) and any(
        a.domain != sequence and (vocabulary is None or a.extent == vocabulary) for a in axes)


def _token_input(analysis: Analysis, tokens: str | None,
                 candidates: dict[str, tuple[int, int | None]], target: str) -> str:
    shown = ", ".join(sorted(candidates)) or "none"
    if tokens is not None:
        if tokens not in candidates:
            raise GenerationProblem(
                "generate-no-tokens", f"`{tokens}` is not read as token ids by the target "
                f"`{target}`: the token input is the ids argument of a `gather(...)` that "
                f"`{target}` depends on (those here: {shown})", _place(analysis, tokens))
        return tokens
    if not candidates:
        raise GenerationProblem(
            "generate-no-tokens", f"`{target}` reads no token ids: generation feeds integer "
            f"ids to the tensor that a `gather(Emb[c,d], X[n,p], axis=c)` reads rows at "
            f"(a one-hot input is not one)", _place(analysis, target))
    if len(candidates) > 1:
        raise GenerationProblem(
            "generate-no-tokens", f"`{target}` reads several tensors of token ids ({shown}): "
            f"choose one with `--tokens NAME` (`tokens=`)", _place(analysis, target))
    name = next(iter(candidates))
    if not [a for a in analysis.tensors[name].axes if not a.virtual]:
        raise GenerationProblem("generate-no-tokens", f"the token input `{name}` has no "
                                f"axis: its last axis is the sequence of tokens",
                                _place(analysis, name))
    return name


def _logits_of(analysis: Analysis, target: str, vocabulary: int | None) -> tuple[str, bool]:
    """The tensor to read and whether it holds probabilities: the argument of the
    target's `softmax` along the vocabulary (`P[n,p,c.] = softmax(Logits[n,p,c])`),
    else the target itself (a softmax of something else: probabilities)."""
    info = analysis.tensors[target]
    if len(info.statements) != 1:
        return target, False
    k = info.statements[0]
    stmt = analysis.program.statements[k]
    if not (isinstance(stmt, ir.Equation) and isinstance(stmt.rhs, ir.Call)
            and stmt.rhs.name == "softmax"):
        return target, False
    along = _normalised_axis(stmt)
    if along is None or analysis.var_extents.get((k, along), (-1, None))[0] != vocabulary:
        return target, False
    inner = stmt.rhs.args[0] if stmt.rhs.args else None
    lhs_names = [i.name for i in stmt.lhs.indices or () if isinstance(i, ir.IndexVar)]
    if isinstance(inner, ir.Ref) and inner.name in analysis.tensors and inner.indices \
            and [i.name for i in inner.indices if isinstance(i, ir.IndexVar)] == lhs_names \
            and len(inner.indices) == len(lhs_names):
        return inner.name, False
    return target, True


def _normalised_axis(stmt: ir.Equation) -> str | None:
    call = stmt.rhs
    assert isinstance(call, ir.Call)
    for kw in call.kwargs:
        if kw.name == "axis" and isinstance(kw.value, ir.Ref):
            return kw.value.name
    names = [i for i in stmt.lhs.indices or () if isinstance(i, ir.IndexVar)]
    dotted = [i.name for i in names if i.dotted]
    return dotted[0] if dotted else (names[-1].name if names else None)


def _axis_roles(analysis: Analysis, logits: str, token_axes: list, sequence: int,
                vocabulary: int | None) -> tuple[str, ...]:
    """Each axis of `logits`: the sequence, one of the token input's other axes (a
    batch, one position), or the vocabulary (the extent of gather's axis: the
    embedding's and the output layer's rows are axes of different tensors);
    GenerationProblem otherwise."""
    seq_domain = token_axes[sequence].domain
    batch = {a.domain for k, a in enumerate(token_axes) if k != sequence}
    roles = []
    info = analysis.tensors[logits]
    for axis in info.axes:
        if axis.virtual:
            continue
        if axis.domain == seq_domain:
            roles.append(SEQUENCE)
        elif axis.domain in batch:
            roles.append(BATCH)
        elif vocabulary is None or axis.extent == vocabulary:
            roles.append(VOCABULARY)
        else:
            raise GenerationProblem(
                "generate-no-logits", f"`{logits}`{info.axes_text} has the axis "
                f"`{axis.index}`, which is neither the token input's sequence, the "
                f"vocabulary nor another axis of the token input: the next token's logits "
                f"are one row over the vocabulary per position", _place(analysis, logits))
    if roles.count(VOCABULARY) != 1 or roles.count(SEQUENCE) != 1:
        raise GenerationProblem(
            "generate-no-logits", f"`{logits}`{info.axes_text} needs one axis over the "
            f"vocabulary and one along the token input's sequence (its positions)",
            _place(analysis, logits))
    return tuple(roles)


def _cut_text(analysis: Analysis, logits: str, tokens: str) -> str:
    """The program cut to `logits`' cone, the token input's own statements (and what
    only they read: the training data) left out and the token input declared as a
    source (given at each run)."""
    cone = dependency_cone(analysis, [logits], leaves=[tokens])
    axes = [a for a in analysis.tensors[tokens].axes if not a.virtual]
    names = [a.index if re.fullmatch(r"[a-z_][A-Za-z0-9_]*'*", a.index or "") else f"_g{k}"
             for k, a in enumerate(axes)]
    return cone.text + f'\n{tokens}[{",".join(names)}] = "{TOKEN_SOURCE}"\n'
