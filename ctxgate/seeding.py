"""Per-sample random streams that depend only on (task, length, index, seed).

Each sample gets its own generator derived by hashing, so sample 57 is the same bytes whether a worker builds
samples 0..99 or only 57, and whatever the order cases run in under xdist. Python's ``hash()`` is salted per
process, hence sha256.
"""

from __future__ import annotations

import hashlib
import random


def derive_seed(*parts: object) -> int:
    digest = hashlib.sha256("\x1f".join(str(p) for p in parts).encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big")


def sample_rng(task: str, length: int, index: int, seed: int) -> random.Random:
    return random.Random(derive_seed("sample", task, length, index, seed))
