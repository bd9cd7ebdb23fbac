"""How cases and samples are handed out: the longest cases first under xdist, and a case's samples
in flight together for a backend that batches (scripted backend: plumbing; the engines come with
issue 12)."""

from __future__ import annotations

import json

from tests.conftest import ALL_RIGHT


def log_rows(pytester) -> list[list[str]]:
    return [line.split() for line in (pytester.path / "calls.txt").read_text().splitlines()]


def test_the_longest_cases_start_first_on_every_worker(suite, pytester):
    script = {**ALL_RIGHT, "sleep": 0.01, "calls_log": str(pytester.path / "calls.txt")}
    result = suite(
        script, "-m", "ruler", "-k", "niah or vt", "-n", "2", "--no-cache", lengths="1k,8k"
    )
    result.assert_outcomes(passed=18)
    started: dict[str, list[int]] = {}  # worker -> lengths of its cases, in the order they started
    seen = set()
    for task, length, _index, worker, _in_flight in log_rows(pytester):
        if (task, length) not in seen:
            seen.add((task, length))
            started.setdefault(worker, []).append(int(length))
    assert set(started) == {"gw0", "gw1"}
    for lengths in started.values():
        assert lengths[0] == 8192 and lengths == sorted(lengths, reverse=True), started


def test_a_batching_backend_gets_a_cases_samples_together_with_the_same_results(suite, pytester):
    log = pytester.path / "calls.txt"
    reports = {}
    for concurrency in (1, 4):
        log.unlink(missing_ok=True)
        script = {
            "max_positions": 100000,
            "default": 0.5,
            "sleep": 0.02,
            "calls_log": str(log),
            "concurrency": concurrency,
        }
        suite(
            script,
            "-k",
            "niah_single_1 or vt",
            "--samples",
            "12",
            "--report",
            f"r{concurrency}.json",
            "--cache-dir",
            f"cache{concurrency}",
            lengths="4k",
        ).assert_outcomes(passed=2)
        in_flight = [int(row[4]) for row in log_rows(pytester)]
        assert len(in_flight) == 24 and max(in_flight) == concurrency
        reports[concurrency] = (pytester.path / f"r{concurrency}.predictions.jsonl").read_text()
    # each row but its wall time (how long the sample waited depends on the scheduling, by design)
    one_by_one, together = (
        [
            {k: v for k, v in json.loads(line).items() if k != "seconds"}
            for line in reports[c].splitlines()
        ]
        for c in (1, 4)
    )
    assert (
        together == one_by_one
    )  # the same samples, in the same order, with the same outputs and scores
