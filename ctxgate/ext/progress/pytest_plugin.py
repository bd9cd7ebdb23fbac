"""Live progress: one status line on the terminal shows each running case, its samples done /
total, tokens per second and an ETA. Under xdist, which carries no messages from a worker during
a test, each worker writes a JSON file per running case for the controller to read. The spine
tells the run plugin where each case stands (``ctxgate_progress``)."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import asdict
from pathlib import Path
from typing import Any

import pytest

from ctxgate.api import Plan, Progress, hookimpl

from .line import status_line

# seconds between redraws and file writes
INTERVAL = float(os.environ.get("CTXGATE_PROGRESS_INTERVAL", "0.5"))
SAVE, RESTORE, CLEAR = b"\x1b7", b"\x1b8", b"\x1b[K"


class _ErasingFile:
    """The terminal writer's file: the line is erased before each write, flushed before the lock is
    released, so nothing pytest writes lands on the line or is overtaken by it."""

    def __init__(self, live: LiveLine, file: Any) -> None:
        self._live, self._file = live, file

    def write(self, text: str) -> int:
        with self._live.lock:
            self._live.erase()
            written = self._file.write(text)
            self._file.flush()
            return written

    def flush(self) -> None:
        with self._live.lock:
            self._file.flush()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._file, name)


class LiveLine:
    """The status line on the controller, a plugin while it is drawn: a drawing thread, and the lock
    that pytest's own terminal output takes first."""

    def __init__(self, terminal: Any, fd: int, folder: Path | None) -> None:
        self.terminal, self.fd, self.folder = terminal, fd, folder
        self.lock = threading.RLock()
        self.local: dict[str, Progress] = {}  # this process's running cases (no xdist)
        self.finished = self.selected = 0
        self.drawn, self.shown = False, ""
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="ctxgate-progress", daemon=True)
        self._file = terminal._file
        terminal._file = _ErasingFile(self, self._file)

    def start(self, selected: int) -> None:
        if not self._thread.is_alive() and not self._stop.is_set():
            self.selected = selected
            self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5)
        self.erase()
        if isinstance(self.terminal._file, _ErasingFile):
            self.terminal._file = self._file
        os.close(self.fd)
        if self.folder is not None:
            shutil.rmtree(self.folder, ignore_errors=True)

    @contextlib.contextmanager
    def paused(self) -> Iterator[None]:
        """Around pytest's own writes: no line from before they start until they end."""
        with self.lock:
            self.erase()
            try:
                yield
            finally:
                sys.stdout.flush()

    def erase(self) -> None:
        with self.lock:
            if self.drawn:
                os.write(self.fd, CLEAR)
                self.drawn = False

    def running(self) -> list[tuple[str, Progress]]:
        """Each case with samples still to run, under its worker ("" in one process)."""
        found = [("", p) for p in list(self.local.values())]
        for path in self.folder.glob("gw*.json") if self.folder is not None else ():
            try:
                progress = Progress(**json.loads(path.read_text("utf-8")))
            except (OSError, ValueError, KeyError, TypeError):
                continue  # being replaced, or the worker has no case now
            found.append((path.name.split(".")[0], progress))
        return [(worker, p) for worker, p in found if p.done < p.total]

    def _loop(self) -> None:
        while not self._stop.wait(INTERVAL):
            with self.lock:
                room = self.terminal.fullwidth - self.terminal.width_of_current_line - 2
                line = status_line(self.finished, self.selected, self.running(), room)
                if not line:
                    self.erase()
                elif not self.drawn or line != self.shown:
                    text = line.encode("utf-8", "replace")
                    os.write(self.fd, SAVE + CLEAR + b" " + text + RESTORE)
                    self.drawn, self.shown = True, line

    # the hooks in which pytest and xdist write to the terminal: none of them writes over the line
    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_logstart(self) -> Any:
        with self.paused():
            return (yield)

    pytest_runtest_logfinish = pytest_runtest_logstart

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> Any:
        with self.paused():
            if report.when == "teardown":
                self.finished += 1
            return (yield)

    @pytest.hookimpl(wrapper=True, optionalhook=True)
    def pytest_testnodedown(self, node: Any) -> Any:
        """A worker that died leaves no stale case on the line."""
        with self.paused():
            if self.folder is not None:
                for path in self.folder.glob(f"{node.gateway.id}.*.json"):
                    path.unlink(missing_ok=True)
            return (yield)

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node: Any) -> None:
        if self.folder is not None:
            node.workerinput["ctxgate_progress_dir"] = str(self.folder)

    @hookimpl
    def ctxgate_progress(self, progress: Progress) -> None:
        """In one process: the running cases, straight onto the line."""
        if progress.over:
            self.local.pop(progress.case, None)
        else:
            self.local[progress.case] = progress

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        if self.folder is None:
            self.start(len(session.items))

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, ids: list[str]) -> None:
        self.start(len(ids))

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        """Before the summary: the line goes for good."""
        self.stop()
        session.config.pluginmanager.unregister(self)


class FileReporter:
    """On an xdist worker: each running case in a file, rewritten at most every INTERVAL s."""

    def __init__(self, folder: Path, worker: str) -> None:
        self.folder, self.worker = folder, worker
        self.last: dict[str, float] = {}

    def path(self, case: str) -> Path:
        return self.folder / f"{self.worker}.{case}.json"

    @hookimpl
    def ctxgate_progress(self, progress: Progress) -> None:
        if progress.over:
            self.end(progress.case)
            return
        now = time.monotonic()
        if now - self.last.get(progress.case, 0.0) < INTERVAL and progress.done < progress.total:
            return
        self.last[progress.case] = now
        path = self.path(progress.case)
        with contextlib.suppress(OSError):  # a courtesy: a full disk must not fail the case
            tmp = path.with_suffix(f".{threading.get_ident()}.tmp")
            tmp.write_text(json.dumps(asdict(progress)), "utf-8")
            os.replace(tmp, path)

    def end(self, case: str) -> None:
        self.last.pop(case, None)
        self.path(case).unlink(missing_ok=True)


def run_plugin(plan: Plan, config: pytest.Config, shown: bool) -> LiveLine | FileReporter | None:
    """The line on the controller's terminal (``shown``: --progress asks for one), or on an xdist
    worker the files its cases write for it."""
    if (workerinput := getattr(config, "workerinput", None)) is not None:
        folder = workerinput.get("ctxgate_progress_dir")
        return FileReporter(Path(folder), workerinput["workerid"]) if folder else None
    if (
        not plan.model.model
        or not shown
        or config.pluginmanager.get_plugin("terminalreporter") is None
        or config.getoption("collectonly")
        or not _is_terminal()
    ):
        return None
    xdist = bool(config.getoption("numprocesses", None)) and config.getoption("dist", "no") != "no"
    folder = Path(tempfile.mkdtemp(prefix="ctxgate-progress-")) if xdist else None
    return LiveLine(config.get_terminal_writer(), os.dup(sys.stdout.fileno()), folder)


def _is_terminal() -> bool:
    with contextlib.suppress(AttributeError, ValueError):
        return sys.stdout.isatty()
    return False
