"""A `.txt` source read as token ids with its vocabulary (docs/language.md, "Token
ids from text").

`Ids[p] = "corpus.txt:chars_vocab.json"` reads the text as the longest entries of
the vocabulary that match, from the left, one id per token (the entry's position
in the list): a one-axis tensor of ids, as `gather` and `cross_entropy` read
them.  The vocabulary is a JSON list of strings (`make_chars.py` writes
`chars_vocab.json`), found beside the text; `"corpus.txt:chars"` instead takes the
text's own distinct characters, in code-point order (the same text always gives
the same ids).  A tokenizer file of the `tokenizers` library (`tokenizer.json`:
a JSON object, BPE, WordPiece or Unigram) tokenizes with that library where it
is installed.  A character no entry holds is an error that names it and where it
is: text is never mapped to ids silently.  An empty entry (a symbol for rare
characters) is never matched.  `fuse train` keeps the vocabulary in the
checkpoint (`fuse.vocabulary`), so `fuse generate` reads prompts with it.

Without a key a `.txt` source is a position × token matrix of whitespace tokens
(io.text_sources.tokens_info): that stays as it was.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Sequence

from .source_files import SourceError, read_text

CHARACTERS = "chars"  # the key for the text's own characters


def is_token_ids(path: Path, key: str | None) -> bool:
    """Whether a source reads token ids: a `.txt` file with a vocabulary after it."""
    return key is not None and path.suffix.lower() == ".txt"


Vocabulary = list[str] | dict  # entries by id, or a `tokenizers` tokenizer (its JSON)


def text_vocabulary(path: Path, key: str, text: str | None = None) -> Vocabulary:
    """The vocabulary `key` names for the text `path` (`text`: its contents, where
    already read): its characters (`chars`), or the file `key` beside the text: a
    JSON list of strings, or a `tokenizers` tokenizer (a JSON object with a
    `model`)."""
    if key == CHARACTERS:
        return sorted(set(read_text(path) if text is None else text))
    where = path.parent / key
    try:
        data = json.loads(where.read_text(encoding="utf-8"))
    except OSError as err:
        raise SourceError(f"its vocabulary `{key}` cannot be read "
                          f"({err.strerror or err})") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise SourceError(f"its vocabulary `{key}` is not JSON ({err})") from None
    return checked_vocabulary(data, f"its vocabulary `{key}`")


def checked_vocabulary(data: object, what: str) -> Vocabulary:
    """`data` as a vocabulary (a list of strings, or a tokenizer's JSON object);
    SourceError saying what it is not."""
    if isinstance(data, dict) and isinstance(data.get("model"), dict):
        return data
    if not isinstance(data, list) or not data or not all(isinstance(e, str) for e in data):
        raise SourceError(f"{what} is not a JSON list of strings (the tokens, each at its "
                          f"id) nor a tokenizer file of the tokenizers library")
    return data


# the last tokenizer made, with the JSON it was made from (a generation encodes
# its prompt and decodes its text with one: each would parse it again)
_MADE: list = []


def tokenizer(data: dict):
    """A `tokenizers.Tokenizer` from its JSON; SourceError where the library is not
    installed."""
    if _MADE and _MADE[0] is data:
        return _MADE[1]
    try:
        from tokenizers import Tokenizer
    except ImportError:
        raise SourceError("a tokenizer file needs the tokenizers library "
                          "(pip install tokenizers)") from None
    try:
        made = Tokenizer.from_str(json.dumps(data))
    except Exception as err:  # noqa: BLE001 - the library's own exception type
        raise SourceError(f"is not a tokenizer the tokenizers library reads ({err})") from None
    _MADE[:] = [data, made]
    return made


def vocabulary_size(vocabulary: Vocabulary) -> int:
    """How many ids the vocabulary has."""
    if isinstance(vocabulary, dict):
        return tokenizer(vocabulary).get_vocab_size()
    return len(vocabulary)


def encode(text: str, vocabulary: Vocabulary) -> tuple[list[int], list[int]]:
    """`text` as ids, and the offsets of the characters no entry holds: a list by
    `longest_match_ids`, a tokenizer by the library (which has its own unknown
    token, or bytes, for what it has not seen)."""
    if isinstance(vocabulary, dict):
        return list(tokenizer(vocabulary).encode(text).ids), []
    return longest_match_ids(text, vocabulary)


def decode(ids: list[int], vocabulary: Vocabulary, unknown: str) -> str:
    """The text of `ids` (an empty entry of a list reads as `unknown`)."""
    if isinstance(vocabulary, dict):
        return tokenizer(vocabulary).decode(ids)
    return "".join(vocabulary[i] or unknown for i in ids)


def longest_match_ids(text: str, entries: Sequence[str]) -> tuple[list[int], list[int]]:
    """`text` as the ids of the longest entries that match, from the left, and the
    offsets of the characters no entry holds (each skipped)."""
    first: dict[str, int] = {}
    for k, entry in enumerate(entries):
        if entry:
            first.setdefault(entry, k)
    longest = max((len(e) for e in first), default=1)
    ids: list[int] = []
    missing: list[int] = []
    if longest == 1:  # characters: one lookup each
        get = first.get
        for at, char in enumerate(text):
            found = get(char)
            if found is None:
                missing.append(at)
            else:
                ids.append(found)
        return ids, missing
    at = 0
    while at < len(text):
        for size in range(min(longest, len(text) - at), 0, -1):
            found = first.get(text[at:at + size])
            if found is not None:
                ids.append(found)
                at += size
                break
        else:
            missing.append(at)
            at += 1
    return ids, missing


def read_token_ids(path: Path, key: str) -> tuple[list[int], Vocabulary]:
    """The token ids of the text `path` and the vocabulary they index; SourceError
    naming the first characters no entry holds, with their lines and columns."""
    from .file_reads import remembered

    return remembered(path, ("token ids", key), lambda: _read(path, key))


def _read(path: Path, key: str) -> tuple[list[int], Vocabulary]:
    text = read_text(path)
    entries = text_vocabulary(path, key, text)
    ids, missing = encode(text, entries)
    if missing:
        places = []
        for at in missing[:3]:
            line = text.count("\n", 0, at) + 1
            column = at - (text.rfind("\n", 0, at) + 1) + 1
            places.append(f"{text[at]!r} at line {line}, column {column}")
        more = f" and {len(missing) - 3} more" if len(missing) > 3 else ""
        raise SourceError(f"holds {len(missing)} character{'s' if len(missing) > 1 else ''} "
                          f"that its vocabulary `{key}` does not ({', '.join(places)}{more})")
    return ids, entries
