"""What a text source holds, read for the checker (LANGUAGE.md §8-9).

Relation files (`.csv`/`.tsv`/`.jsonl`/`.json` for Boolean tensors, `.txt`
token files) are scanned for their tuples' symbols, which the checker numbers
per domain; a dense text source (nested JSON lists, rows of numbers) for its
shape.  A large plain `.csv`/`.tsv` is read whole, column by column
(`io.whole_files`), once per compile (`io.file_reads`).  Every read is bounded
(`io.source_files.read_text`).  `io.sources` dispatches here by suffix;
`io.source_data` reads the rows through `file_columns`, `text_lines` and
`parse_json`.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Iterable, Iterator

from .source_files import SourceError, SourceInfo, read_text


def delimited_info(path: Path, sep: str, boolean: bool) -> SourceInfo:
    """A `.csv`/`.tsv` source: a relation's columns when `boolean`, else the shape
    of its rows of numbers."""
    if boolean:
        from .file_reads import remembered

        whole = remembered(path, ("relation", sep), lambda: _whole_relation(path, sep))
        if whole is not None:
            return whole
    rows = (line.split(sep) for line in _lines(read_text(path)))
    return _relation(rows) if boolean else SourceInfo(shape=_matrix_shape(rows))


def json_lines_info(path: Path, boolean: bool) -> SourceInfo:
    """A `.jsonl` source: one tuple (or one value) a line."""
    rows = (item if isinstance(item, list) else [item] for item in _json_lines(path))
    return _relation(rows) if boolean else SourceInfo(shape=_nested_shape(list(rows)))


def json_info(path: Path, tensor: str, boolean: bool) -> SourceInfo:
    """A `.json` source: nested lists of numbers, or for a Boolean tensor a list of
    tuples; an object holds one such entry per tensor (or a single one)."""
    data = parse_json(read_text(path))
    if isinstance(data, dict):
        if tensor in data:
            data = data[tensor]
        elif len(data) == 1:
            data = next(iter(data.values()))
        else:
            raise SourceError(f"holds no entry named {tensor}")
    if boolean and isinstance(data, list) and all(isinstance(r, list) for r in data):
        return _relation(data)
    return SourceInfo(shape=_nested_shape(data))


def tokens_info(path: Path) -> SourceInfo:
    """A `.txt` token file: the relation of positions and tokens, its vocabulary
    numbered in order of first appearance."""
    tokens = read_text(path).split()
    vocab = tuple(dict.fromkeys(tokens))
    return SourceInfo(columns=(tuple(range(len(tokens))), vocab), rows=len(tokens),
                      first_seen=tuple((1, v) for v in vocab) + (
                          ((0, len(tokens) - 1),) if tokens else ()),
                      shape=(len(tokens), len(vocab)))


def file_columns(path: Path, sep: str) -> list | None:
    """io.whole_files.split_columns of the file at `path`, once per file version
    inside a compile (io.file_reads); raises OSError or SourceError as reading does."""
    from .file_reads import remembered
    from .whole_files import split_columns

    return remembered(path, ("columns", sep), lambda: split_columns(read_text(path), sep))


def _whole_relation(path: Path, sep: str) -> SourceInfo | None:
    """A plain relation file read whole, column by column (io.whole_files);
    None when it is small or not plain."""
    from .whole_files import WHOLE_FILE_BYTES, relation_of_columns

    if path.stat().st_size < WHOLE_FILE_BYTES:  # (read row by row: no need to split it)
        return None
    columns = file_columns(path, sep)
    whole = relation_of_columns(columns) if columns is not None else None
    if whole is None:
        return None
    return SourceInfo(columns=whole[0], rows=whole[1], first_seen=whole[2],
                      ranked_symbols=whole[3])


def parse_json(text: str, where: str = "") -> object:
    """JSON text as Python data; SourceError (`where`: "line 3 ") when it is not JSON
    or nests too deeply to read."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        raise SourceError(f"{where}is not JSON ({err.msg})" if where else
                          f"not JSON ({err})") from None
    except RecursionError:
        raise SourceError(f"{where or 'the JSON '}nests too deeply to read") from None


def _json_lines(path: Path) -> Iterator[object]:
    for k, line in enumerate(text_lines(path), 1):
        yield parse_json(line, f"line {k} ")


def text_lines(path: Path) -> list[str]:
    """The non-blank lines of a text source, stripped (bounded, UTF-8)."""
    return _lines(read_text(path))


def _lines(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if line.strip()]


def _cell(text: str) -> object:
    text = str(text).strip()
    if text.lstrip("-").isdigit():
        return int(text)
    return text


def _relation(rows: Iterable[list]) -> SourceInfo:
    """The columns' values of a relation's rows (read one by one: a large file's
    rows are never all held at once)."""
    width = -1
    columns: list[dict[object, None]] = []
    seen: list[tuple[int, object]] = []
    k = 0
    for k, row in enumerate(rows, 1):
        if width < 0:
            width = len(row)
            columns = [dict() for _ in range(width)]
        if len(row) != width:
            raise SourceError(f"row {k} has {len(row)} fields, the first row has {width}")
        for c, (col, cell) in enumerate(zip(columns, row)):
            value = _cell(cell)
            if value not in col:
                col[value] = None
                seen.append((c, value))
    if width < 0:
        return SourceInfo(columns=(), rows=0)
    return SourceInfo(columns=tuple(tuple(c) for c in columns), rows=k,
                      first_seen=tuple(seen))


def _matrix_shape(rows: Iterable[list[str]]) -> tuple[int, ...]:
    width, k = -1, 0
    for k, row in enumerate(rows, 1):
        if width < 0:
            width = len(row)
        if len(row) != width:
            raise SourceError(f"row {k} has {len(row)} numbers, the first row has {width}")
        for cell in row:
            try:
                float(cell)
            except ValueError:
                raise SourceError(f"row {k} holds {cell.strip()!r}, not a number") from None
    if width < 0:
        return (0,)
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
    for x in level:
        if not isinstance(x, (int, float, bool)):
            raise SourceError(f"holds {x!r}, not a number")
    return tuple(shape)
