"""The analysis' tables made from what the checker found: each tensor's
TensorInfo, each statement variable's extent and domain, each domain's symbols.

Domains are numbered 1, 2, ... in the order these tables first meet them: the
tensors' axes, then the statements' variables, then symbol domains; so the
three are made together, in this order (`make_tables`)."""
from __future__ import annotations

from ..front import ir
from .analysis import AxisInfo, TensorInfo
from .domains import Domains
from .statements import Local
from .symbols import SUM_OPS, TensorSymbol

# a tensor's TensorInfo with what it was made of (see _tensor_infos)
InfoMemo = dict[str, tuple[tuple, TensorInfo]]


class Tables:
    """Makes the tables from the finished `domains`, `tensors` and statements'
    `locals`.  `last`: the last analysis' TensorInfos, reused where unchanged;
    with `remember`, `used` gets this analysis' for the next one."""

    def __init__(self, domains: Domains, tensors: dict[str, TensorSymbol],
                 locals_: dict[int, Local], last: InfoMemo, remember: bool) -> None:
        self.domains = domains
        self.tensors = tensors
        self.locals = locals_
        self.last = last
        self.remember = remember
        self.used: InfoMemo = {}
        self._ids: dict = {}  # domain root -> its number

    def make(self) -> tuple[dict[str, TensorInfo],
                            dict[tuple[int, str], tuple[int | None, int]],
                            dict[int, tuple[str, ...]]]:
        """tensors, var_extents and domain_symbols, in this order (it numbers the domains)."""
        return self._tensor_infos(), self._var_extents(), self._domain_symbols()

    def _number(self, root) -> int:
        ids = self._ids
        number = ids.get(root)
        if number is None:
            number = ids[root] = len(ids) + 1
        return number

    def _tensor_infos(self) -> dict[str, TensorInfo]:
        out = {}
        ids = self._ids
        tensors = self.tensors
        # every tensor's axes' domains and extents at once (a call per tensor costs)
        roots = self.domains.roots_of([("axis", name, pos) for name, sym in tensors.items()
                                       for pos in range(sym.arity or 0)])
        extents = self.domains.root_extents(roots)
        at = 0
        IndexVar = ir.IndexVar
        for name, sym in tensors.items():
            first = sym.first.indices or ()
            axes = []
            for pos in range(sym.arity or 0):
                index = first[pos] if pos < len(first) else None
                root = roots[at]
                number = ids.get(root)
                if number is None:
                    number = ids[root] = len(ids) + 1
                axes.append((index.name if type(index) is IndexVar else _axis_label(index),
                             extents[at], number, type(index) is ir.IndexVirtual))
                at += 1
            op = None
            if sym.ops:
                op = "=" if sym.ops[0] in SUM_OPS else sym.ops[0]
            key = (sym.kind, sym.boolean, tuple(axes),
                   tuple(sym.definitions), tuple(sym.statements), tuple(sym.uses),
                   sym.source.path.value if sym.source else None, op)
            entry = self.last.get(name)
            if entry is None or entry[0] != key:  # else the same TensorInfo as last time
                info = TensorInfo(name, key[0], key[1], tuple(AxisInfo(*axis) for axis in axes),
                                  *key[3:])
                if not self.remember:
                    out[name] = info
                    continue
                entry = (key, info)
            self.used[name] = entry
            out[name] = entry[1]
        return out

    def _var_extents(self) -> dict[tuple[int, str], tuple[int | None, int]]:
        out = {}
        locals_ = self.locals  # statement number -> its Local, in order
        roots = self.domains.roots_of([key for local in locals_.values()
                                       for key in local.var_keys])
        values: dict = {}  # domain root -> (extent, number): one tuple per domain
        at = 0
        for k, local in locals_.items():
            for name in local.role_names:
                root = roots[at]
                at += 1
                value = values.get(root)
                if value is None:  # once per domain
                    value = values[root] = (self.domains.root_extent(root), self._number(root))
                out[(k, name)] = value
        return out

    def _domain_symbols(self) -> dict[int, tuple[str, ...]]:
        out = {}
        for root in self.domains.roots():
            symbols = self.domains.symbols(root)
            if symbols:
                out[self._number(self.domains.find(root))] = symbols
        return out


def _axis_label(index: ir.Index | None) -> str:
    """The index name an axis is shown with: its first definition's variable."""
    if index is not None:
        vars_ = ir.index_vars(index)
        return vars_[0].name if vars_ else ""
    return ""
