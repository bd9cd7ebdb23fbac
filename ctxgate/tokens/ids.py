"""Token ids in bulk: many texts' ids as spans of one array, one-off pieces' runs tokenized once,
one int object per id (``codec``'s fast paths for 1M-token prompts)."""

from __future__ import annotations

import itertools
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

# ids, and each text's start and size in them
Spans = tuple["np.ndarray", "np.ndarray", "np.ndarray"]


def spans(encoded: Sequence[Sequence[int]]) -> Spans:
    import numpy as np

    sizes = np.fromiter(map(len, encoded), dtype=np.int64, count=len(encoded))
    flat = np.fromiter(
        itertools.chain.from_iterable(encoded), dtype=np.int64, count=int(sizes.sum())
    )
    return flat, np.cumsum(sizes) - sizes, sizes


def gather(source: np.ndarray, starts: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """The spans ``source[start:start + size]`` joined, in one indexing."""
    import numpy as np

    placed = np.cumsum(sizes) - sizes  # where each span starts in the result
    return source[np.repeat(starts - placed, sizes) + np.arange(int(sizes.sum()))]


@dataclass(frozen=True)
class JoinedIds:
    """Rows' token ids one after another: row i is ``ids[ends[i]:ends[i + 1]]``."""

    ids: np.ndarray
    ends: np.ndarray  # one more than the rows, from 0

    def tuples(self, limit: int | None = None) -> list[tuple[int, ...]]:
        ends = self.ends.tolist()[: None if limit is None else limit + 1]
        return [tuple(self.ids[a:b].tolist()) for a, b in zip(ends, ends[1:])]

    def fit(self, room: int) -> int:
        """How many leading rows fit in ``room`` tokens."""
        import numpy as np

        return int(np.searchsorted(self.ends[1:], room, side="right"))

    def head(self, n: int) -> tuple[list[int], list[int]]:
        """The first ``n`` rows' ids, one after another, and each row's size."""
        import numpy as np

        return id_list(self.ids[: self.ends[n]]), np.diff(self.ends[: n + 1]).tolist()


RUN_END = "\x00"  # ends a value's runs (PieceEncoder._split_runs); a run of its own, with no ids


class RunStore:
    """Runs of one-off pieces, each tokenized once: a run's slot, and every run's ids in one array
    (slot 0 is ``RUN_END``, with none), so the runs of a batch of values are gathered at once."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.clear()

    def clear(self) -> None:
        import numpy as np

        self.slot: dict[str, int] = {RUN_END: 0}
        self.ids = np.zeros(1 << 16, dtype=np.int64)
        self.used = 0  # ids[:used] hold ids
        self.starts = np.zeros(1 << 14, dtype=np.int64)
        self.sizes = np.zeros(1 << 14, dtype=np.int64)

    def add(self, runs: list[str], flat: np.ndarray, sizes: np.ndarray) -> None:
        import numpy as np

        first, used = len(self.slot), self.used
        if used + len(flat) > len(self.ids):
            more = max(len(self.ids), len(flat))
            self.ids = np.concatenate([self.ids, np.zeros(more, dtype=np.int64)])
        if first + len(runs) > len(self.starts):
            more = max(len(self.starts), len(runs))
            self.starts = np.concatenate([self.starts, np.zeros(more, dtype=np.int64)])
            self.sizes = np.concatenate([self.sizes, np.zeros(more, dtype=np.int64)])
        self.ids[used : used + len(flat)] = flat
        self.starts[first : first + len(runs)] = used + np.cumsum(sizes) - sizes
        self.sizes[first : first + len(runs)] = sizes
        self.used = used + len(flat)
        self.slot.update(zip(runs, range(first, first + len(runs))))


class _OneInt(dict[int, int]):
    """Token id -> the one int object that stands for it. A tokenizer gives a new int for every id
    (past the 256 Python keeps), so a 1M-token prompt joined from cached pieces referred to up to a
    million objects spread over the heap, each a cache miss to copy and 28 bytes; one object per id
    keeps a vocabulary's worth, which stay in the CPU's cache."""

    def __missing__(self, key: int) -> int:
        self[key] = key
        return key


ONE_INT = _OneInt()
# the same objects by id, as a numpy object array (``id_list``), once made
_ONE_INT_TABLE: list[np.ndarray] = []


def id_list(ids: np.ndarray) -> list[int]:
    """Token ids as a list of ``ONE_INT``'s objects: an object array indexed, a third of the time of
    ``tolist``, whose new int per id also made every later copy of the list slower."""
    import numpy as np

    if not len(ids):
        return []
    low, high = int(ids.min()), int(ids.max())
    if low < 0:  # never a token id; kept as it is
        return ids.tolist()
    if not _ONE_INT_TABLE or high >= len(_ONE_INT_TABLE[0]):
        table = np.empty(1 << max(16, high.bit_length()), dtype=object)
        table[:] = [ONE_INT[i] for i in range(len(table))]
        _ONE_INT_TABLE[:] = [table]
    return _ONE_INT_TABLE[0][ids].tolist()


def packing_separator(backend: Any) -> tuple[str, int] | None:
    """An added special token the backend splits texts at as they are (matched before
    normalization, no whitespace stripped beside it, not only as a whole word); None without one."""
    # with encode_special_tokens, added tokens in a text are tokenized as text
    if getattr(backend, "encode_special_tokens", False):
        return None
    try:
        added = dict(backend.get_added_tokens_decoder())
    except Exception:  # noqa: BLE001 - an older tokenizers without the call is not packed
        return None
    for token_id, token in sorted(added.items()):
        plain = not (token.lstrip or token.rstrip or token.single_word or token.normalized)
        if token.special and token.content and plain:
            return str(token.content), int(token_id)
    return None
