"""A persistent generation cache: SQLite in WAL mode, one row per (checkpoint, backend, params, prompt).

Why SQLite: it is in the standard library, several xdist workers can write one file at once (writers take turns
under its lock), and each ``put`` is its own transaction, so ``kill -9`` loses at most the sample in flight.
A file that is not a ctxgate cache (corrupt, truncated, another program's, another schema version) is renamed
aside with a warning and a fresh cache is started; a row whose checksum does not match is dropped and the sample
regenerated. The key includes the checkpoint's fingerprint, so one checkpoint never reads another's outputs.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import time
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ctxgate.backends.base import Generation, GenerationParams

APPLICATION_ID = 0x43544754  # "CTGT"
SCHEMA_VERSION = 1
FILE_NAME = "generations.sqlite"


class CacheWarning(UserWarning):
    """A cache file was set aside or a row was dropped."""


@dataclass
class CacheStats:
    hits: int = 0
    misses: int = 0
    dropped_rows: int = 0
    set_aside: list[str] = field(default_factory=list)


def namespace_for(fingerprint: str, backend: Any) -> dict[str, Any]:
    """What, besides the prompt, decides a generation: the weights, the backend and its numerics."""
    desc = backend.describe()
    return {"model": fingerprint, "backend": backend.name, "dtype": desc.get("dtype"),
            "attn": desc.get("attn_implementation")}


def _checksum(text: str, output_tokens: int, finish_reason: str) -> str:
    return hashlib.sha256(json.dumps([text, output_tokens, finish_reason]).encode("utf-8")).hexdigest()


class SqliteFile:
    """One ctxgate SQLite file in WAL mode, claimed with an application id and a schema version; a file that is
    not one is set aside. Subclasses name the file, the id and the tables."""

    FILE_NAME = FILE_NAME
    APPLICATION_ID = APPLICATION_ID
    TABLES: tuple[str, ...] = (
        "CREATE TABLE IF NOT EXISTS generations (key TEXT PRIMARY KEY, namespace TEXT, text TEXT,"
        " output_tokens INTEGER, finish_reason TEXT, checksum TEXT, created REAL)",
    )
    WHAT = "cache"
    FIX = "pass --no-cache or another --cache-dir"

    def __init__(self, directory: str | Path) -> None:
        self.dir = Path(directory)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.path = self.dir / self.FILE_NAME
        self.stats = CacheStats()
        self.conn = self._open()

    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self.path, timeout=120, isolation_level=None)
        conn.execute("PRAGMA busy_timeout = 120000")
        return conn

    def _open(self) -> sqlite3.Connection:
        for _ in range(3):
            try:
                conn = self._connect()
                self._initialize(conn)
                return conn
            except sqlite3.DatabaseError as exc:
                self._set_aside(str(exc))
        raise RuntimeError(f"cannot open a {self.WHAT} in {self.dir}; {self.FIX}")

    def _initialize(self, conn: sqlite3.Connection) -> None:
        app_id = conn.execute("PRAGMA application_id").fetchone()[0]
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        if not tables and app_id == 0:  # a new file: claim it (concurrent workers may race here; IF NOT EXISTS)
            conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("BEGIN IMMEDIATE")
            conn.execute(f"PRAGMA application_id = {self.APPLICATION_ID}")
            conn.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT)")
            conn.execute("INSERT OR IGNORE INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))
            for table in self.TABLES:
                conn.execute(table)
            conn.execute("COMMIT")
            return
        version = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone() \
            if "meta" in tables else None
        if app_id != self.APPLICATION_ID or version is None or version[0] != str(SCHEMA_VERSION):
            conn.close()
            raise sqlite3.DatabaseError(f"not a ctxgate {self.WHAT} of schema {SCHEMA_VERSION} (application id "
                                        f"{app_id:#x}, schema {version[0] if version else None})")
        if conn.execute("PRAGMA quick_check").fetchone()[0] != "ok":
            conn.close()
            raise sqlite3.DatabaseError("integrity check failed")

    def _set_aside(self, reason: str) -> None:
        aside = self.path.with_name(f"{self.FILE_NAME}.set-aside-{time.strftime('%Y%m%d-%H%M%S')}-{time.time_ns() % 10**6}")
        for suffix in ("", "-wal", "-shm"):
            src = Path(str(self.path) + suffix)
            if src.exists():
                src.rename(Path(str(aside) + suffix))
        self.stats.set_aside.append(str(aside))
        warnings.warn(f"ctxgate {self.WHAT} {self.path} was unusable ({reason}); moved to {aside}, starting fresh",
                      CacheWarning, stacklevel=3)

    def close(self) -> None:
        self.conn.close()


class GenerationCache(SqliteFile):
    def __init__(self, directory: str | Path, namespace: Mapping[str, Any]) -> None:
        self.namespace = hashlib.sha256(json.dumps(namespace, sort_keys=True, default=str).encode()).hexdigest()
        super().__init__(directory)

    def key(self, prompt_sha256: str, params: GenerationParams) -> str:
        """``prompt_sha256`` is the sample's digest (its input ids among others), computed once by the runner."""
        h = hashlib.sha256(self.namespace.encode())
        h.update(json.dumps([params.max_new_tokens, list(params.stop_strings), prompt_sha256]).encode())
        return h.hexdigest()

    def get(self, key: str) -> Generation | None:
        row = self.conn.execute("SELECT text, output_tokens, finish_reason, checksum FROM generations WHERE key = ?",
                                (key,)).fetchone()
        if row is None:
            self.stats.misses += 1
            return None
        text, output_tokens, finish_reason, checksum = row
        if checksum != _checksum(text, output_tokens, finish_reason):
            self.conn.execute("DELETE FROM generations WHERE key = ?", (key,))
            self.stats.dropped_rows += 1
            self.stats.misses += 1
            warnings.warn(f"ctxgate cache {self.path}: a damaged entry was dropped and will be regenerated",
                          CacheWarning, stacklevel=2)
            return None
        self.stats.hits += 1
        return Generation(text, output_tokens, finish_reason)

    def put(self, key: str, gen: Generation) -> None:
        self.conn.execute(
            "INSERT OR REPLACE INTO generations VALUES (?, ?, ?, ?, ?, ?, ?)",
            (key, self.namespace, gen.text, gen.output_tokens, gen.finish_reason,
             _checksum(gen.text, gen.output_tokens, gen.finish_reason), time.time()),
        )
