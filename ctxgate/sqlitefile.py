"""A ctxgate SQLite file that many processes open at once: the generation cache and the judge cache.

xdist workers open the same new file in the same second: it is made whole in a private file and
moved into place under a lock; a busy file is waited for; a file is set aside only when, looked at
again under that lock, it is not a ctxgate file of this schema or fails its integrity check. One
that cannot be written makes the store unavailable: the caller runs without it and says so once.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
import uuid
import warnings
from contextlib import closing
from pathlib import Path
from typing import Any

import filelock

from ctxgate.refusal import CtxgateError

SCHEMA_VERSION = 1
BUSY_SECONDS = 120.0


class CacheWarning(UserWarning):
    """A store was set aside, a row was dropped, or the store was given up for this run."""


class StoreUnavailable(CtxgateError, RuntimeError):
    """The file cannot be opened or written (permissions, read-only media, a full disk, busy)."""


def error_kind(exc: sqlite3.Error) -> str:
    """busy (wait and retry), corrupt (may be set aside) or unusable (give the store up)."""
    name = getattr(exc, "sqlite_errorname", "") or ""  # Python 3.11+
    text = str(exc).lower()
    if name.startswith(("SQLITE_BUSY", "SQLITE_LOCKED")) or "locked" in text or "busy" in text:
        return "busy"
    corrupt = ("not a database", "malformed")
    if name.startswith(("SQLITE_NOTADB", "SQLITE_CORRUPT")) or any(w in text for w in corrupt):
        return "corrupt"
    return "unusable"


class SqliteFile:
    """Subclasses name the file, the application id, the tables, and the words used in messages."""

    FILE_NAME = "generations.sqlite"
    APPLICATION_ID = 0x43544754  # "CTGT"
    TABLES: tuple[str, ...] = ()
    WHAT = "cache"
    FIX = "pass --no-cache or another --cache-dir"

    def __init__(self, directory: str | Path) -> None:
        self.dir = Path(directory)
        self.path = self.dir / self.FILE_NAME
        self.set_aside: list[str] = []  # files of this store moved aside as damaged, this run
        self.disabled: str | None = None  # set when a write fails mid-run: the rest goes without
        # one connection for every thread (a subclass holds it over several statements); a case's
        # thread may write as the session closes it: sqlite frees a statement under way
        self._lock, self._closed = threading.RLock(), False
        try:
            self.dir.mkdir(parents=True, exist_ok=True)
            self.conn = self._open()
        except OSError as exc:
            raise StoreUnavailable(
                f"cannot use the {self.WHAT} in {self.dir} ({exc}); {self.FIX}"
            ) from None

    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(
            self.path, timeout=BUSY_SECONDS, isolation_level=None, check_same_thread=False
        )
        conn.execute(f"PRAGMA busy_timeout = {int(BUSY_SECONDS * 1000)}")
        return conn

    def _open(self) -> sqlite3.Connection:
        deadline, delay, replaced = time.monotonic() + BUSY_SECONDS, 0.01, 0
        while True:
            conn: sqlite3.Connection | None = None
            try:
                if not self.path.exists():
                    with self._creation_lock():
                        if not self.path.exists():
                            self._create()
                conn = self._connect()
                problem = self._problem(conn)
                if problem is None:
                    # a read-only file or folder is found now, not at a first write mid-case
                    conn.execute("BEGIN IMMEDIATE")
                    conn.execute("ROLLBACK")
                    return conn
                conn.close()
            except sqlite3.Error as exc:
                if conn is not None:
                    conn.close()
                kind = error_kind(exc)
                if kind == "unusable":
                    raise StoreUnavailable(
                        f"cannot use the {self.WHAT} {self.path} ({exc}); {self.FIX}"
                    ) from None
                if kind == "busy":
                    if time.monotonic() > deadline:
                        raise StoreUnavailable(
                            f"the {self.WHAT} {self.path} stayed busy for {BUSY_SECONDS:.0f} s "
                            f"({exc}); {self.FIX}"
                        ) from None
                    time.sleep(delay)
                    delay = min(delay * 2, 1.0)
                    continue
                problem = str(exc)
            if replaced >= 3:
                raise StoreUnavailable(
                    f"the {self.WHAT} {self.path} keeps failing its checks ({problem}); {self.FIX}"
                )
            replaced += 1
            self._replace(problem)

    def _problem(self, conn: sqlite3.Connection) -> str | None:
        """Why this is not a usable file of this schema, or None; busy and I/O errors propagate."""
        app_id = conn.execute("PRAGMA application_id").fetchone()[0]
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        ask = "SELECT value FROM meta WHERE key = 'schema_version'"
        version = conn.execute(ask).fetchone() if "meta" in tables else None
        if app_id != self.APPLICATION_ID or version is None or version[0] != str(SCHEMA_VERSION):
            return (
                f"not a ctxgate {self.WHAT} of schema {SCHEMA_VERSION} (application id "
                f"{app_id:#x}, schema {version[0] if version else None})"
            )
        if conn.execute("PRAGMA quick_check").fetchone()[0] != "ok":
            return "integrity check failed"
        return None

    def _creation_lock(self) -> filelock.BaseFileLock:
        # an flock: released on exit, also on kill -9
        return filelock.FileLock(self.dir / f"{self.FILE_NAME}.lock")

    def _create(self) -> None:
        """Build the whole file privately, then rename it into place: nobody sees it half made."""
        tmp = self.dir / f".{self.FILE_NAME}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp"
        try:
            with closing(sqlite3.connect(tmp, isolation_level=None)) as conn:
                conn.execute("PRAGMA journal_mode = WAL")  # in the file header: it moves with it
                conn.execute(f"PRAGMA application_id = {self.APPLICATION_ID}")
                conn.execute("BEGIN")
                conn.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT)")
                conn.execute(
                    "INSERT INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),)
                )
                for table in self.TABLES:
                    conn.execute(table)
                conn.execute("COMMIT")
            os.replace(tmp, self.path)
        finally:
            for suffix in ("", "-wal", "-shm", "-journal"):
                Path(str(tmp) + suffix).unlink(missing_ok=True)

    def _replace(self, problem: str) -> None:
        """Set the file aside and start a new one, but only if it is still unusable when looked at
        under the lock (another process may have replaced it a moment ago)."""
        with self._creation_lock():
            if self.path.exists():
                try:
                    with closing(self._connect()) as conn:
                        still = self._problem(conn)
                except sqlite3.Error as exc:
                    if error_kind(exc) != "corrupt":
                        return  # busy or unreadable now: the caller's loop decides, nothing moved
                    still = str(exc)
                if still is None:
                    return
                self._set_aside(still or problem)
            self._create()

    def _set_aside(self, reason: str) -> None:
        stamp = f"{time.strftime('%Y%m%d-%H%M%S')}-{time.time_ns() % 10**6}"
        aside = self.path.with_name(f"{self.FILE_NAME}.set-aside-{stamp}")
        for suffix in ("", "-wal", "-shm"):
            src = Path(str(self.path) + suffix)
            if src.exists():
                src.rename(Path(str(aside) + suffix))
        self.set_aside.append(str(aside))
        warnings.warn(
            f"ctxgate {self.WHAT} {self.path} was unusable ({reason}); moved to {aside}, starting "
            "fresh",
            CacheWarning,
            stacklevel=4,
        )

    def execute(self, sql: str, args: tuple[Any, ...] = ()) -> list[tuple[Any, ...]] | None:
        """One statement; None once the store is given up or closed. A write that fails for good
        (read-only, disk full) gives the store up for the rest of the run with one warning."""
        try:
            with self._lock:
                if self.disabled or self._closed:
                    return None
                return self.conn.execute(sql, args).fetchall()
        except sqlite3.Error as exc:
            self.disabled = str(exc)
            warnings.warn(
                f"ctxgate {self.WHAT} {self.path} failed ({exc}); the rest of this run goes "
                f"without it. Fix: {self.FIX}",
                CacheWarning,
                stacklevel=3,
            )
            return None

    def close(self) -> None:
        with self._lock:
            self._closed = True
            self.conn.close()
