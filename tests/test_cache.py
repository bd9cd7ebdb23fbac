"""The generation cache: re-runs regenerate nothing, kill -9 loses at most the samples in flight,
concurrent workers lose nothing, damaged or foreign files are set aside, and one checkpoint never
reads another's outputs."""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import time

import pytest

from ctxgate.backends.base import Generation, GenerationParams
from ctxgate.run.cache import FILE_NAME, CacheWarning, GenerationCache
from tests.conftest import ROOT, SCRIPTED, suite_command, suite_env

PARAMS = GenerationParams(max_new_tokens=8)


def test_put_get_and_namespaces(tmp_path):
    a = GenerationCache(tmp_path, {"model": "A"})
    key = a.key("p123", PARAMS)
    assert a.get(key) is None
    a.put(key, Generation("out", 3, "stop"))
    assert a.get(key) == Generation("out", 3, "stop")
    b = GenerationCache(tmp_path, {"model": "B"})
    assert b.get(b.key("p123", PARAMS)) is None  # another checkpoint: another key
    assert a.key("p123", GenerationParams(max_new_tokens=9)) != key


@pytest.mark.parametrize(
    "content", [b"this is not a database", b"SQLite format 3\x00" + b"\x00" * 50]
)
def test_corrupt_file_is_set_aside(tmp_path, content):
    (tmp_path / FILE_NAME).write_bytes(content)
    with pytest.warns(CacheWarning, match="moved to"):
        cache = GenerationCache(tmp_path, {"model": "A"})
    assert cache.set_aside and (tmp_path / FILE_NAME).exists()
    key = cache.key("p1", PARAMS)
    cache.put(key, Generation("x", 1, "stop"))
    assert cache.get(key) is not None


def test_foreign_sqlite_file_is_set_aside(tmp_path):
    conn = sqlite3.connect(tmp_path / FILE_NAME)
    conn.execute("CREATE TABLE other (x)")
    conn.commit()
    conn.close()
    with pytest.warns(CacheWarning, match="not a ctxgate cache"):
        GenerationCache(tmp_path, {"model": "A"})


def test_damaged_row_is_dropped_not_served(tmp_path):
    cache = GenerationCache(tmp_path, {"model": "A"})
    key = cache.key("p5", PARAMS)
    cache.put(key, Generation("right", 1, "stop"))
    cache.conn.execute("UPDATE generations SET text = 'wrong' WHERE key = ?", (key,))
    with pytest.warns(CacheWarning, match="damaged entry"):
        assert cache.get(key) is None
    assert cache.conn.execute("SELECT COUNT(*) FROM generations").fetchone()[0] == 0


@pytest.fixture
def scripted(pytester: pytest.Pytester):
    shutil.copytree(ROOT / "tests_longctx", pytester.path / "tests_longctx")
    pytester.makeini("[pytest]\ntestpaths = tests_longctx\naddopts = -p no:cacheprovider\n")
    log = pytester.path / "calls.txt"

    def script(**extra) -> str:
        (pytester.path / "script.json").write_text(
            json.dumps({"default": 1.0, "calls_log": str(log), **extra})
        )
        return "script.json"

    def calls() -> list[str]:
        return log.read_text().splitlines() if log.exists() else []

    return pytester, script, calls


ARGS = [
    "--backend",
    SCRIPTED,
    "--lengths",
    "4k",
    "--samples",
    "6",
    "-m",
    "ruler",
    "-k",
    "niah or vt",
]


def test_rerun_regenerates_nothing_and_reports_it(scripted):
    pytester, script, calls = scripted
    pytester.runpytest("--model", script(), *ARGS, "--report", "a.json").assert_outcomes(passed=9)
    first = len(calls())
    assert first == 9 * 6
    pytester.runpytest("--model", "script.json", *ARGS, "--report", "b.json").assert_outcomes(
        passed=9
    )
    assert len(calls()) == first
    report = json.loads((pytester.path / "b.json").read_text())
    assert report["run"]["cache"]["samples_from_cache"] == 54
    assert all(c["samples_from_cache"] == 6 and c["throughput"] is None for c in report["cases"])
    pytester.runpytest("--model", "script.json", *ARGS, "--no-cache").assert_outcomes(passed=9)
    assert len(calls()) == 2 * first


def test_concurrent_workers_lose_nothing(scripted):
    pytester, script, calls = scripted
    result = pytester.runpytest("--model", script(), *ARGS, "-n", "2")
    result.assert_outcomes(passed=9)
    assert len(calls()) == 54
    rows = (
        sqlite3.connect(pytester.path / ".ctxgate-cache" / FILE_NAME)
        .execute("SELECT COUNT(*) FROM generations")
        .fetchone()[0]
    )
    assert rows == 54
    pytester.runpytest("--model", "script.json", *ARGS, "-n", "2").assert_outcomes(passed=9)
    assert len(calls()) == 54


def test_another_checkpoint_never_hits_this_cache(scripted):
    pytester, script, calls = scripted
    pytester.runpytest("--model", script(), *ARGS).assert_outcomes(passed=9)
    pytester.runpytest("--model", script(default=0.0), *ARGS).assert_outcomes(failed=0, passed=9)
    assert len(calls()) == 2 * 54


@pytest.mark.parametrize("in_flight", [1, 4])
def test_kill_9_mid_case_loses_at_most_the_sample_in_flight(scripted, in_flight):
    pytester, script, calls = scripted
    script(sleep=0.05 * in_flight, concurrency=in_flight)
    proc = subprocess.Popen(
        suite_command(*ARGS, model="script.json"),
        cwd=pytester.path,
        env=suite_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    deadline = time.time() + 60
    while len(calls()) < 20 and time.time() < deadline:  # kill in the middle of the fourth case
        time.sleep(0.02)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    done_before = len(calls())
    assert 20 <= done_before < 54
    pytester.runpytest("--model", "script.json", *ARGS).assert_outcomes(passed=9)
    regenerated = len(calls()) - done_before
    assert (
        regenerated <= 54 - done_before + in_flight
    )  # what was not generated, and at most those in flight


def test_a_write_under_way_as_the_session_closes_the_cache_ends_first(tmp_path):
    """A case's thread may still be writing when an interrupted session closes the cache: the close
    waits for that statement (sqlite would free it under way: a segfault), and a write after it is
    dropped."""
    import threading

    cache = GenerationCache(tmp_path, {"model": "A"})
    entered, release, real = threading.Event(), threading.Event(), cache.conn

    class Slow:
        def execute(self, *args: object) -> sqlite3.Cursor:
            entered.set()
            release.wait(30)
            return real.execute(*args)  # type: ignore[arg-type]

        def close(self) -> None:
            real.close()

    cache.conn = Slow()  # type: ignore[assignment]
    writer = threading.Thread(target=cache.execute, args=("SELECT 1",))
    writer.start()
    assert entered.wait(30)
    closer = threading.Thread(target=cache.close)
    closer.start()
    closer.join(0.3)
    assert closer.is_alive()  # held until the statement under way is done
    release.set()
    writer.join(30)
    closer.join(30)
    assert not closer.is_alive() and cache.execute("SELECT 1") is None
