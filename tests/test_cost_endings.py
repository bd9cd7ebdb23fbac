"""The cost line counts what ran, however the run ended: a SIGINT, a SIGTERM or a worker's death
at a random point of a run leaves a report whose cost counts every generation the generation cache
holds of it (the run's ledger, ``run/cache.spent_in``), and whose cases' costs add up to it."""

from __future__ import annotations

import json
import os
import random
import signal
import sqlite3
import time
from contextlib import closing
from pathlib import Path

import pytest

from tests.conftest import ALL_RIGHT, SCRIPTED, start_suite

RUN = (
    "--backend",
    SCRIPTED,
    "--lengths",
    "4k",
    "--samples",
    "8",
    "-m",
    "ruler",
    "-k",
    "niah or vt",
)
RUN += ("--cache-dir", "cache", "--report", "out/r.json")


def _rows(cache: Path) -> int:
    """Generations the cache holds: every one this run made (it started empty)."""
    if not (cache / "generations.sqlite").exists():
        return 0
    with closing(sqlite3.connect(cache / "generations.sqlite")) as conn:
        return int(conn.execute("SELECT count(*) FROM generations").fetchone()[0])


def _check(folder: Path) -> dict[str, object]:
    report = json.loads((folder / "out" / "r.json").read_text())
    total = report["cost"]["total"]
    assert total["generations"] == _rows(folder / "cache") > 0
    cases = [c["cost"] for c in report["cases"] if c["cost"]]
    for field in ("generations", "prompt_tokens", "generated_tokens"):
        assert total[field] == sum(c[field] for c in cases)
    return report


@pytest.mark.parametrize("sent", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
@pytest.mark.parametrize("seed", [1, 2])
def test_a_signal_at_a_random_point_leaves_every_generation_in_the_cost(pytester, sent, seed):
    log = pytester.path / "calls.txt"
    script = {**ALL_RIGHT, "sleep": 0.1, "calls_log": str(log)}
    (pytester.path / "script.json").write_text(json.dumps(script))
    proc = start_suite(*RUN, model="script.json", cwd=pytester.path, new_session=True, ctrl_c=True)
    wanted = random.Random(seed).randint(1, 30)  # generations before the signal: of 9 x 8
    deadline = time.time() + 120
    while (
        not log.exists() or len(log.read_text().splitlines()) < wanted
    ) and time.time() < deadline:
        time.sleep(0.01)
    os.killpg(proc.pid, sent)
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode in (2, 1), out[-3000:]  # interrupted; the report is written
    report = _check(pytester.path)
    assert report["complete"] is False
    assert "Cost: " in out


@pytest.mark.parametrize("at", [0, 3, 7])
def test_a_workers_death_mid_case_leaves_its_generations_in_the_cost(suite, pytester, at):
    """vt's worker dies at its sample ``at``: the samples it generated first are in the cache, and
    in the cost of its case, which the report counts as a crash."""
    script = {**ALL_RIGHT, "kill": {"vt": {"*": at}}}
    result = suite(
        script, "-k", "niah_single_1 or vt", "-n", "2", "--samples", "8", "--cache-dir", "cache",
        "--report", "out/r.json", lengths="4k",
    )  # fmt: skip
    assert result.ret == 1
    report = _check(pytester.path)
    vt = next(c for c in report["cases"] if c["task"] == "vt")
    assert vt["error_kind"] == "crash"
    assert (vt["cost"] or {}).get("generations", 0) == at
