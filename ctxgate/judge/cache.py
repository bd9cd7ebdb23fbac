"""The judge cache: every reply kept by (judge, prompt, sampling parameters, attempt) in SQLite,
one transaction a reply, so re-scoring costs nothing. The API key never reaches a key or a file."""

from __future__ import annotations

import hashlib
import json
import threading
import time
from dataclasses import astuple, dataclass
from pathlib import Path

from ctxgate.sqlitefile import SqliteFile


def _digest(values: list[object]) -> str:
    return hashlib.sha256(json.dumps(values, sort_keys=True).encode()).hexdigest()


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
        return _digest([model, prompt, params, attempt])

    def get(self, key: str) -> CachedReply | None:
        with self._lock:
            rows = self.execute(
                "SELECT text, prompt_tokens, completion_tokens, checksum FROM replies "
                "WHERE key = ?",
                (key,),
            )
            if not rows:
                return None
            text, p, c, checksum = rows[0]
            if checksum != _digest([text, p, c]):
                self.execute("DELETE FROM replies WHERE key = ?", (key,))
                return None
            return CachedReply(text, p, c)

    def put(self, key: str, model: str, reply: CachedReply) -> None:
        fields = astuple(reply)  # text, prompt_tokens, completion_tokens
        with self._lock:
            self.execute(
                "INSERT OR REPLACE INTO replies VALUES (?, ?, ?, ?, ?, ?, ?)",
                (key, model, *fields, _digest(list(fields)), time.time()),
            )
