"""Per-sample random streams that depend only on (task, length, index, seed).

Each sample gets its own generator derived by hashing, so sample 57 is the same bytes whether a worker builds
samples 0..99 or only 57, and whatever the order cases run in under xdist. Python's ``hash()`` is salted per
process, hence sha256.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Sequence
from functools import lru_cache
from typing import TypeVar

T = TypeVar("T")


def derive_seed(*parts: object) -> int:
    digest = hashlib.sha256("\x1f".join(str(p) for p in parts).encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big")


def sample_rng(task: str, length: int, index: int, seed: int) -> random.Random:
    return random.Random(derive_seed("sample", task, length, index, seed))


@lru_cache(maxsize=256)
def seeded_order(n: int, *salt: object) -> tuple[int, ...]:
    """0..n-1 in an order fixed by ``salt`` (a task's question order, a passage permutation), computed once."""
    order = list(range(n))
    random.Random(derive_seed(*salt)).shuffle(order)
    return tuple(order)


def seeded_sample(items: Sequence[T], k: int, *salt: object) -> list[T]:
    """The first ``k`` of ``items`` in an order fixed by ``salt`` (demos chosen per question, per seed)."""
    return [items[i] for i in seeded_order(len(items), *salt)[:k]]
