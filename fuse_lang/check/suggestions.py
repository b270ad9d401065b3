"""Did-you-mean suggestions for misspelt names, at a bounded cost.

`difflib.get_close_matches` compares a name with every candidate, so a file
whose thousands of statements read one deleted tensor used to compare each
reference with every tensor name: quadratic (4,000 lines took 47 s).  Here a
suggestion is computed once per distinct name, only against candidates whose
length can reach the cutoff (the same bound difflib applies first, so the
result is exactly difflib's), and all the suggestions of one analysis share a
budget of name comparisons: past it, names are reported without a suggestion
(docs/limits.md, "Did-you-mean suggestions")."""
from __future__ import annotations

from typing import Iterable

MAX_SUGGESTIONS = 3
CUTOFF = 0.6
# Name comparisons (difflib ratios) one analysis may spend on suggestions:
# about 0.1 s; a typo in a normal file costs a few hundred.
COMPARISON_BUDGET = 60_000


def _may_reach_cutoff(length: int, other: int) -> bool:
    """difflib's `real_quick_ratio` bound, written as difflib computes it."""
    return 2.0 * min(length, other) / (length + other) >= CUTOFF


class NameSuggester:
    """The close matches of misspelt names among `candidates`, each name's
    computed once; `budget` comparisons in all (`compared` counts them)."""

    def __init__(self, candidates: Iterable[str], budget: int = COMPARISON_BUDGET) -> None:
        self._by_length: dict[int, list[str]] = {}
        for candidate in candidates:
            self._by_length.setdefault(len(candidate), []).append(candidate)
        self._memo: dict[str, tuple[str, ...]] = {}
        self.budget = budget
        self.compared = 0

    def close(self, name: str) -> tuple[str, ...]:
        """The candidates `name` is likely a misspelling of, best first."""
        found = self._memo.get(name)
        if found is None:
            found = self._memo[name] = self._compute(name)
        return found

    def _compute(self, name: str) -> tuple[str, ...]:
        if not name or self.compared >= self.budget:
            return ()  # (spent: a later name costs nothing, however many candidates)
        buckets = [bucket for length, bucket in self._by_length.items()
                   if _may_reach_cutoff(len(name), length)]
        size = sum(map(len, buckets))  # counted per length, not per candidate
        if self.compared + size > self.budget:
            self.compared = self.budget  # spent: later names get none either
            return ()
        self.compared += size
        pool = [candidate for bucket in buckets for candidate in bucket]
        import difflib  # here: only a misspelt name needs it (faster start-up)

        return tuple(difflib.get_close_matches(name, pool, n=MAX_SUGGESTIONS, cutoff=CUTOFF))


def did_you_mean_text(close: Iterable[str]) -> str:
    """The tail of a message naming the suggestions, "" without any."""
    names = [f"`{name}`" for name in close]
    return f"; did you mean {' or '.join(names)}?" if names else ""
