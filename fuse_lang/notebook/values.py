"""Notebook values as a program's sources (`%%fuse --input NAME=VAR`;
docs/notebooks.md, "Python data in").

A value becomes a source file in a folder of the cell's run, declared after the
cell's last line (so every line and column of the cell keeps its number):

- a NumPy array (or anything `np.asarray` reads as numbers): a dense tensor,
  `NAME[i0,i1] = "<folder>/NAME.npy"`; a SciPy sparse array (a tensor a cell
  kept sparse): `NAME[i0,i1] = "<folder>/NAME.npz"`, read sparse;
- a pandas or polars DataFrame: a relation whose columns are the atom's
  positions, in order, and whose cells are values (symbols, ints, floats),
  `NAME(c0,c1) = source("<folder>/NAME.tsv", header=0)` (its rows are data: none
  is a header); a cell that would not read back as itself (a missing value, a
  float that is not finite, an int past 64 bits) is refused;
- a set, frozenset or list of tuples (or of single values; a list of numbers is
  an array, one holding a string a relation): a relation the same way.

A source the cell declares itself (`X[p,d] = "x.npy"`) takes an array as a
runtime input instead, which overrides its file (LANGUAGE.md §9).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..front.builtins import KEYWORDS
from ..io.cells import json_value
from ..io.sinks import cells_text


class ValueProblem(Exception):
    """A notebook value that cannot be a source; the message says why."""


@dataclass
class CellSources:
    """What the cell's `--input`s add: declarations after its text, and arrays
    given at run time (for sources the cell declares itself)."""
    declarations: list[str] = field(default_factory=list)
    runtime: dict[str, np.ndarray] = field(default_factory=dict)

    def program(self, cell: str) -> str:
        """The cell's text with the declarations after its last line."""
        if not self.declarations:
            return cell
        return cell.rstrip("\n") + "\n" + "\n".join(self.declarations) + "\n"


def is_relation(value: Any) -> bool:
    """Whether a value reads as a relation (a DataFrame or a collection of tuples,
    or a list of single values holding a string: a list of numbers is an array)."""
    return _is_frame(value) or isinstance(value, (set, frozenset)) or (
        isinstance(value, list) and bool(value) and (
            isinstance(value[0], tuple) or any(isinstance(v, str) for v in value)))


def is_data(value: Any) -> bool:
    """Whether a notebook value is data a cell reads as a source by its name alone
    (issue 31: "names from the notebook's namespace are sources"): a NumPy array,
    a torch tensor or a jax.Array (a dense tensor), a SciPy sparse array, a
    DataFrame or a set or list of tuples (a relation)."""
    return (isinstance(value, np.ndarray) or is_relation(value) or _is_sparse(value)
            or (hasattr(value, "detach") and hasattr(value, "shape"))
            or _is_array_like(value))


def _is_array_like(value: Any) -> bool:
    """An array of another library that NumPy reads (`__array__`): a jax.Array
    (not a DataFrame or a Series: a relation, or a column; not a NumPy scalar: a
    number, which a cell writes as a `const`)."""
    return (hasattr(value, "__array__") and bool(getattr(value, "shape", ()))
            and hasattr(value, "dtype") and not _is_frame(value) and not hasattr(value, "index"))


def _is_frame(value: Any) -> bool:
    return hasattr(value, "itertuples") or hasattr(value, "iter_rows")


def relation_rows(value: Any) -> list[tuple]:
    """A relation value's rows as tuples of plain values."""
    if hasattr(value, "itertuples"):  # pandas
        rows = list(value.itertuples(index=False, name=None))
    elif hasattr(value, "iter_rows"):  # polars
        rows = list(value.iter_rows())
    else:
        rows = [row if isinstance(row, tuple) else (row,) for row in value]
    return [tuple(v.item() if isinstance(v, np.generic) else v for v in row) for row in rows]


def write_relation(folder: Path, name: str, value: Any) -> str:
    """Write a relation value as a .tsv of values; its declaration."""
    rows = relation_rows(value)
    arity = len(value.columns) if _is_frame(value) else (len(rows[0]) if rows else 0)
    if not arity and _is_frame(value):  # a nullary relation (as a cell gives one back):
        path = folder / f"{name}.tsv"  # true with a row, `()` its one tuple
        path.write_text("()\n" if len(value) else "", encoding="utf-8")
        return f'{name}() = source("{path.as_posix()}", header=0)'
    if not arity:
        raise ValueProblem(f"--input {name}: an empty relation has no columns to read "
                           f"(give a DataFrame with columns, or at least one tuple)")
    if any(len(row) != arity for row in rows):
        raise ValueProblem(f"--input {name}: its tuples have different lengths")
    for number, row in enumerate(rows, 1):
        for v in row:
            _check_value(name, number, v)
    path = folder / f"{name}.tsv"
    columns = [cells_text([row[a] for row in rows], alone=arity == 1) for a in range(arity)]
    lines = ["\t".join(cells) for cells in zip(*columns)]
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    positions = ",".join(f"c{a}" for a in range(arity))
    # header=0: the rows are the value's, none of them a header to guess at
    return f'{name}({positions}) = source("{path.as_posix()}", header=0)'


def _check_value(name: str, row: int, value: Any) -> None:
    """A relation value's cell must read back as itself: a symbol, an int of 64
    bits or a finite float (io.cells); ValueProblem naming its row otherwise."""
    if not isinstance(value, (str, int, float)) or isinstance(value, bool):
        raise ValueProblem(f"--input {name}: row {row}: the value {value!r} "
                           f"({type(value).__name__}) is not a symbol, an int or a float")
    try:
        json_value(value)
    except ValueError as err:
        missing = " (a missing value?)" if value != value else ""
        raise ValueProblem(f"--input {name}: row {row}: {err}{missing}; a relation's values "
                           f"are symbols, ints of 64 bits and finite floats") from None


def _is_sparse(value: Any) -> bool:
    """Whether a value is a SciPy sparse array or matrix (as a cell gives back a
    tensor it kept sparse)."""
    return type(value).__module__.startswith("scipy.sparse") and hasattr(value, "tocsr")


def write_sparse(folder: Path, name: str, value: Any) -> str:
    """Write a SciPy sparse value as the `.npz` `scipy.sparse.save_npz` writes (a
    source read sparse); its declaration."""
    import scipy.sparse

    matrix = value.tocsr()
    if matrix.dtype.kind not in "biuf":
        raise ValueProblem(f"--input {name}: a sparse array of {matrix.dtype} is not numbers")
    path = folder / f"{name}.npz"
    scipy.sparse.save_npz(path, matrix)
    return f'{name}[i0,i1] = "{path.as_posix()}"'


def as_array(name: str, value: Any) -> np.ndarray:
    """A notebook value as a dense tensor; ValueProblem when it is not numbers."""
    if hasattr(value, "detach"):  # a torch tensor
        value = value.detach().cpu().numpy()
    if _is_sparse(value):
        value = value.toarray()
    try:
        array = np.asarray(value)
    except (TypeError, ValueError) as err:
        raise ValueProblem(f"--input {name}: not an array ({err})") from None
    if array.dtype.kind not in "biuf":
        raise ValueProblem(f"--input {name}: {article(type(value).__name__)} "
                           f"{type(value).__name__} of {array.dtype} is not "
                           f"numbers; a relation is a DataFrame or a set of tuples")
    if array.ndim == 0:
        raise ValueProblem(f"--input {name}: a single number is not a tensor here; write it "
                           f"in the cell as `{name} = const({array.item()})`")
    return array


def write_array(folder: Path, name: str, value: Any) -> str:
    """Write an array as a .npy; its declaration."""
    array = as_array(name, value)
    path = folder / f"{name}.npy"
    np.save(path, array)
    axes = ",".join(f"i{a}" for a in range(array.ndim))
    return f'{name}[{axes}] = "{path.as_posix()}"'


def cell_sources(folder: Path, values: dict[str, Any], declared: set[str]) -> CellSources:
    """The sources of a cell's `--input NAME=VAR`s (`values`: by source name);
    `declared`: the sources the cell declares itself (given at run time)."""
    out = CellSources()
    for name, value in values.items():
        if name in KEYWORDS:
            raise ValueProblem(f"--input {name}: `{name}` is a keyword of Fuse, not a name "
                               f"a source can have; give the source another name "
                               f"(`--input OTHER=VARIABLE`)")
        if name in declared:
            if is_relation(value):
                raise ValueProblem(f"--input {name}: the cell declares the source `{name}` "
                                   f"with a file; remove that line to read the relation from "
                                   f"the notebook")
            out.runtime[name] = as_array(name, value)
        elif is_relation(value):
            out.declarations.append(write_relation(folder, name, value))
        elif _is_sparse(value) and getattr(value, "ndim", 2) == 2:
            out.declarations.append(write_sparse(folder, name, value))
        else:
            out.declarations.append(write_array(folder, name, value))
    return out


def article(word: str) -> str:
    """'an' before a vowel's sound as a type's name starts it (an int, an ndarray),
    else 'a'."""
    return "an" if word[:1].lower() in "aeio" or word.startswith("nd") else "a"
