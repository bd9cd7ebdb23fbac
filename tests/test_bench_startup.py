"""bench/startup.py's quick mode (one pair at one thread, one breakdown run): every figure the full
run prints is there and consistent with the others. Not its speed: this machine runs other tests
beside it."""

from __future__ import annotations

import re

import pytest

from bench.startup import CASE, EXIT, LOAD, PHASES, SHUTDOWN, START, main

NUMBER = r"(\d+\.\d+)"
BOTH = {START, LOAD, CASE, EXIT, SHUTDOWN}  # the script's phases; the suite has every one


def test_the_quick_mode_prints_every_figure(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--quick"]) == 0
    out = capsys.readouterr().out
    assert re.search(r"^case: fwe at 1024 on \S+, prompt [0-9a-f]{12}, budget 50 ", out, re.M)
    pair = re.search(
        rf"^pair 1 at 1 thread\(s\): suite {NUMBER} s, script {NUMBER} s, ratio {NUMBER}x "
        r"\(suite first; (\d+) tokens decoded by each\)$",
        out,
        re.M,
    )
    assert pair, out
    suite, script, ratio = (float(pair[i]) for i in (1, 2, 3))
    assert suite > 0 and script > 0 and abs(ratio - suite / script) < 0.02, out
    assert int(pair[4]) == 50  # the budget on both sides, never end of sequence, or it stops
    summary = re.search(
        rf"^at 1 thread\(s\): a one-case run {NUMBER}x the same-work script \(median of 1 pairs, "
        rf"lowest {NUMBER}x, highest {NUMBER}x\); the suite {NUMBER} s, the script {NUMBER} s$",
        out,
        re.M,
    )
    assert summary, out
    assert [float(summary[i]) for i in (1, 2, 3)] == [ratio] * 3
    assert (float(summary[4]), float(summary[5])) == (suite, script)
    _check_breakdown(out)


def _check_breakdown(out: str) -> None:
    cell = r"(\d+\.\d+|-)"
    rows = {
        m[1]: m.groups()[1:]
        for m in re.finditer(rf"^  (\S.*?)\s+{cell}\s+{cell}\s+{cell}\s+{cell}$", out, re.M)
    }
    assert set(rows) == {*PHASES, "total"}, out
    assert all(rows[name][2:] == ("-", "-") for name in set(PHASES) - BOTH), out
    for side in (0, 2):  # each side's seconds, then the imports in them
        for column in (side, side + 1):
            figures = [float(rows[name][column]) for name in PHASES if rows[name][column] != "-"]
            assert len(figures) == (len(PHASES) if side == 0 else len(BOTH)), out
            assert all(f >= 0 for f in figures), out
            # each figure is rounded to a hundredth
            assert abs(sum(figures) - float(rows["total"][column])) <= 0.006 * len(figures), out
        assert float(rows[SHUTDOWN][side]) > 0 and float(rows[LOAD][side + 1]) > 0, out
        assert all(float(rows[n][side + 1]) <= float(rows[n][side]) + 0.01 for n in BOTH), out
    for name in ("suite", "script"):
        line = re.search(rf"^imports by package, {name} \(.*?\): (.*)$", out, re.M)
        assert line, out
        found = {package: float(s) for package, s in re.findall(rf"(\S+) {NUMBER}", line[1])}
        assert found["torch"] > 0 and found["transformers"] > 0, line[1]
