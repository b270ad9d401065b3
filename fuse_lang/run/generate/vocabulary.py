"""Text to token ids and back (docs/generation.md, "The vocabulary").

A vocabulary is a list of strings, the position of each its id: the characters of
a character model (`make_chars.py` writes `chars_vocab.json`).  `fuse train
--vocab FILE.json` keeps it in the checkpoint's metadata (`fuse.vocabulary`, JSON),
so that a checkpoint carries the vocabulary its params were trained with.  An
empty entry (the "rare" symbol of make_chars.py) is never matched by a prompt and
reads back as U+FFFD."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Sequence

from ..results import FuseError

METADATA_KEY = "fuse.vocabulary"
UNKNOWN = "\ufffd"  # how an empty entry (a symbol for every rare character) reads


class Vocabulary:
    """The tokens by id (a list of strings: `encode` reads text as the longest
    entries that match), or a `tokenizers` tokenizer's JSON (the library encodes
    and decodes: io.token_ids)."""

    def __init__(self, entries: Sequence[str] | dict) -> None:
        from ...io.source_files import SourceError
        from ...io.token_ids import checked_vocabulary, vocabulary_size

        try:
            self.entries = checked_vocabulary(
                entries if isinstance(entries, dict) else list(entries), "a vocabulary")
            self._size = vocabulary_size(self.entries)
        except SourceError as err:
            raise FuseError(f"{err}; its positions are the tokens' ids") from None

    def __len__(self) -> int:
        return self._size

    def encode(self, text: str) -> list[int]:
        """The ids of `text`; FuseError naming the characters no entry holds."""
        from ...io.token_ids import encode

        ids, missing_at = encode(text, self.entries)
        missing = list(dict.fromkeys(text[at] for at in missing_at))
        if missing:
            shown = ", ".join(repr(c) for c in missing[:10])
            raise FuseError(f"the prompt holds {len(missing)} character"
                            f"{'s' if len(missing) > 1 else ''} that the vocabulary does not "
                            f"({shown}); its {len(self)} tokens are those the model "
                            f"was trained on")
        return ids

    def decode(self, ids: Sequence[int]) -> str:
        from ...io.token_ids import decode

        return decode([int(i) for i in ids], self.entries, UNKNOWN)


def read_vocabulary_file(path: str | Path) -> list[str] | dict:
    """A vocabulary file: a JSON list of strings (`chars_vocab.json`), or a
    `tokenizers` tokenizer (`tokenizer.json`)."""
    from ...io.source_files import SourceError
    from ...io.token_ids import checked_vocabulary

    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as err:
        raise FuseError(f"the vocabulary {path} cannot be read: {err.strerror or err}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise FuseError(f"the vocabulary {path} is not JSON: {err}") from None
    try:
        return checked_vocabulary(data, f"the vocabulary {path}")
    except SourceError as err:
        raise FuseError(str(err)) from None


def checkpoint_vocabulary(path: str | Path) -> list[str] | dict | None:
    """The vocabulary a checkpoint's metadata holds (`fuse train --vocab`), if any."""
    from safetensors import SafetensorError, safe_open

    try:
        with safe_open(str(path), framework="numpy") as opened:
            text = (opened.metadata() or {}).get(METADATA_KEY)
    except (SafetensorError, OSError, ValueError):
        return None
    if text is None:
        return None
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        return None
    from ...io.source_files import SourceError
    from ...io.token_ids import checked_vocabulary

    try:
        return checked_vocabulary(data, "")
    except SourceError:
        return None


def text_vocabulary(analysis: Any, base_dir: str | Path) -> list[str] | dict | None:
    """The vocabulary of the program's token ids read from text (`Ids[p] =
    "corpus.txt:vocab.json"`, io.token_ids): the one vocabulary its `.txt` sources
    with a key share; None when it has none, or several that differ (then
    `vocabulary=` says which)."""
    from ...io.source_files import SourceError
    from ...io.sources import split_member
    from ...io.token_ids import is_token_ids, text_vocabulary as read_entries

    found: list[list[str] | dict] = []
    for info in analysis.tensors.values():
        file, key = split_member(info.source_path or "")
        path = Path(base_dir) / file
        if not is_token_ids(path, key):
            continue
        try:
            entries = read_entries(path, key)
        except (OSError, SourceError):  # (the run reports an unreadable source)
            continue
        if entries not in found:
            found.append(entries)
    return found[0] if len(found) == 1 else None


def weights_vocabulary(weights: Any) -> list[str] | dict | None:
    """The vocabulary of the first `.safetensors` file of a program's weights that
    holds one (a checkpoint given as `weights=` / `--params`)."""
    if weights is None:
        return None
    manifest = weights.manifest
    seen: set[Path] = set()
    for entry in manifest.tensors:
        for shard in entry.shards:
            path = Path(manifest.base_dir) / shard.file
            if path.suffix.lower() != ".safetensors" or path in seen:
                continue
            seen.add(path)
            found = checkpoint_vocabulary(path)
            if found is not None:
                return found
    return None
