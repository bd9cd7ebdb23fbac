"""A persistent generation cache: SQLite in WAL mode, one row per (checkpoint, backend, params,
prompt).

Why SQLite: it is in the standard library, several xdist workers can write one file at once (writers
take turns under its lock), and each ``put`` is its own transaction, so ``kill -9`` loses at most
the sample in flight. Creating, opening and setting aside the file is ``SqliteFile``'s job
(``ctxgate/sqlitefile.py``): safe when workers race, and a folder that cannot be written means no
cache with one warning, not a failed run. A row whose checksum does not match is dropped and the
sample regenerated. The key includes the checkpoint's fingerprint, so one checkpoint never reads
another's outputs.
"""

from __future__ import annotations

import hashlib
import json
import time
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ctxgate.backends.base import Generation, GenerationParams
from ctxgate.sqlitefile import CacheStats, CacheWarning, SqliteFile, StoreUnavailable

FILE_NAME = "generations.sqlite"

__all__ = [
    "FILE_NAME",
    "CacheStats",
    "CacheWarning",
    "GenerationCache",
    "StoreUnavailable",
    "namespace_for",
]


def namespace_for(fingerprint: str, backend: Any) -> dict[str, object] | None:
    """What, besides the prompt, decides a generation: the weights, the backend and every setting of
    it that changes numerics (``backend.cache_identity()``). None: the backend cannot say which
    weights answer (no cache)."""
    identity = backend.cache_identity() if hasattr(backend, "cache_identity") else {}
    if identity is None:
        return None
    return {"model": fingerprint, "backend": backend.name, **identity}


def _checksum(text: str, output_tokens: int, finish_reason: str) -> str:
    return hashlib.sha256(
        json.dumps([text, output_tokens, finish_reason]).encode("utf-8")
    ).hexdigest()


class GenerationCache(SqliteFile):
    FILE_NAME = FILE_NAME
    TABLES = (
        "CREATE TABLE generations (key TEXT PRIMARY KEY, namespace TEXT, text TEXT, output_tokens "
        "INTEGER,"
        " finish_reason TEXT, checksum TEXT, created REAL)",
    )

    def __init__(self, directory: str | Path, namespace: Mapping[str, Any]) -> None:
        self.namespace = hashlib.sha256(
            json.dumps(namespace, sort_keys=True, default=str).encode()
        ).hexdigest()
        super().__init__(directory)

    def key(self, prompt_sha256: str, params: GenerationParams) -> str:
        """``prompt_sha256`` is the sample's digest (its input ids among others), computed once by
        the runner."""
        h = hashlib.sha256(self.namespace.encode())
        h.update(
            json.dumps([params.max_new_tokens, list(params.stop_strings), prompt_sha256]).encode()
        )
        return h.hexdigest()

    def get(self, key: str) -> Generation | None:
        rows = self.execute(
            "SELECT text, output_tokens, finish_reason, checksum FROM generations WHERE key = ?",
            (key,),
        )
        if not rows:
            self.stats.misses += 1
            return None
        text, output_tokens, finish_reason, checksum = rows[0]
        if checksum != _checksum(text, output_tokens, finish_reason):
            self.execute("DELETE FROM generations WHERE key = ?", (key,))
            self.stats.dropped_rows += 1
            self.stats.misses += 1
            warnings.warn(
                f"ctxgate cache {self.path}: a damaged entry was dropped and will be regenerated",
                CacheWarning,
                stacklevel=2,
            )
            return None
        self.stats.hits += 1
        return Generation(text, output_tokens, finish_reason)

    def put(self, key: str, gen: Generation) -> None:
        checksum = _checksum(gen.text, gen.output_tokens, gen.finish_reason)
        row = (
            key,
            self.namespace,
            gen.text,
            gen.output_tokens,
            gen.finish_reason,
            checksum,
            time.time(),
        )
        self.execute("INSERT OR REPLACE INTO generations VALUES (?, ?, ?, ?, ?, ?, ?)", row)
