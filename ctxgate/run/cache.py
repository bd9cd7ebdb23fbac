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
from contextlib import closing
from dataclasses import astuple, dataclass
from pathlib import Path
from typing import Any

from ctxgate.backends.base import Generation, GenerationParams
from ctxgate.records.cost import Cost
from ctxgate.sqlitefile import CacheWarning, SqliteFile, StoreUnavailable

FILE_NAME = "generations.sqlite"
# the column of a generation's thought (a server's split, budget forcing), named so in every file
THOUGHT = "thinking"

__all__ = [
    "FILE_NAME",
    "CacheWarning",
    "GenerationCache",
    "Spent",
    "StoreUnavailable",
    "namespace_for",
    "spent_in",
]


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


# what each generation cost, and which case of which run it was: the run's ledger, read back where
# a case ended before its record could say (an interrupt, a worker's death); added to older files
LEDGER = {"task": "TEXT", "length": "INTEGER", "prompt_tokens": "INTEGER", "run": "TEXT"}
COLUMNS = (
    "key, namespace, text, output_tokens, finish_reason, checksum, created, "
    f"{THOUGHT}, {', '.join(LEDGER)}"
)


@dataclass(frozen=True)
class Spent:
    """A generation's place in its run's ledger: its case, the prompt tokens it prefilled, and the
    run (one id per pytest session, its xdist workers included)."""

    task: str
    length: int
    prompt_tokens: int
    run: str


class GenerationCache(SqliteFile):
    FILE_NAME = FILE_NAME
    TABLES = (
        "CREATE TABLE generations (key TEXT PRIMARY KEY, namespace TEXT, text TEXT, output_tokens "
        f"INTEGER, finish_reason TEXT, checksum TEXT, created REAL, {THOUGHT} TEXT, "
        + ", ".join(f"{name} {kind}" for name, kind in LEDGER.items())
        + ")",
    )

    def __init__(self, directory: str | Path, namespace: Mapping[str, Any]) -> None:
        self.namespace = _sha256(json.dumps(namespace, sort_keys=True, default=str))
        super().__init__(directory)
        columns = {r[1] for r in self.execute("PRAGMA table_info(generations)") or ()}
        # a file from before reasoning models, or before the ledger: its rows stay valid
        for name, kind in {THOUGHT: "TEXT", **LEDGER}.items():
            if name in columns:
                continue
            try:
                self.conn.execute(f"ALTER TABLE generations ADD COLUMN {name} {kind}")
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

    def put(self, key: str, gen: Generation, spent: Spent | None = None) -> None:
        """The generation, at once (a kill loses only those in flight), with its ``spent``."""
        fields = (gen.text, gen.output_tokens, gen.finish_reason, _thought(gen))
        row = (key, self.namespace, *fields[:3], _checksum(*fields), time.time(), fields[3])
        ledger = astuple(spent) if spent else (None,) * len(LEDGER)
        marks = ", ".join("?" * (len(row) + len(ledger)))
        sql = f"INSERT OR REPLACE INTO generations ({COLUMNS}) VALUES ({marks})"
        self.execute(sql, (*row, *ledger))


def spent_in(directory: str | Path, run: str) -> dict[tuple[str, int], Cost]:
    """What ``run`` generated into the cache in ``directory``, per case (its ledger): nothing where
    the file is absent or cannot be read. Read-only: the run's own workers may still be gone."""
    path = Path(directory) / FILE_NAME
    if not path.is_file():
        return {}
    try:
        with closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=10)) as conn:
            rows = conn.execute(
                "SELECT task, length, count(*), sum(prompt_tokens), sum(output_tokens) FROM "
                "generations WHERE run = ? GROUP BY task, length",
                (run,),
            ).fetchall()
    except sqlite3.Error:  # an older file without the ledger, or one set aside
        return {}
    return {(t, L): Cost(n, prompt or 0, out or 0) for t, L, n, prompt, out in rows}
