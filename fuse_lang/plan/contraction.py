"""How one product of tensors is contracted: the einsum spec and the path.

The one place that decides both.  The planner (what `fuse explain`, hover and
inlay hints print) and the evaluator with its backends (what runs) call these
same functions, so the contraction that is printed is the one that runs.

- `einsum_spec` turns each operand's index names and the names summed away into
  an einsum string: letters in order of first appearance, the output in the
  left-hand side's axis order, then whatever else stays joined.
- `contraction_path` chooses the pairwise order for a spec and shapes with
  opt_einsum (`shapes=True`: no array is needed), once per spec and shapes.
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

    path, info = opt_einsum.contract_path(letters, *shapes, shapes=True, optimize="auto")
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
