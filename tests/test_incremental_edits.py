"""The incremental analysis after an editor's edits equals a fresh one: the
edits of `tests/lsp/random_edits.py` (ranges past a line's or the document's
end taken as LSP says, CRLF and lone CR endings, surrogate pairs, deletions
across lines, statements that define and undefine names, lines repeated),
applied to the text, and one `Analyzer` shown some versions and not others
(as the server's, which analyses the versions its debounce lets through).

The Analyzer is handed whole texts, never an edit's range: its parse finds
what changed from the last text it parsed (front/syntax.py: `splice`, by the
texts' common prefix and suffix), so no range an editor sends can disagree
with the text it changed.  The same edits go through the real server in
tests/lsp/test_edit_drift.py."""
from __future__ import annotations

import random

import pytest
from lsp import random_edits
from test_incremental import same

from fuse_lang.check import Analyzer, analyze

EXAMPLES = random_edits.EXAMPLES
PATH = str(EXAMPLES / "edited.fuse")  # never written: the data files beside it are read


def _edits(seed: int, blocks: int, edits: int, skip: int) -> None:
    rng = random.Random(seed)
    encoding = ("utf-16", "utf-8")[seed % 2]
    text = "".join(random_edits.base_text(rng) for _ in range(blocks))
    analyzer = Analyzer()
    analyzer.analyze(text, PATH)
    next_at = 0
    for step in range(edits):
        if blocks > 1 and len(text) < 1500 * blocks:  # a long file stays long
            edit = random_edits.Edit((10**6, 0), (10**6, 0), random_edits.base_text(rng))
        else:
            edit = random_edits.random_edit(rng, text, encoding)
        text = random_edits.apply(text, edit, encoding)
        if step < next_at:
            continue
        next_at = step + rng.randint(1, skip)
        got = analyzer.analyze(text, PATH)
        want = analyze(text, PATH)
        assert got.diagnostics == want.diagnostics, (seed, step, edit, text)
        if step % 10 == 0:
            same(got, want, program=step % 20 == 0)


@pytest.mark.parametrize("seed", range(3))
def test_editor_edits_of_a_short_file_match_analysing_from_scratch(seed):
    _edits(seed, blocks=1, edits=300, skip=3)


@pytest.mark.parametrize("seed", range(2))
def test_editor_edits_of_a_long_file_match_analysing_from_scratch(seed):
    """Long enough (hundreds of lines) for the parse to find again only the
    statements near each edit and take the rest from the last parse."""
    _edits(10 + seed, blocks=8, edits=60, skip=2)
