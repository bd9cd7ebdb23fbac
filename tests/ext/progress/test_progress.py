"""The live progress line: drawn on a terminal while cases run (per worker under xdist), erased
before pytest writes, absent from pipes and junit. Terminal runs use a real pseudo-terminal; a small
emulator replays what the user's screen shows at the end."""

from __future__ import annotations

import os
import pty
import re
import select
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ctxgate.ext.progress.line import clock, describe, eta_seconds, status_line
from ctxgate.run.progress import Progress
from tests.conftest import launch_suite, suite_command, suite_env

SELECT = ("-k", "cwe or vt", "--lengths", "1k", "--samples", "6", "--no-cache")


def test_a_case_line_says_samples_rate_and_eta():
    p = Progress("vt-4096", 12, 20, 2, 3100, 10.0)
    assert describe(p) == "vt-4096 12/20 310 tok/s ETA 0:08"  # 8 left at 10 generated per 10 s
    assert describe(Progress("vt-4096", 0, 20, 0, 0, 0.0)) == "vt-4096 0/20 starting"
    assert (
        eta_seconds(Progress("vt-4096", 5, 20, 5, 0, 0.3)) is None
    )  # all from the cache: no pace yet


@pytest.mark.parametrize(
    ("seconds", "text"), [(7.4, "0:07"), (750, "12:30"), (7500, "2:05:00"), (-3, "0:00")]
)
def test_clock(seconds, text):
    assert clock(seconds) == text


progresses = st.builds(
    Progress,
    st.text("abcvt-0123456789", min_size=1, max_size=30),
    st.integers(0, 500),
    st.integers(1, 500),
    st.integers(0, 500),
    st.integers(0, 10**7),
    st.floats(0, 10**5, allow_nan=False),
)


@given(
    st.lists(st.tuples(st.sampled_from(["gw0", "gw1", "gw2", ""]), progresses), max_size=8),
    st.integers(0, 300),
    st.integers(-5, 400),
)
def test_the_status_line_never_exceeds_its_room(running, finished, width):
    line = status_line(finished, 26, running, width)
    assert len(line) <= max(width, 0)
    assert (line == "") == (not running or width < 10)
    assert "\n" not in line and "\r" not in line


def screen(raw: bytes) -> list[str]:
    """What a terminal shows after ``raw``: cursor save/restore (ESC 7/8), clear to end of line (ESC
    [K), carriage return and newline; colours dropped."""
    text = re.sub(rb"\x1b\[[0-9;]*m", b"", raw).decode("utf-8", "replace")
    rows: list[list[str]] = [[]]
    row = col = 0
    saved = (0, 0)
    i = 0
    while i < len(text):
        if text.startswith("\x1b7", i):
            saved, i = (row, col), i + 2
            continue
        if text.startswith("\x1b8", i):
            (row, col), i = saved, i + 2
            continue
        if text.startswith("\x1b[K", i):
            del rows[row][col:]
            i += 3
            continue
        ch = text[i]
        i += 1
        if ch == "\r":
            col = 0
        elif ch == "\n":
            row, col = row + 1, 0
            while len(rows) <= row:
                rows.append([])
        else:
            line = rows[row]
            line.extend(" " * (col - len(line)))
            if col < len(line):
                line[col] = ch
            else:
                line.append(ch)
            col += 1
    return ["".join(r).rstrip() for r in rows]


def on_a_terminal(cwd: Path, *args: str) -> bytes:
    """The suite with a pseudo-terminal as stdout and stderr; every byte the user's terminal would
    get."""
    master, slave = pty.openpty()
    env = {**suite_env(), "COLUMNS": "150", "CTXGATE_PROGRESS_INTERVAL": "0.05"}
    proc = subprocess.Popen(
        suite_command(*args),
        stdout=slave,
        stderr=slave,
        stdin=subprocess.DEVNULL,
        cwd=cwd,
        env=env,
    )
    os.close(slave)
    out = b""
    while True:
        ready, _, _ = select.select([master], [], [], 0.5)
        if ready:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # the child closed its side
                break
            if not chunk:
                break
            out += chunk
        elif proc.poll() is not None:
            break
    os.close(master)
    assert proc.wait(timeout=600) == 0, out.decode(errors="replace")[-3000:]
    return out


@pytest.mark.parametrize("xdist", [(), ("-n", "2")], ids=["one-process", "xdist"])
def test_the_line_shows_while_cases_run_and_is_gone_from_the_screen(tmp_path, xdist):
    raw = on_a_terminal(tmp_path, *SELECT, "-q", "--junitxml", "junit.xml", *xdist)
    drawn = raw.decode("utf-8", "replace")
    assert re.search(r"\[\d/2 cases\] (gw\d )?(cwe|vt)-1024 \d/6 ", drawn), drawn[-2000:]
    if xdist:
        assert re.search(r"gw[01] (cwe|vt)-1024 \d/6", drawn)
    assert "tok/s" in drawn and "ETA" in drawn
    shown = screen(raw)
    assert not any("tok/s" in line or "cases]" in line for line in shown), (
        shown
    )  # erased, every time
    assert any(re.fullmatch(r"\.\. +\[100%\]", line) for line in shown), shown  # -q's dots, whole
    # pytest adds the clock time past a minute, as on a loaded machine
    summary = r"2 passed(, \d+ deselected)? in [\d.]+s( \(\d+:\d\d:\d\d\))?"
    assert any(re.fullmatch(summary, line) for line in shown), shown
    junit = ET.parse(tmp_path / "junit.xml").getroot()
    assert "tok/s" not in ET.tostring(junit, encoding="unicode")


def test_no_line_in_a_pipe_or_with_progress_off(tmp_path):
    few = (
        "-k",
        "vt",
        "--lengths",
        "1k",
        "--samples",
        "3",
        "--no-cache",
    )  # the line would show within 0.05 s
    piped = launch_suite(
        *few,
        "-n",
        "2",
        cwd=tmp_path,
        env={"CTXGATE_PROGRESS_INTERVAL": "0.05"},
        timeout=600,
        text=False,
    )
    assert piped.returncode == 0 and b"\x1b7" not in piped.stdout + piped.stderr
    raw = on_a_terminal(tmp_path, *few, "--progress", "off")
    assert b"\x1b7" not in raw and b"tok/s" not in raw


def test_a_write_through_the_terminal_writer_erases_the_line_and_reaches_the_screen_at_once():
    """The cause of a line once seen merged with pytest's dots under load: a write made outside the
    hooks the line paused for, or one left in a buffer while the drawing thread wrote the line
    straight to the terminal. Every write through pytest's terminal writer (whoever makes it) now
    erases the drawn line first and is flushed before the line can be drawn again."""
    import io

    from _pytest._io.terminalwriter import TerminalWriter

    from ctxgate.ext.progress.pytest_plugin import CLEAR, LiveLine

    read_fd, write_fd = os.pipe()
    buffered = io.TextIOWrapper(
        io.BufferedWriter(io.FileIO(os.dup(write_fd), "w"), buffer_size=1 << 16)
    )
    tw = TerminalWriter(buffered)
    live = LiveLine(tw, write_fd, None)
    try:
        live.drawn = True  # as if the drawing thread had just drawn the line
        tw.write("[gw0] PASSED a plugin's own line")  # no newline, no flush asked for
        os.set_blocking(read_fd, False)
        arrived = os.read(read_fd, 4096)
        assert arrived.startswith(CLEAR) and arrived.endswith(b"a plugin's own line"), arrived
        assert live.drawn is False
    finally:
        live.stop()
        buffered.close()
        os.close(read_fd)


@pytest.mark.parametrize("xdist", [False, True], ids=["one-process", "xdist"])
def test_every_case_running_at_once_is_on_the_line_until_it_ends(tmp_path, xdist):
    """Cases that run ahead of their items (a server's batch kept full, replicas on a cluster) run
    together: each one is on the line, under its worker, whichever reported last, until its last
    sample or its end."""
    from ctxgate.ext.progress.pytest_plugin import FileReporter, LiveLine

    read_fd, write_fd = os.pipe()
    live = LiveLine(type("Writer", (), {"_file": None})(), write_fd, tmp_path if xdist else None)
    heard = FileReporter(tmp_path, "gw1") if xdist else live  # the run plugin on the case's process

    def over(case: str) -> None:
        heard.ctxgate_progress(Progress(case, 0, 0, 0, 0, 0.0, over=True))

    try:
        heard.ctxgate_progress(Progress("vt-4096", 3, 20, 0, 90, 1.5))
        heard.ctxgate_progress(Progress("cwe-4096", 1, 20, 0, 40, 0.5))
        heard.ctxgate_progress(Progress("qa_1-4096", 19, 20, 0, 40, 0.5))
        worker = "gw1" if xdist else ""
        assert sorted((w, p.case, p.done) for w, p in live.running()) == [
            (worker, "cwe-4096", 1),
            (worker, "qa_1-4096", 19),
            (worker, "vt-4096", 3),
        ]
        # its last sample: done, waiting for its item
        heard.ctxgate_progress(Progress("qa_1-4096", 20, 20, 0, 42, 0.6))
        over("vt-4096")
        assert [(w, p.case) for w, p in live.running()] == [(worker, "cwe-4096")]
        over("cwe-4096")
        over("qa_1-4096")
        assert live.running() == []
    finally:
        os.close(read_fd)
        os.close(write_fd)
