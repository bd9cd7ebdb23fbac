"""Per-sample random streams that depend only on (task, length, index, seed).

Each sample's generator is derived by sha256 (``hash()`` is salted per process), so sample 57 is the
same bytes whether a worker builds samples 0..99 or only 57, in whatever order xdist runs cases.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Sequence
from functools import lru_cache
from typing import Any, TypeVar

T = TypeVar("T")


def derive_seed(*parts: object) -> int:
    digest = hashlib.sha256("\x1f".join(str(p) for p in parts).encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big")


def sample_rng(task: str, length: int, index: int, seed: int) -> random.Random:
    return random.Random(derive_seed("sample", task, length, index, seed))


@lru_cache(maxsize=256)
def seeded_order(n: int, *salt: object) -> tuple[int, ...]:
    """0..n-1 in an order fixed by ``salt`` (a task's question order, a passage permutation)."""
    order = list(range(n))
    random.Random(derive_seed(*salt)).shuffle(order)
    return tuple(order)


def seeded_sample(items: Sequence[T], k: int, *salt: object) -> list[T]:
    """The first ``k`` of ``items`` in an order fixed by ``salt`` (demos per question, per seed)."""
    return [items[i] for i in seeded_order(len(items), *salt)[:k]]


# HELMET HEAD's own choices (its samples and demos), where its prompts are matched byte for byte
HELMET_MAX_TEST_SAMPLES = 100  # HELMET's configs: max_test_samples


@lru_cache(maxsize=64)
def helmet_permutation(n: int, seed: int) -> tuple[int, ...]:
    """``Dataset.shuffle(seed=seed)`` over ``n`` rows: numpy's ``default_rng(seed).permutation``."""
    import numpy as np

    return tuple(int(i) for i in np.random.default_rng(seed).permutation(n))


def helmet_first(n: int, seed: int, k: int) -> list[int]:
    """``helmet_permutation(n, seed)[:k]`` uncached: a train split is shuffled for every sample."""
    import numpy as np

    return [int(i) for i in np.random.default_rng(seed).permutation(n)[:k]]


@lru_cache(maxsize=8)
def helmet_sample_draws(calls: int, n: int, k: int, seed: int) -> tuple[tuple[int, ...], ...]:
    """``calls`` successive ``random.sample(population, k)`` of ``n`` items after
    ``random.seed(seed)``, as indices (a list draws the same indices as its range)."""
    rng = random.Random(seed)
    return tuple(tuple(rng.sample(range(n), k)) for _ in range(calls))


@lru_cache(maxsize=8)
def helmet_unseeded_seeds(seed: int, count: int) -> tuple[int, ...]:
    """The seeds of ``count`` successive unseeded ``Dataset.shuffle()`` calls in HELMET's process:
    numpy's global generator seeded with ``seed`` (``transformers.set_seed``), nothing else drawing
    from it; each call takes the state's word at its position (the first word past the end) and
    advances the state by one ``np.random.random()``."""
    import numpy as np

    state = np.random.RandomState(seed)
    seeds = []
    for _ in range(count):
        legacy: Any = state.get_state(legacy=True)  # ("MT19937", 624 key words, position, ...)
        key, pos = legacy[1], int(legacy[2])
        seeds.append(int(key[pos] if pos < 624 else key[0]))
        state.random_sample()
    return tuple(seeds)
