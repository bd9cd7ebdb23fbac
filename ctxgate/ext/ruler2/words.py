"""The reference's key words: every ``adjective-noun`` of wonderwords 3.0.1's lists, sorted and
unique. Six million strings are never built: the sorted list is indexed block by block."""

from __future__ import annotations

import bisect
import functools
from collections.abc import Sequence
from importlib import resources
from typing import overload


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
        root, words = self.blocks[at]
        offset = index - self.starts[at]
        return words[offset] if words is not None else f"{root}-{self.nouns[offset]}"


@functools.cache
def key_words() -> KeyWords:
    return KeyWords(_lines("wonderwords_adjectives.txt"), _lines("wonderwords_nouns.txt"))
