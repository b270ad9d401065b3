"""Did-you-mean suggestions for misspelt names, at a bounded cost.

`difflib.get_close_matches` compares a name with every candidate, so a file
whose thousands of statements read one deleted tensor used to compare each
reference with every tensor name: quadratic (4,000 lines took 47 s).  Here a
suggestion is computed once per distinct name, only against candidates whose
length can reach the cutoff (the same bound difflib applies first, so the
result is exactly difflib's), and all the suggestions of one analysis share a
budget of name comparisons: past it, names are reported without a suggestion
(docs/limits.md, "Did-you-mean suggestions").

The budget counts the candidates as difflib would compare them, but the work
is less: difflib's second bound, `quick_ratio`, depends only on the multiset
of a candidate's characters, so it is computed once for all the candidates
made of the same characters (`A12`, `A21`; a program of numbered names has a
few thousand such groups for 50,000 names), and difflib is asked only about
the groups that pass it: the same answer."""
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
        # length -> the candidates of that length grouped by their characters,
        # sorted (the key): made for a length when first compared
        self._by_letters: dict[int, dict[str, list[str]]] = {}
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
        lengths = [length for length in self._by_length if _may_reach_cutoff(len(name), length)]
        size = sum([len(self._by_length[length]) for length in lengths])  # (per length)
        if self.compared + size > self.budget:
            self.compared = self.budget  # spent: later names get none either
            return ()
        self.compared += size
        return _close_matches(name, [self._letter_groups(length) for length in lengths])

    def _letter_groups(self, length: int) -> dict[str, list[str]]:
        """The candidates of `length` by their characters, sorted."""
        groups = self._by_letters.get(length)
        if groups is None:
            groups = self._by_letters[length] = {}
            bucket = self._by_length[length]
            for letters, candidate in zip(map("".join, map(sorted, bucket)), bucket):
                groups.setdefault(letters, []).append(candidate)
        return groups


def _close_matches(name: str, grouped: list[dict[str, list[str]]]) -> tuple[str, ...]:
    """`difflib.get_close_matches(name, candidates, MAX_SUGGESTIONS, CUTOFF)` of the
    candidates in `grouped` (by their characters, see NameSuggester), asked only
    of the groups whose characters pass difflib's `quick_ratio` bound (the same
    for every candidate of a group): the others would fail it there."""
    import difflib  # here: only a misspelt name needs it (faster start-up)

    matcher = difflib.SequenceMatcher()
    matcher.set_seq2(name)
    passing: list[str] = []
    for groups in grouped:  # (their lengths pass real_quick_ratio: _may_reach_cutoff)
        for members in groups.values():
            matcher.set_seq1(members[0])
            if matcher.quick_ratio() >= CUTOFF:
                passing += members
    return tuple(difflib.get_close_matches(name, passing, n=MAX_SUGGESTIONS, cutoff=CUTOFF))


def did_you_mean_text(close: Iterable[str]) -> str:
    """The tail of a message naming the suggestions, "" without any."""
    names = [f"`{name}`" for name in close]
    return f"; did you mean {' or '.join(names)}?" if names else ""
