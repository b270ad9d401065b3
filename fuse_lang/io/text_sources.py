"""What a text source holds, read for the checker (LANGUAGE.md §8-9).

Relation files (`.csv`/`.tsv`/`.facts`/`.jsonl`/`.json` for Boolean tensors)
are read by `io.relation_files` once per compile (`io.file_reads`): the checker
numbers their columns' values per domain, the run reads the same columns
(`relation_file`).  `.txt` token files are scanned for their tokens; a dense
text source (nested JSON lists, rows of numbers) for its shape.  Every read is
bounded (`io.source_files.read_text`).  `io.sources` dispatches here by suffix;
`io.source_data` reads dense rows through `text_lines` and `parse_json`.
"""
from __future__ import annotations

from pathlib import Path
from typing import Iterable, Iterator

from .relation_files import RelationFile, json_entry, parse_json, read_relation
from .source_files import SourceError, SourceInfo, read_text


def delimited_info(path: Path, sep: str, boolean: bool, header: bool | None = None
                   ) -> SourceInfo:
    """A `.csv`/`.tsv`/`.facts` source: a relation's columns when `boolean`, else
    the shape of its rows of numbers."""
    if boolean:
        return relation_info(path, header)
    if path.suffix.lower() == ".facts":
        raise SourceError("a .facts file holds a relation's tuples: read it into a Boolean "
                          "relation, written with ( )")
    lines = _lines(read_text(path))
    rows = (line.split(sep) for line in (lines[1:] if header else lines))  # header=1: skipped
    return SourceInfo(shape=_matrix_shape(rows, 2 if header else 1))


def json_lines_info(path: Path, boolean: bool, header: bool | None = None) -> SourceInfo:
    """A `.jsonl` source: one tuple (or one value) a line."""
    if boolean:
        return relation_info(path, header)
    # (a number a line is a vector, as the run reads it: np.asarray of the lines)
    return SourceInfo(shape=_nested_shape(list(_json_lines(path))[1 if header else 0:]))


def json_info(path: Path, tensor: str, boolean: bool, header: bool | None = None
              ) -> SourceInfo:
    """A `.json` source: nested lists of numbers, or for a Boolean tensor a list of
    tuples; an object holds one such entry per tensor (or a single one)."""
    data = json_entry(parse_json(read_text(path)), tensor)
    if boolean:  # a relation's tuples, as the run reads them (io.relation_files)
        return relation_info(path, header, tensor)
    return SourceInfo(shape=_nested_shape(data[1:] if header and isinstance(data, list)
                                          else data))


def relation_file(path: Path, header: bool | None = None, tensor: str | None = None
                  ) -> RelationFile:
    """The relation in a file (io.relation_files), read once per file version
    inside a compile and its runs (io.file_reads); raises OSError or SourceError.
    `tensor`: the entry of a .json object that holds one per tensor."""
    from .file_reads import remembered

    if path.suffix.lower() != ".json":
        tensor = None  # (the same reading for every tensor)
    return remembered(path, ("relation", header, tensor),
                      lambda: read_relation(path, header, tensor=tensor))


def relation_info(path: Path, header: bool | None = None, tensor: str | None = None
                  ) -> SourceInfo:
    """What the checker learns of a relation file: each column's values in order
    of first appearance, and the order to number them in (row by row); once per
    file version inside a compile (io.file_reads)."""
    from .file_reads import remembered

    return remembered(path, ("relation info", header, tensor),
                      lambda: _relation_info(path, header, tensor))


def _relation_info(path: Path, header: bool | None, tensor: str | None) -> SourceInfo:
    relation = relation_file(path, header, tensor)
    if any(hasattr(column, "dtype") for column in relation.columns):
        from .whole_files import relation_of_columns

        values, rows, ranked = relation_of_columns(list(relation.columns))
        return SourceInfo(columns=values, rows=rows, ranked_symbols=ranked,
                          header=relation.header)
    columns: list[dict[object, None]] = [{} for _ in relation.columns]
    seen: list[tuple[int, object]] = []
    for row in zip(*relation.columns):
        for c, (col, value) in enumerate(zip(columns, row)):
            if value not in col:
                col[value] = None
                seen.append((c, value))
    return SourceInfo(columns=tuple(tuple(c) for c in columns), rows=relation.rows,
                      first_seen=tuple(seen), header=relation.header)


def tokens_info(path: Path) -> SourceInfo:
    """A `.txt` token file: the relation of positions and tokens, its vocabulary
    numbered in order of first appearance."""
    tokens = read_text(path).split()
    vocab = tuple(dict.fromkeys(tokens))
    return SourceInfo(columns=(tuple(range(len(tokens))), vocab), rows=len(tokens),
                      first_seen=tuple((1, v) for v in vocab) + (
                          ((0, len(tokens) - 1),) if tokens else ()),
                      shape=(len(tokens), len(vocab)))


def _json_lines(path: Path) -> Iterator[object]:
    for k, line in enumerate(text_lines(path), 1):
        yield parse_json(line, f"line {k} ")


def text_lines(path: Path) -> list[str]:
    """The non-blank lines of a text source, stripped (bounded, UTF-8)."""
    return _lines(read_text(path))


def _lines(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if line.strip()]


def _matrix_shape(rows: Iterable[list[str]], first: int = 1) -> tuple[int, ...]:
    """The shape of rows of numbers (`first`: the number of the first row, after
    a header skipped)."""
    width, k = -1, first - 1
    for k, row in enumerate(rows, first):
        if width < 0:
            width = len(row)
        if len(row) != width:
            raise SourceError(f"row {k} has {len(row)} number{'s' * (len(row) != 1)}, the first row "
                              f"has {width}")
        for cell in row:
            try:
                float(cell)
            except ValueError:
                hint = " (a header row? `source(\"…\", header=1)` skips it)" if k == 1 else ""
                if cell.strip().startswith('"'):
                    hint = (": a table of numbers has no quoting (a cell in quotes, or a quoted "
                            "field's comma, is no number); write its numbers unquoted")
                raise SourceError(f"row {k} holds {cell.strip()!r}, not a number{hint}"
                                  ) from None
    if width < 0:
        return (0,)
    k -= first - 1
    return (k, width) if width > 1 else (k,)


def _nested_shape(data: object) -> tuple[int, ...]:
    shape: list[int] = []
    level = [data]
    while level and all(isinstance(x, list) for x in level):
        lengths = {len(x) for x in level}
        if len(lengths) != 1:
            raise SourceError("the nested lists are not rectangular")
        shape.append(lengths.pop())
        level = [y for x in level for y in x]  # type: ignore[union-attr]
    for x in level:  # (null is NaN, as a .json sink writes NaN: docs/language.md)
        if x is not None and not isinstance(x, (int, float, bool)):
            raise SourceError(f"holds {x!r}, not a number")
    return tuple(shape)
