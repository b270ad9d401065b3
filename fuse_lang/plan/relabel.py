"""An equation's contractions made from those of an earlier equation of its form.

A long program repeats a few forms of equation under other tensor names
(plan.forms), and what the planner finds for a form — each join's einsum, path,
costs and notes — is the same for every equation of it; only the texts that
name its tensors (`W[d,e] N2[p,d] -> [p,e]`, the operands), and where its first
factor starts, are the equation's own.  `saved_form` keeps a planned
equation's contractions with, for each of its factors, the factor's place in
the form's walk order (plan.forms: the same node of every equation of the
form); `relabelled` puts another equation's nodes in.  A form whose
contractions name tensors in their notes (gathered operands) or whose
equation has comparison factors (their texts) is not saved: each such
equation is planned in full.
"""
from __future__ import annotations

from typing import Any, Sequence

from ..front import ir
from ..front.ir_text import index_text
from ..speed.fastinit import frozen_dataclass


@frozen_dataclass
class SavedForm:
    """The contractions of one planned equation of a form, and its indices' scope
    labels; `items`: per contraction, (the contraction, then None where it names no
    factor, else each factor's (place, text after its name or None, whether a
    reference), the factors' operators, and the text after the factors)."""
    items: tuple[tuple[Any, Any, Any, str], ...]
    roles: tuple[tuple[str, str | None], ...]  # each index role's (name, scope kind)
    scopes: tuple[str | None, ...]
    figures: tuple  # (output indices, flops, largest intermediate, joined, projected)

    def scopes_of(self, roles: Sequence[Any]) -> tuple[str | None, ...] | None:
        """The scope labels of an equation of this form with these index roles (None:
        they are not this form's, so the equation is planned in full)."""
        if len(roles) != len(self.roles):
            return None
        for role, (name, kind) in zip(roles, self.roles):
            if role.name != name or (None if role.scope is None else role.scope.kind) != kind:
                return None
        return self.scopes


def saved_form(contractions: Sequence[Any], joins: Sequence[Any], read: dict[int, Any],
               costs: Sequence[tuple], nodes: Sequence[ir.Expr], roles: Sequence[Any],
               scopes: Sequence[str | None], figures: tuple) -> SavedForm | None:
    """What `relabelled` needs of a planned equation (`joins`, `read` and `costs`
    as the planner had them); None where it cannot be relabelled."""
    place = {id(node): n for n, node in enumerate(nodes)}
    items = []
    for contraction, join, cost in zip(contractions, joins, costs):
        if join.kind == "einsum" and cost[0] is None:  # too many indices: no names in it
            items.append((contraction, None, None, ""))
            continue
        if join.kind == "einsum" and any(
                op is not None and op.gathered for op in [read.get(id(f)) for f in join.factors]):
            return None  # its note names the gathered references
        kept = cost[0].kept if join.kind == "einsum" else cost[0]
        factors = []
        for factor in join.factors:
            at = place.get(id(factor))
            if at is None:
                return None
            suffix = reference_text(factor)[len(factor.name):] \
                if isinstance(factor, ir.Ref) and factor.indices else None
            factors.append((at, suffix, isinstance(factor, ir.Ref)))
        items.append((contraction, tuple(factors), join.ops, f" -> [{','.join(kept)}]"))
    return SavedForm(tuple(items),
                     tuple((r.name, None if r.scope is None else r.scope.kind) for r in roles),
                     tuple(scopes), figures)


def relabelled(saved: SavedForm, nodes: Sequence[ir.Expr], source: str) -> tuple[Any, ...]:
    """The saved contractions with the factors of the equation whose right-hand side's
    nodes (in walk order) are `nodes`: its texts, operand names and first offset."""
    out = []
    for contraction, factors, ops, tail in saved.items:
        if factors is None:
            out.append(contraction)
            continue
        text = ""
        names = []
        first = -1
        for (at, suffix, is_ref), op in zip(factors, ops):
            node = nodes[at]
            span = node.span
            part = node.name + suffix if suffix is not None \
                else " ".join(source[span.start:span.end].split())  # (as factor_text)
            names.append(node.name if is_ref else part)
            text = part if not text else f"{text} / {part}" if op == "/" else f"{text} {part}"
            if first < 0 or span.start < first:
                first = span.start
        c = contraction
        # (type(c): the planner's Contraction, a module above this one)
        out.append(type(c)(text + tail, c.letters, tuple(names), c.path, c.steps,
                           c.naive_flops, c.flops, c.largest_intermediate, c.note, first,
                           c.then_project, c.gathered, c.kind))
    return tuple(out)


def factor_text(source: str, factor: ir.Expr) -> str:
    """A factor as the einsum line shows it: a reference with indices by its name and
    indices, any other factor as written, its white space made single spaces."""
    if isinstance(factor, ir.Ref) and factor.indices:
        return reference_text(factor)
    return " ".join(source[factor.span.start:factor.span.end].split())


def reference_text(ref: ir.Ref) -> str:
    """`X[n,x+dx,i]`: a reference as the einsum line shows it."""
    texts = [str(i.value) if isinstance(i, ir.IndexConst) else index_text(i)
             for i in ref.indices or ()]
    return f"{ref.name}[{','.join(texts)}]"
