"""The judge cache: every reply kept by (model, prompt, sampling parameters, attempt), so re-scoring
the same generations costs nothing and makes no request. Same SQLite machinery as the generation
cache (WAL, set aside when unusable, one transaction per reply, so an interrupted run keeps every
verdict it paid for).

The key leaves out the server address and the API key: the same model answering the same prompt is
the same verdict wherever it is served, and the key must never reach a file.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from dataclasses import astuple, dataclass
from pathlib import Path

from ctxgate.sqlitefile import SqliteFile


@dataclass(frozen=True)
class CachedReply:
    text: str
    prompt_tokens: int
    completion_tokens: int


class JudgeCache(SqliteFile):
    FILE_NAME = "judge.sqlite"
    APPLICATION_ID = 0x43544A44  # "CTJD"
    TABLES = (
        "CREATE TABLE replies (key TEXT PRIMARY KEY, model TEXT, text TEXT, "
        "prompt_tokens INTEGER, completion_tokens INTEGER, checksum TEXT, created REAL)",
    )
    WHAT = "judge cache"
    FIX = "pass another --judge-cache folder"

    def __init__(self, directory: str | Path) -> None:
        self._lock = threading.Lock()  # one connection shared by the judge's worker threads
        super().__init__(directory)

    @staticmethod
    def key(model: str, prompt: str, params: dict[str, object], attempt: int) -> str:
        return hashlib.sha256(
            json.dumps([model, prompt, params, attempt], sort_keys=True).encode()
        ).hexdigest()

    @staticmethod
    def _checksum(text: str, prompt_tokens: int, completion_tokens: int) -> str:
        return hashlib.sha256(
            json.dumps([text, prompt_tokens, completion_tokens]).encode()
        ).hexdigest()

    def get(self, key: str) -> CachedReply | None:
        with self._lock:
            rows = self.execute(
                "SELECT text, prompt_tokens, completion_tokens, checksum FROM replies WHERE key = "
                "?",
                (key,),
            )
            if not rows:
                return None
            text, p, c, checksum = rows[0]
            if checksum != self._checksum(text, p, c):
                self.execute("DELETE FROM replies WHERE key = ?", (key,))
                self.stats.dropped_rows += 1
                return None
            return CachedReply(text, p, c)

    def put(self, key: str, model: str, reply: CachedReply) -> None:
        fields = astuple(reply)  # text, prompt_tokens, completion_tokens
        with self._lock:
            self.execute(
                "INSERT OR REPLACE INTO replies VALUES (?, ?, ?, ?, ?, ?, ?)",
                (key, model, *fields, self._checksum(*fields), time.time()),
            )
