"""How one product of tensors is contracted: the einsum spec and the path.

The one place that decides both.  The planner (what `fuse explain`, hover and
inlay hints print) and the evaluator with its backends (what runs) call these
same functions, so the contraction that is printed is the one that runs.

- `einsum_spec` turns each operand's index names and the names summed away into
  an einsum string: letters in order of first appearance, the output in the
  left-hand side's axis order, then whatever else stays joined.
- `contraction_path` chooses the pairwise order for a spec and shapes with
  opt_einsum (`shapes=True`: no array is needed), once per spec and shapes.
  An index that occurs in one operand only and is not kept is summed out of
  that operand first (a database projects a column before a join): opt_einsum
  would carry it into a pairwise step and pay its extent there.  For a sum
  this is exact by distributivity; for a Boolean join (the step of the sum,
  LANGUAGE.md §6) it is the "exists" of that column, which is what the join
  asks (docs/language.md, "Datalog in Fuse").
- `planned_contraction` is that path made callable on arrays (any framework
  opt_einsum knows), for products of three or more operands.

opt_einsum is imported on first use only: `fuse check` starts without it.
"""
from __future__ import annotations

import functools
import string
from typing import Any, Collection, Iterable, NamedTuple, Sequence

LETTERS = string.ascii_letters  # einsum's alphabet: at most 52 distinct indices


class EinsumSpec(NamedTuple):
    letters: str  # "ij,j->i"
    kept: tuple[str, ...]  # the output's index names, in its axis order


class ContractionPath(NamedTuple):
    path: tuple[tuple[int, ...], ...]  # operand positions joined at each step
    steps: tuple[str, ...]  # each step as an einsum: "ij,j->i"
    naive_flops: int
    flops: int
    largest_intermediate: int


def einsum_spec(operands: Iterable[Sequence[str]], dropped: Collection[str],
                lhs_order: Sequence[str]) -> EinsumSpec | None:
    """The einsum over `operands` (each its axes' index names) that sums away the
    names in `dropped`; the kept names follow `lhs_order`, then first appearance.
    None when there are more distinct names than einsum has letters."""
    # the answer depends on the names alone, and a program repeats the same few
    # (every `A[i,j] B[j,k]` of a long program asks the same): made once per form
    return _einsum_spec(tuple(map(tuple, operands)), frozenset(dropped), tuple(lhs_order))


@functools.lru_cache(maxsize=4096)
def _einsum_spec(operands: tuple[tuple[str, ...], ...], dropped: frozenset[str],
                 lhs_order: tuple[str, ...]) -> EinsumSpec | None:
    letters: dict[str, str] = {}
    terms = []
    for names in operands:
        for name in names:
            if name not in letters:
                if len(letters) >= len(LETTERS):
                    return None
                letters[name] = LETTERS[len(letters)]
        terms.append("".join(letters[n] for n in names))
    width = len(lhs_order)
    kept = sorted((n for n in letters if n not in dropped),
                  key=lambda n: lhs_order.index(n) if n in lhs_order else width)
    return EinsumSpec(",".join(terms) + "->" + "".join(letters[n] for n in kept), tuple(kept))


@functools.lru_cache(maxsize=1024)
def contraction_path(letters: str, shapes: tuple[tuple[int, ...], ...]) -> ContractionPath:
    """The pairwise contraction order opt_einsum chooses for this einsum and these
    shapes, with its cost.  Raises ValueError (or TypeError) for an einsum it
    cannot plan."""
    import opt_einsum

    path, info = opt_einsum.contract_path(letters, *shapes, shapes=True,
                                          optimize=_local_first_path(letters, shapes))
    return ContractionPath(tuple(tuple(step) for step in path),
                           tuple(str(c[2]) for c in info.contraction_list),
                           int(info.naive_cost), int(info.opt_cost),
                           int(info.largest_intermediate))


@functools.lru_cache(maxsize=1024)
def planned_contraction(letters: str, shapes: tuple[tuple[int, ...], ...]) -> Any:
    """`contraction_path` as a callable on arrays: expr(*arrays, backend=...)."""
    import opt_einsum

    path = contraction_path(letters, shapes).path
    return opt_einsum.contract_expression(letters, *shapes, optimize=[*path])


def _local_first_path(letters: str, shapes: tuple[tuple[int, ...], ...]) -> Any:
    """opt_einsum's path for `letters`, preceded by one single-operand step per
    operand that holds an index no other operand holds and the output drops
    ("auto" when there is none).  opt_einsum takes each step's operands out of
    its list and appends the result at the end, so positions are tracked."""
    import opt_einsum

    inputs, output = letters.split("->")
    terms = inputs.split(",")
    if len(terms) < 2:
        return "auto"
    counts: dict[str, int] = {}
    for term in terms:
        for c in set(term):
            counts[c] = counts.get(c, 0) + 1
    local = [k for k, term in enumerate(terms)
             if any(counts[c] == 1 and c not in output for c in term)]
    if not local:
        return "auto"
    order: list[int] = list(range(len(terms)))  # operand k's position is order.index(k)
    steps: list[tuple[int, ...]] = []
    reduced: dict[int, tuple[str, tuple[int, ...]]] = {}
    for k in local:
        steps.append((order.index(k),))
        order.remove(k)
        order.append(k)
        kept = [(c, n) for c, n in zip(terms[k], shapes[k]) if counts[c] > 1 or c in output]
        reduced[k] = ("".join(c for c, _ in kept), tuple(n for _, n in kept))
    after = [reduced.get(k, (terms[k], shapes[k])) for k in order]
    if len(after) == 1:
        return steps + [(0,)]
    rest, _ = opt_einsum.contract_path(",".join(t for t, _ in after) + "->" + output,
                                       *(s for _, s in after), shapes=True, optimize="auto")
    return steps + [tuple(step) for step in rest]
