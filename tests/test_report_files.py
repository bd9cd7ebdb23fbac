"""The report's files under hostile conditions: a rerun after a kill keeps what the killed run left,
two runs cannot write one report at once, a report cannot point ctxgate at a file outside its
folder, and `ctxgate judge` never rewrites a report it has nothing to do for. (Scripted backend:
plumbing.)"""

from __future__ import annotations

import fcntl
import json

import pytest

from ctxgate.cli import main
from tests.conftest import ALL_RIGHT

VT = ("-k", "vt")


def test_a_rerun_keeps_the_partial_results_of_a_killed_run(suite, pytester):
    out = pytester.path / "out"
    out.mkdir()
    left = '{"task": "vt", "length": 4096, "verdict": "pass", "score": 100.0}\n'
    (out / "r.partial.jsonl").write_text(left)
    result = suite(ALL_RIGHT, *VT, "--report", "out/r.json", lengths="4k")
    result.assert_outcomes(passed=1)
    kept = list(out.glob("r.partial-*.jsonl"))
    assert len(kept) == 1 and kept[0].read_text() == left
    assert not (out / "r.partial.jsonl").exists()  # this run finished: its own partial file is gone
    result.stdout.fnmatch_lines(
        [f"*note: an earlier run's unfinished cases are kept in out/{kept[0].name}*"]
    )


def test_a_second_run_on_the_same_report_is_refused_while_the_first_writes(suite, pytester):
    (pytester.path / "out").mkdir()
    with open(pytester.path / "out" / ".r.json.lock", "a+") as held:  # the first run holds the lock
        held.write("pid 4242, started 2026-11-22 10:00:00\n")
        held.flush()
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        result = suite(ALL_RIGHT, *VT, "--report", "out/r.json", lengths="4k")
    assert result.ret == 4
    result.stderr.fnmatch_lines(
        [
            "*--report out/r.json is being written by another ctxgate run (pid 4242, started*pass "
            "another --report*"
        ]
    )
    again = suite(
        ALL_RIGHT, *VT, "--report", "out/r.json", lengths="4k"
    )  # released: runs, and says it replaces
    again.assert_outcomes(passed=1)
    third = suite(ALL_RIGHT, *VT, "--report", "out/r.json", lengths="4k")
    third.stdout.fnmatch_lines(["*note: out/r.json replaces the report written at 20*"])


@pytest.fixture
def reports(suite, pytester):
    suite(ALL_RIGHT, *VT, "--report", "base.json", lengths="4k").assert_outcomes(passed=1)
    report = json.loads((pytester.path / "base.json").read_text())
    report["predictions"] = "/etc/hostname"
    (pytester.path / "evil.json").write_text(json.dumps(report))
    return pytester.path / "base.json", pytester.path / "evil.json"


def test_a_report_cannot_point_at_a_file_outside_its_folder(reports, suite, capsys):
    base, evil = reports
    assert main(["diff", str(base), str(evil)]) == 2
    assert (
        "its 'predictions' field '/etc/hostname' is not a file name beside the report"
        in capsys.readouterr().err
    )
    assert (
        main(
            ["judge", str(evil), "--judge-model", "m", "--judge-base-url", "http://127.0.0.1:9/v1"]
        )
        == 2
    )
    assert "'/etc/hostname' is not a file name beside the report" in capsys.readouterr().err
    result = suite(ALL_RIGHT, *VT, "--baseline", str(evil), lengths="4k")
    assert result.ret == 4 and "is not a file name beside the report" in result.stderr.str()


def test_judge_leaves_a_report_without_judged_cases_alone(reports, capsys):
    base, _ = reports
    before = base.read_bytes()
    assert (
        main(
            ["judge", str(base), "--judge-model", "m", "--judge-base-url", "http://127.0.0.1:9/v1"]
        )
        == 2
    )
    assert (
        "has no judged case (Cite, NarrativeQA, Summ): nothing to judge" in capsys.readouterr().err
    )
    assert base.read_bytes() == before
