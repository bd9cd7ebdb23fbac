"""The reference's key words: every ``adjective-noun`` of wonderwords 3.0.1's lists, sorted and
unique. Six million strings are never built: the sorted list is indexed block by block."""

from __future__ import annotations

import bisect
import functools
from collections.abc import Sequence
from importlib import resources
from typing import TYPE_CHECKING, overload

from .counting import CUT, LETTERS, Unsplit

if TYPE_CHECKING:
    from .counting import Tally


def _lines(name: str) -> list[str]:
    # wonderwords' own reading: each line right-stripped, nothing else dropped
    text = resources.files(__package__).joinpath("data").joinpath(name).read_text("utf-8")
    return [line.rstrip() for line in text.splitlines(keepends=True)]


class KeyWords(Sequence[str]):
    """``sorted(set(f"{a}-{n}" for a in adjectives for n in nouns))`` by position. An adjective's
    words are one sorted block, except where another adjective starts with it and a hyphen (their
    words interleave, and may coincide): such a group's words are sorted once, together."""

    def __init__(self, adjectives: Sequence[str], nouns: Sequence[str]) -> None:
        self.nouns = sorted(set(nouns))
        roots: dict[str, list[str]] = {}
        for adj in sorted(set(adjectives), key=len):
            root = next((r for r in roots if adj.startswith(r + "-")), adj)
            roots.setdefault(root, []).append(adj)
        self.blocks: list[tuple[str, tuple[str, ...] | None]] = []
        starts, total = [], 0
        for root in sorted(roots, key=lambda r: r + "-"):
            group = roots[root]
            words = None
            if len(group) > 1:
                words = tuple(sorted({f"{a}-{n}" for a in group for n in self.nouns}))
            self.blocks.append((root, words))
            starts.append(total)
            total += len(words) if words is not None else len(self.nouns)
        self.starts, self.total = starts, total

    def __len__(self) -> int:
        return self.total

    @overload
    def __getitem__(self, index: int) -> str: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[str]: ...
    def __getitem__(self, index: int | slice) -> str | Sequence[str]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(self.total))]
        if not 0 <= index < self.total:
            raise IndexError(index)
        at = bisect.bisect_right(self.starts, index) - 1
        return self._word(at, index - self.starts[at])

    def _word(self, block: int, offset: int) -> str:
        root, words = self.blocks[block]
        return words[offset] if words is not None else f"{root}-{self.nouns[offset]}"

    def take(self, places: Sequence[int]) -> list[str]:
        """The words at ``places``, their blocks found together."""
        import numpy as np

        starts = np.asarray(self.starts, dtype=np.int64)
        at = np.fromiter(places, dtype=np.int64, count=len(places))
        block = np.searchsorted(starts, at, side="right") - 1
        return list(map(self._word, block.tolist(), (at - starts[block]).tolist()))


@functools.cache
def key_words() -> KeyWords:
    return KeyWords(_lines("wonderwords_adjectives.txt"), _lines("wonderwords_nouns.txt"))


class KeyCounts:
    """Each key word's tokens after a space, by place. A key is cut at its hyphen, between two
    letters: a word of an adjective's block counts as the adjective and the noun; the blocks whose
    adjectives' words interleave count word by word."""

    def __init__(self, tally: Tally, words: KeyWords) -> None:
        import numpy as np

        ends = [*words.nouns, *(r for r, w in words.blocks if w is None)]
        ends += [x for _, w in words.blocks if w is not None for x in w]
        if not all(e[0] in LETTERS and e[-1] in LETTERS for e in ends):
            raise Unsplit("a key word does not start and end with a letter")
        self.starts = np.asarray(words.starts, dtype=np.int64)
        self.nouns = np.asarray(tally.counts(["-" + n for n in words.nouns]), dtype=np.int64)
        plain = [r for r, w in words.blocks if w is None]
        counts = iter(tally.counts([" " + r for r in plain]))
        self.adjective = np.zeros(len(words.blocks), dtype=np.int64)
        self.interleaved = np.full(len(words.blocks), -1, dtype=np.int64)
        interleaved: list[str] = []
        for b, (_, group) in enumerate(words.blocks):
            if group is None:
                self.adjective[b] = next(counts)
            else:
                self.interleaved[b] = len(interleaved)
                interleaved.extend(" " + w for w in group)
        self.whole = np.asarray(tally.counts(interleaved, CUT), dtype=np.int64)

    def total(self, places: Sequence[int]) -> int:
        """The summed tokens of the key words at ``places``."""
        import numpy as np

        at = np.fromiter(places, dtype=np.int64, count=len(places))
        block = np.searchsorted(self.starts, at, side="right") - 1
        offset = at - self.starts[block]
        grouped = self.interleaved[block] >= 0
        plain = ~grouped
        return int(
            self.adjective[block[plain]].sum()
            + self.nouns[offset[plain]].sum()
            + self.whole[self.interleaved[block[grouped]] + offset[grouped]].sum()
        )
