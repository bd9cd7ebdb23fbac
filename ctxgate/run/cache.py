"""A persistent generation cache: SQLite in WAL mode (``SqliteFile``), one row per (checkpoint,
backend, params, prompt). Several xdist workers can write one file (writers take turns under its
lock), and each ``put`` is its own transaction, so ``kill -9`` loses at most the sample in flight. A
row whose checksum does not match is dropped and regenerated. The key includes the checkpoint's
fingerprint, so one checkpoint never reads another's outputs."""

from __future__ import annotations

import hashlib
import json
import sqlite3
import time
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ctxgate.backends.base import Generation, GenerationParams
from ctxgate.sqlitefile import CacheWarning, SqliteFile, StoreUnavailable

FILE_NAME = "generations.sqlite"
# the column of a generation's thought (a server's split, budget forcing), named so in every file
THOUGHT = "thinking"

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


def _checksum(text: str, output_tokens: int, finish_reason: str, thought: str | None) -> str:
    fields = [text, output_tokens, finish_reason] + ([thought] if thought is not None else [])
    return _sha256(json.dumps(fields))


def _thought(gen: Generation) -> str | None:
    """What a generation holds of a thought beside its text (a server's split, budget forcing)."""
    if gen.thought is None and not gen.forced:
        return None
    return json.dumps([gen.thought, gen.forced])


class GenerationCache(SqliteFile):
    FILE_NAME = FILE_NAME
    TABLES = (
        "CREATE TABLE generations (key TEXT PRIMARY KEY, namespace TEXT, text TEXT, output_tokens "
        f"INTEGER, finish_reason TEXT, checksum TEXT, created REAL, {THOUGHT} TEXT)",
    )

    def __init__(self, directory: str | Path, namespace: Mapping[str, Any]) -> None:
        self.namespace = _sha256(json.dumps(namespace, sort_keys=True, default=str))
        super().__init__(directory)
        columns = {r[1] for r in self.execute("PRAGMA table_info(generations)") or ()}
        if THOUGHT not in columns:  # a file from before reasoning models: its rows stay valid
            try:
                self.conn.execute(f"ALTER TABLE generations ADD COLUMN {THOUGHT} TEXT")
            except sqlite3.OperationalError as exc:  # another worker added it first
                if "duplicate column" not in str(exc):
                    raise StoreUnavailable(f"cannot use the cache {self.path} ({exc})") from None

    def key(self, prompt_sha256: str, params: GenerationParams) -> str:
        """``prompt_sha256``: the sample's digest (of its input ids among others)."""
        return _sha256(self.namespace + json.dumps(params.decides(prompt_sha256)))

    def get(self, key: str) -> Generation | None:
        rows = self.execute(
            f"SELECT text, output_tokens, finish_reason, checksum, {THOUGHT} FROM generations "
            "WHERE key = ?",
            (key,),
        )
        if not rows:
            return None
        text, output_tokens, finish_reason, checksum, thought = rows[0]
        if checksum != _checksum(text, output_tokens, finish_reason, thought):
            self.execute("DELETE FROM generations WHERE key = ?", (key,))
            warnings.warn(
                f"ctxgate cache {self.path}: a damaged entry was dropped and will be regenerated",
                CacheWarning,
                stacklevel=2,
            )
            return None
        if thought is None:
            return Generation(text, output_tokens, finish_reason)
        said, *_, forced = json.loads(thought)  # an older entry has its count between
        return Generation(text, output_tokens, finish_reason, said, forced)

    def put(self, key: str, gen: Generation) -> None:
        fields = (gen.text, gen.output_tokens, gen.finish_reason, _thought(gen))
        row = (key, self.namespace, *fields[:3], _checksum(*fields), time.time(), fields[3])
        self.execute("INSERT OR REPLACE INTO generations VALUES (?, ?, ?, ?, ?, ?, ?, ?)", row)
