"""Random incremental edits as editors send them, for the tests and for
`benchmarks/edit_drift.py`: ranges at valid positions and past the end of a
line or of the document (LSP says the server takes those as the line's end and
the document's end), in a text of CRLF and lone CR endings and characters
outside the BMP (a surrogate pair in UTF-16: a position may fall between its
halves), replacing them with statements that define and undefine names,
comments and strings with emoji, brackets left open, deletions across lines.

The text each edit leaves is computed here apart from the server
(`lsp_text.offset`: LSP's clamping), so the tests can compare what the server
says of its copy with a fresh analysis of this one."""
from __future__ import annotations

import random
from pathlib import Path
from typing import NamedTuple

from lsprotocol import types

from . import lsp_text

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
BASES = ("embedding_temperatures.fuse", "embedding_annealing.fuse", "datalog.fuse")

# statements that define or undefine the names the bases read, and pieces of them
PIECES = (
    "ScoreR[x,y] = EmbR[i,j] Emb[x,i] Emb[y,j]\n", "ScoreR", "Score", "EmbR", "R0",
    "Theta = const(0.5)\r\n", "Cold  = const(0)\r", "R2[x,y] = sig(ScoreR[x,y] - Theta, Hot)\n",
    "Ancestor(x,z) = Ancestor(x,y) Parent(y,z)\n", "Parent(Bob, Carol)\n", "export R0, G2\n",
    "axis q = 3\r\n", "\n", "\r\n", "\r", "\n\n", " ", "# \U0001f600 note\n", '"\U0001f600"',
    "\U0001f600", "\U0001d538", "\u00e9", "(", ")", "[", "]", ";", "= ", "#", '"', ",", "x",
    # another language's comments (a syntax error at the mark, whatever follows it)
    "// it's \u00e9t\u00e9\n", "/* x */", "/", "*", "-- note\r\n", "-",
)
HUGE = 2**31 - 1  # LSP's largest uinteger: an editor's "to the end of the line"


class Edit(NamedTuple):
    """One didChange: a range of (line, character) positions as sent, and its text;
    `start` None: the whole document replaced."""

    start: tuple[int, int] | None
    end: tuple[int, int] | None
    text: str


def base_text(rng: random.Random) -> str:
    """One of the examples, its line endings \\n, \\r\\n or mixed, with an emoji."""
    text = (EXAMPLES / rng.choice(BASES)).read_text(encoding="utf-8")
    roll = rng.random()
    if roll < 0.35:
        text = text.replace("\n", "\r\n")
    elif roll < 0.5:
        text = "".join(line + rng.choice(("\n", "\r\n", "\r"))
                       for line in text.split("\n"))
    return "# \U0001f600 \u00e9t\u00e9\n" + text


def apply(text: str, edit: Edit, encoding: str) -> str:
    """`text` after `edit`, positions clamped as LSP says (lsp_text.offset)."""
    if edit.start is None or edit.end is None:
        return edit.text
    start = lsp_text.offset(text, position(edit.start), encoding)
    end = lsp_text.offset(text, position(edit.end), encoding)
    return text[:start] + edit.text + text[max(start, end):]


def random_edit(rng: random.Random, text: str, encoding: str,
                out_of_range: bool = True) -> Edit:
    """An edit of `text`: its range valid, or (with `out_of_range`) with a position
    past a line's end, past the document's end or between a surrogate pair's
    halves; start <= end as positions."""
    if rng.random() < 0.01:
        return Edit(None, None, base_text(rng))
    if len(text) > 6000 and rng.random() < 0.7:
        new = ""
    elif len(text) < 600 and rng.random() < 0.2:  # an example pasted: the text grows again
        new = base_text(rng)
    elif rng.random() < 0.2:  # a line of the text again: a statement twice
        starts = lsp_text.line_starts(text) + [len(text)]
        k = rng.randrange(len(starts) - 1)
        new = text[starts[k]:starts[k + 1]]
    else:
        new = "".join(rng.choice(PIECES) for _ in range(rng.randint(0, 3)))
    start = _offset(rng, text)
    roll = rng.random()
    if roll < 0.45:
        end = start
    elif roll < 0.85:
        end = min(len(text), start + rng.choice((1, 2, 5, 20, 80)))
    else:  # whole lines, across several
        end = min(len(text), start + rng.randint(50, 400))
    while 0 < end < len(text) and text[end - 1] == "\r" and text[end] == "\n":
        end += 1
    first = _as_sent(lsp_text.position(text, start, encoding))
    last = _as_sent(lsp_text.position(text, end, encoding))
    if out_of_range and rng.random() < 0.5:
        first, last = _out_of_range(rng, text, encoding, first, last)
    return Edit(first, last, new)


def _offset(rng: random.Random, text: str, least: int = 0) -> int:
    """An offset from `least` on that an LSP position can name (not between "\\r"
    and "\\n")."""
    while True:
        k = rng.randrange(least, len(text) + 1)
        if not (0 < k < len(text) and text[k - 1] == "\r" and text[k] == "\n"):
            return k


def _out_of_range(rng: random.Random, text: str, encoding: str, first: tuple[int, int],
                  last: tuple[int, int]) -> tuple[tuple[int, int], tuple[int, int]]:
    """`first` and `last` with one or both made to point past their line's end,
    past the document's end, or inside a surrogate pair."""
    lines = len(lsp_text.line_starts(text))
    roll = rng.random()
    if roll < 0.35:  # the end past its line's end (as "to the end of the line")
        last = (last[0], min(HUGE, _line_units(text, last[0], encoding)
                             + rng.choice((1, 7, 300, HUGE))))
    elif roll < 0.55:  # both past their lines' ends
        first = (first[0], _line_units(text, first[0], encoding) + rng.randint(1, 40))
        last = (last[0], max(last[1], _line_units(text, last[0], encoding)) + rng.randint(1, 40))
        if first[0] == last[0]:
            last = (last[0], max(first[1], last[1]))
    elif roll < 0.8:  # the end past the document's end: the last characters deleted
        tail = _offset(rng, text, max(0, len(text) - 60))
        first = min(first, _as_sent(lsp_text.position(text, tail, encoding))) \
            if rng.random() < 0.2 else _as_sent(lsp_text.position(text, tail, encoding))
        last = (lines + rng.choice((0, 1, 5, 1000)), rng.choice((0, 3, HUGE)))
    elif roll < 0.9:  # both past the document's end: an insertion at the end
        first = (lines + rng.randint(0, 3), rng.randint(0, 50))
        last = (first[0] + rng.randint(0, 2), first[1] + rng.randint(0, 50))
    else:  # between the halves of a surrogate pair (taken as after it)
        inside = _inside_pair(rng, text, encoding)
        if inside is not None:
            first = min(first, inside)
            last = max(last, inside)
    return first, last


def _inside_pair(rng: random.Random, text: str, encoding: str) -> tuple[int, int] | None:
    """A UTF-16 position between the two halves of a character past U+FFFF."""
    if encoding != "utf-16":
        return None
    wide = [k for k, char in enumerate(text) if ord(char) > 0xFFFF]
    if not wide:
        return None
    k = rng.choice(wide)
    line, character = _as_sent(lsp_text.position(text, k, encoding))
    return line, character + 1


def _line_units(text: str, line: int, encoding: str) -> int:
    """The length of `line`'s text (without its ending) in code units."""
    starts = lsp_text.line_starts(text)
    end = starts[line + 1] if line + 1 < len(starts) else len(text)
    body = text[starts[line]:end].rstrip("\r\n")
    return lsp_text.position(body, len(body), encoding).character


def _as_sent(position: types.Position) -> tuple[int, int]:
    return position.line, position.character


def position(pair: tuple[int, int]) -> types.Position:
    """A (line, character) pair as an LSP Position."""
    return types.Position(line=pair[0], character=pair[1])
