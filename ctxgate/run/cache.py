"""A persistent generation cache: SQLite in WAL mode (``SqliteFile``), one row per (checkpoint,
backend, params, prompt). Several xdist workers can write one file (writers take turns under its
lock), and each ``put`` is its own transaction, so ``kill -9`` loses at most the sample in flight. A
row whose checksum does not match is dropped and regenerated. The key includes the checkpoint's
fingerprint, so one checkpoint never reads another's outputs."""

from __future__ import annotations

import hashlib
import json
import time
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ctxgate.backends.base import Generation, GenerationParams
from ctxgate.sqlitefile import CacheWarning, SqliteFile, StoreUnavailable

FILE_NAME = "generations.sqlite"

__all__ = ["FILE_NAME", "CacheWarning", "GenerationCache", "StoreUnavailable", "namespace_for"]


def namespace_for(fingerprint: str, backend: Any) -> dict[str, object] | None:
    """What, besides the prompt, decides a generation: the weights, the backend and its settings
    that change numerics (``backend.cache_identity()``). None: unknown weights (no cache)."""
    identity = backend.cache_identity() if hasattr(backend, "cache_identity") else {}
    if identity is None:
        return None
    return {"model": fingerprint, "backend": backend.name, **identity}


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _checksum(text: str, output_tokens: int, finish_reason: str) -> str:
    return _sha256(json.dumps([text, output_tokens, finish_reason]))


class GenerationCache(SqliteFile):
    FILE_NAME = FILE_NAME
    TABLES = (
        "CREATE TABLE generations (key TEXT PRIMARY KEY, namespace TEXT, text TEXT, output_tokens "
        "INTEGER, finish_reason TEXT, checksum TEXT, created REAL)",
    )

    def __init__(self, directory: str | Path, namespace: Mapping[str, Any]) -> None:
        self.namespace = _sha256(json.dumps(namespace, sort_keys=True, default=str))
        super().__init__(directory)

    def key(self, prompt_sha256: str, params: GenerationParams) -> str:
        """``prompt_sha256``: the sample's digest (of its input ids among others)."""
        decides = [params.max_new_tokens, list(params.stop_strings), prompt_sha256]
        return _sha256(self.namespace + json.dumps(decides))

    def get(self, key: str) -> Generation | None:
        rows = self.execute(
            "SELECT text, output_tokens, finish_reason, checksum FROM generations WHERE key = ?",
            (key,),
        )
        if not rows:
            return None
        text, output_tokens, finish_reason, checksum = rows[0]
        if checksum != _checksum(text, output_tokens, finish_reason):
            self.execute("DELETE FROM generations WHERE key = ?", (key,))
            warnings.warn(
                f"ctxgate cache {self.path}: a damaged entry was dropped and will be regenerated",
                CacheWarning,
                stacklevel=2,
            )
            return None
        return Generation(text, output_tokens, finish_reason)

    def put(self, key: str, gen: Generation) -> None:
        fields = (gen.text, gen.output_tokens, gen.finish_reason)
        row = (key, self.namespace, *fields, _checksum(*fields), time.time())
        self.execute("INSERT OR REPLACE INTO generations VALUES (?, ?, ?, ?, ?, ?, ?)", row)
