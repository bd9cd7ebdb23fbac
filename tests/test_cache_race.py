"""The cache under contention and on unwritable media: processes that open a new cache file in the
same millisecond lose nothing and set nothing aside; a read-only folder or file means no cache and
one warning."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ctxgate.backends.base import Generation, GenerationParams
from ctxgate.run.cache import FILE_NAME, CacheWarning, GenerationCache, StoreUnavailable
from tests.conftest import ROOT

PROCESSES, TRIALS, ROWS = 4, 20, 50

# Each process opens trial t's fresh folder as soon as all processes are ready for t (a file
# barrier), so the opens collide within a millisecond, then writes its rows. Before the fix this
# lost rows in about half the trials.
WORKER = """
import sys, time
from pathlib import Path
from ctxgate.backends.base import Generation, GenerationParams
from ctxgate.run.cache import GenerationCache
root, me = Path(sys.argv[1]), sys.argv[2]
processes, trials, rows = (int(a) for a in sys.argv[3:6])
params = GenerationParams(max_new_tokens=4)
for t in range(trials):
    (root / f"ready-{t}-{me}").touch()
    # only a dead peer waits this long: a busy machine may take many seconds
    deadline = time.monotonic() + 600
    while len(list(root.glob(f"ready-{t}-*"))) < processes:
        if time.monotonic() > deadline:
            sys.exit(f"trial {t}: another process died")
        time.sleep(0.0002)
    cache = GenerationCache(root / f"trial-{t}", {"model": "m"})
    for i in range(rows):
        cache.put(cache.key(f"{me}-{i}", params), Generation(f"{me}-{i}", 1, "stop"))
    cache.close()
"""


def test_processes_creating_one_cache_at_once_lose_no_row(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                "-c",
                WORKER,
                str(tmp_path),
                str(w),
                str(PROCESSES),
                str(TRIALS),
                str(ROWS),
            ],
            env=env,
            stderr=subprocess.PIPE,
            text=True,
        )
        for w in range(PROCESSES)
    ]
    errors = [p.communicate(timeout=1200)[1] for p in procs]
    assert all(p.returncode == 0 for p in procs) and not any("CacheWarning" in e for e in errors), (
        errors
    )
    for t in range(TRIALS):
        folder = tmp_path / f"trial-{t}"
        rows = (
            sqlite3.connect(folder / FILE_NAME)
            .execute("SELECT COUNT(*) FROM generations")
            .fetchone()[0]
        )
        assert rows == PROCESSES * ROWS, f"trial {t}: {rows} rows"
        assert not list(folder.glob("*set-aside*")) and not list(folder.glob("*.tmp"))


def unprivileged(fn: Callable[[], Any]) -> Any:
    """Run ``fn`` where file permissions apply: here, or (as root, who ignores them) in a forked
    child that drops to nobody. Modules are imported before the fork, so the child needs to read
    nothing."""
    if os.geteuid() != 0:
        return fn()
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        try:
            os.setgid(65534)
            os.setuid(65534)
            payload = {"ok": fn()}
        except BaseException as exc:  # noqa: BLE001 - reported to the parent
            payload = {"error": f"{type(exc).__name__}: {exc}"}
        os.write(write, json.dumps(payload).encode())
        os._exit(0)
    os.close(write)
    with os.fdopen(read) as f:
        payload = json.loads(f.read())
    os.waitpid(pid, 0)
    if "error" in payload:
        raise AssertionError(payload["error"])
    return payload["ok"]


def try_open(folder: Path) -> str:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            GenerationCache(folder, {"model": "m"})
        except StoreUnavailable as exc:
            return f"unavailable: {exc} | warnings: {len(caught)}"
    return f"opened | warnings: {len(caught)}"


@pytest.fixture
def open_folder():
    """A folder everyone can reach (pytest's tmp_path sits in a root-only folder, which would hide
    the point)."""
    import shutil
    import tempfile

    base = Path(tempfile.mkdtemp(prefix="ctxgate-ro-"))
    base.chmod(0o755)
    yield base
    for p in [base, *base.rglob("*")]:
        p.chmod(0o755)
    shutil.rmtree(base)


@pytest.mark.parametrize("what", ["folder", "file", "writable"])
def test_read_only_cache_is_unavailable_not_a_traceback(open_folder, what):
    folder = open_folder / "cache"
    GenerationCache(folder, {"model": "m"}).close()
    if what == "folder":
        (folder / FILE_NAME).unlink()
        folder.chmod(0o555)
    elif what == "file":
        (folder / FILE_NAME).chmod(0o444)
        folder.chmod(0o555)
    else:  # the control: the same user reaches and writes an ordinary cache
        folder.chmod(0o777)
        (folder / FILE_NAME).chmod(0o666)
    outcome = unprivileged(lambda: try_open(folder))
    if what == "writable":
        assert outcome == "opened | warnings: 0"
        return
    assert outcome.startswith("unavailable:") and "--no-cache or another --cache-dir" in outcome, (
        outcome
    )
    assert outcome.endswith(
        "warnings: 0"
    )  # nothing was set aside: the file is fine, only not writable here


def test_a_write_that_fails_mid_run_gives_the_cache_up_with_one_warning(tmp_path):
    cache = GenerationCache(tmp_path, {"model": "m"})
    params = GenerationParams(max_new_tokens=4)
    # what a vanished disk looks like to sqlite: every statement fails from here on
    cache.conn.close()
    with pytest.warns(CacheWarning, match="the rest of this run goes without it") as caught:
        for i in range(3):
            cache.put(cache.key(str(i), params), Generation("x", 1, "stop"))
            assert cache.get(cache.key(str(i), params)) is None
    assert len(caught) == 1 and cache.disabled


def test_a_busy_file_is_waited_for_never_set_aside(tmp_path):
    GenerationCache(tmp_path, {"model": "m"}).close()
    holder = sqlite3.connect(tmp_path / FILE_NAME, isolation_level=None, check_same_thread=False)
    holder.execute("BEGIN EXCLUSIVE")  # another process in the middle of a write

    def release() -> None:
        time.sleep(0.5)
        holder.execute("COMMIT")

    import threading

    threading.Thread(target=release).start()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        cache = GenerationCache(tmp_path, {"model": "m"})
    assert cache.set_aside == [] and not list(tmp_path.glob("*set-aside*"))
