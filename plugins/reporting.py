"""Reports under xdist: case records ride on test reports to the controller, which writes the
report files and applies the session gates. A selected case that never sends a record is reported
as an error; each record is appended to ``<report>.partial.jsonl`` as it arrives; the report
files are written atomically, under a lock beside them."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import time
from collections.abc import Generator
from dataclasses import replace
from pathlib import Path
from typing import Any

import filelock
import pytest

from ctxgate.gate.baseline import Baseline
from ctxgate.gate.session import judge_session
from ctxgate.gate.thresholds import Thresholds
from ctxgate.hooks import flat, hook
from ctxgate.records.case import CaseRecord, SampleOutcome
from ctxgate.records.io import (
    Beside,
    atomic_write_all,
    created_at,
    report_text,
)
from ctxgate.records.schema import BaselineRun, Report, RunError, RunInfo, adapter_for, to_json
from ctxgate.records.slots import typed
from ctxgate.report.build import build_report, prediction_rows, with_ledger, with_sections
from ctxgate.report.tables import markdown, terminal
from ctxgate.run.cache import spent_in

from .cases import CASE_STATE_KEY, case_key, new_record
from .collection import NOT_RUN_KEY
from .model import RUN_ERROR_KEY, RUN_ID_KEY
from .options import PLAN_KEY, STARTUP_ERROR_KEY, refusals_are_usage_errors
from .signals import RECEIVED_KEY


class Collector:
    def __init__(self, report_path: str | None, thresholds: Thresholds | None = None) -> None:
        self.records: dict[tuple[str, int], CaseRecord] = {}
        # each case's samples, for the predictions file
        self.samples: dict[tuple[str, int], tuple[SampleOutcome, ...]] = {}
        self.selected: dict[tuple[str, int], None] = {}  # an ordered set: the selection, in order
        self.thresholds = thresholds or Thresholds(path="(none)")
        self.run_meta: dict[str, Any] | None = None
        self.run_error: RunError | None = None
        self.report_path = Path(report_path) if report_path else None
        self.report: Report | None = None
        self.notes: list[str] = []  # said once at the end: a kept partial file, a replaced report
        self.partial_error: str | None = None  # the partial file cannot be written: stop trying
        self.write_error: str | None = None  # the report could not be written
        self.besides: list[Beside] = []  # the extras' files beside the report
        self._lock: filelock.BaseFileLock | None = None
        if self.report_path:
            self.partial = self.report_path.with_suffix(".partial.jsonl")
            self.lock_path = self.report_path.parent / f".{self.report_path.name}.lock"

    def claim(self) -> None:
        """Check ``--report`` before anything runs, take its lock, keep what an earlier run left."""
        assert self.report_path is not None
        path = self.report_path
        if path.is_dir():
            raise pytest.UsageError(
                f"--report {path} is a folder; give a file path such as {path / 'run.json'}"
            )
        if path.exists() and not path.is_file():
            raise pytest.UsageError(
                f"--report {path} exists and is not a regular file (a device, a pipe); give a "
                "file path such as out/run.json"
            )
        # an exclusive lock beside the report (filelock: an flock, released on exit, even kill -9)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            lock = filelock.FileLock(self.lock_path, timeout=0)
            lock.acquire()
        except filelock.Timeout:
            holder = "another process"
            with contextlib.suppress(OSError):
                holder = self.lock_path.read_text("utf-8").strip() or holder
            raise pytest.UsageError(
                f"--report {path} is being written by another ctxgate run ({holder}); wait for it "
                "to finish, or pass another --report"
            ) from None
        except OSError as exc:
            raise pytest.UsageError(
                f"--report {path}: cannot write there ({exc.strerror or exc}); give a writable path"
            ) from None
        self._lock = lock
        # the held lock file can say who holds it: a courtesy, which a full disk must not fail
        with contextlib.suppress(OSError):
            self.lock_path.write_text(
                f"pid {os.getpid()}, started {time.strftime('%Y-%m-%d %H:%M:%S')}\n"
            )
        if self.partial.exists() and self.partial.stat().st_size:
            stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(self.partial.stat().st_mtime))
            kept = self.partial.with_name(f"{path.stem}.partial-{stamp}.jsonl")
            self.partial.rename(kept)
            self.notes.append(f"an earlier run's unfinished cases are kept in {kept}")
        if path.exists():
            self.notes.append(f"{path} replaces the report written at {created_at(path)}")

    def release(self) -> None:
        if self._lock is not None:
            # removed while still held, so no run is left locking a file no path names: filelock's
            # acquire checks that the file it locked is still linked, and tries again when not
            self.lock_path.unlink(missing_ok=True)
            self._lock.release()
            self._lock = None

    def select(self, nodeids: list[str]) -> None:
        self.selected.update(dict.fromkeys(k for k in map(case_key, nodeids) if k is not None))

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        """Without xdist: the selection is this process's own collection."""
        self.select([i.nodeid for i in session.items] + session.config.stash.get(NOT_RUN_KEY, []))

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: Any, ids: list[str]) -> None:
        """Under xdist: every worker collects the same selection; the first to finish tells it."""
        self.select(list(ids))

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """On the controller: every case record arrives here, from this process or a worker."""
        wire = getattr(report, "ctxgate_case", None)
        if wire is not None:
            self.add(wire)
            return
        key = case_key(report.nodeid)
        if key is not None and report.failed and key not in self.records:
            # No record: the process running the case died (xdist reports the crash, when "???").
            kind = "crash" if report.when == "???" else "error"
            died = "its worker process died (killed, out of memory, or crashed): "
            why = (died if kind == "crash" else "") + str(report.longrepr)[-2000:]
            self.add({"record": to_json(self.unscored(key, kind, why))})

    def unscored(self, key: tuple[str, int], kind: str, message: str) -> CaseRecord:
        record = new_record(*key, self.thresholds)
        return replace(record, error_kind=kind, message=message)  # type: ignore[arg-type]

    def add(self, wire: dict[str, Any]) -> None:
        """A case as ``CaseState.to_wire`` sends it (plain JSON)."""
        record = adapter_for(CaseRecord).validate_python(wire["record"])
        record = replace(record, extras=typed(record.extras, "case", record.name))
        meta, error = wire.get("run_meta"), wire.get("run_error")
        if error and self.run_error is None:
            self.run_error = adapter_for(RunError).validate_python(error)
        if meta and self.run_meta is None:
            self.run_meta = meta
        if meta and self.run_meta is not None and "cache" in meta:  # each worker sets files aside
            cache = self.run_meta.setdefault("cache", dict(meta["cache"]))
            seen = cache.setdefault("set_aside", [])
            seen.extend(p for p in meta["cache"].get("set_aside", []) if p not in seen)
        samples = adapter_for(tuple[SampleOutcome, ...]).validate_python(wire.get("samples") or ())
        self.records[(record.task, record.length)] = record
        self.samples[(record.task, record.length)] = samples
        if self.report_path and self.partial_error is None:
            # with its samples' outputs: what an interrupted run cannot regenerate without the model
            line = json.dumps({**wire["record"], "samples": wire.get("samples") or []}) + "\n"
            size = self.partial.stat().st_size if self.partial.exists() else 0
            try:
                with self.partial.open("a", encoding="utf-8") as f:
                    f.write(line)
            except OSError as exc:  # a full disk: the records are still in memory for the report
                self.partial_error = f"cannot append to {self.partial} ({exc.strerror or exc})"
                self.notes.append(
                    f"{self.partial_error}; unfinished cases are no longer saved as they finish"
                )
                with contextlib.suppress(OSError):  # no record cut in half: it ends at a whole line
                    os.truncate(self.partial, size)

    def finish(self, reason: str) -> list[CaseRecord]:
        """Every selected case: those that never reported as not run, with ``reason``."""
        for key in self.selected:
            if key not in self.records:
                self.records[key] = self.unscored(key, "not_run", f"not run: {reason}")
        return list(self.records.values())


COLLECTOR_KEY = pytest.StashKey[Collector]()


@refusals_are_usage_errors
def pytest_configure(config: pytest.Config) -> None:
    plan = config.stash[PLAN_KEY]
    if not plan.model.model or hasattr(config, "workerinput") or config.getoption("collectonly"):
        return
    collector = Collector(plan.report, plan.thresholds)
    if collector.report_path:
        collector.claim()
    collector.run_error = config.stash.get(STARTUP_ERROR_KEY, None)
    config.stash[COLLECTOR_KEY] = collector
    config.pluginmanager.register(collector, "ctxgate-collector")


def pytest_unconfigure(config: pytest.Config) -> None:
    collector = config.stash.get(COLLECTOR_KEY, None)
    if collector is not None:
        collector.release()
        config.pluginmanager.unregister(collector)
        del config.stash[COLLECTOR_KEY]


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report: pytest.TestReport = yield
    state = item.stash.get(CASE_STATE_KEY, None)
    final = report.when == "call" or (report.when == "setup" and not report.passed)
    if state is not None and final:
        record = state.record
        if report.failed and record.verdict != "fail" and not record.error_kind:
            state.record = replace(
                record, verdict="error", error_kind="error", message=str(report.longrepr)[-2000:]
            )
            state.run_error = item.session.stash.get(RUN_ERROR_KEY, None)
        # A plain attribute travels through xdist's report serialization (and stays out of junit).
        report.ctxgate_case = state.to_wire()  # type: ignore[attr-defined]
    return report


def _stop_reason(session: pytest.Session, exitstatus: int, run_error: RunError | None) -> str:
    if run_error:
        return f"the run stopped: {run_error.message.splitlines()[0]}"
    if exitstatus == pytest.ExitCode.INTERRUPTED:
        received = session.config.stash.get(RECEIVED_KEY, [])
        how = f" ({received[0]})" if received else ""
        return f"the session was interrupted{how} before this case finished"
    if stopped := session.shouldfail or session.shouldstop:
        return f"the session stopped early ({stopped})"
    return "the session ended before this case ran"


def _write(collector: Collector, report: Report, baseline: Baseline | None) -> None:
    assert collector.report_path is not None
    path = collector.report_path
    predictions = path.with_suffix(".predictions.jsonl")
    rows = [
        row
        for case in report.cases
        for row in prediction_rows(case, collector.samples.get((case.task, case.length), ()))
    ]
    report = replace(report, predictions=predictions.name)
    answers = hook().ctxgate_report_files(
        report=report, predictions=rows, path=path, baseline=baseline
    )
    collector.besides = list(flat(answers))
    collector.notes += [b.note for b in collector.besides if b.note]
    files = {
        predictions: "".join(json.dumps(to_json(row)) + "\n" for row in rows),
        path.with_suffix(".md"): markdown(report, _pointers(collector.besides)),
        path: report_text(report),
    }
    files |= {b.path: b.text for b in collector.besides if b.text is not None}
    atomic_write_all(files)
    collector.partial.unlink(missing_ok=True)


def _pointers(besides: list[Beside]) -> list[str]:
    """The Markdown report's lines to the files written beside it."""
    return [b.pointer for b in besides if b.pointer and b.text is not None]


def session_report(session: pytest.Session, exitstatus: int) -> Report | None:
    """The session's report, made once by the first hook that asks (the junit plugin's, else
    ``pytest_sessionfinish``). None where nothing is reported (an xdist worker, no ``--model``)."""
    config = session.config
    collector = config.stash.get(COLLECTOR_KEY, None)
    if collector is None or collector.report is not None:
        return None if collector is None else collector.report
    thresholds, plan = collector.thresholds, config.stash[PLAN_KEY]  # the run's (pytest_configure)
    cases = collector.finish(_stop_reason(session, exitstatus, collector.run_error))
    if plan.model.cache_dir:  # what every case generated, however the run ended
        cases = with_ledger(cases, spent_in(plan.model.cache_dir, config.stash[RUN_ID_KEY]))
    meta = collector.run_meta or {
        "model": plan.model.model,
        "backend": None,
        "seed": plan.model.seed,
        "samples": plan.samples,
        "lengths": list(plan.lengths),
        "chat_template": "off" if plan.model.chat_template == "auto" else plan.model.chat_template,
    }
    hashes = sorted(c.data_sha256 for c in cases if c.data_sha256)
    combined = hashlib.sha256("".join(hashes).encode()).hexdigest() if hashes else None
    meta = dict(meta, thresholds=thresholds.path, data_sha256=combined)
    if meta.get("cache"):
        meta["cache"] = dict(
            meta["cache"], samples_from_cache=sum(c.samples_from_cache for c in cases)
        )
    run = adapter_for(RunInfo).validate_python(meta)
    run = replace(run, extras=typed(run.extras, "run", "run"))
    complete = exitstatus not in (pytest.ExitCode.INTERRUPTED, pytest.ExitCode.INTERNAL_ERROR)
    baseline = None
    if plan.baseline is not None:
        selected, scored = {(c.task, c.length) for c in cases}, sorted(plan.baseline.cases)
        baseline = BaselineRun(
            plan.baseline.path,
            tuple(f"{t}-{L}" for t, L in scored if (t, L) in selected),
            tuple(f"{t}-{L}" for t, L in scored if (t, L) not in selected),
        )
    decided: dict[int, bool] = {}
    for answer in hook().ctxgate_decided_lengths():
        decided |= answer or {}
    verdict = judge_session(cases, thresholds, complete, baseline=baseline, decided=decided)
    report = build_report(cases, run, verdict, collector.run_error)
    extras: dict[str, object] = {}
    for answer in hook().ctxgate_report_record(report=report, plan=plan):
        extras |= answer
    collector.report = with_sections(replace(report, extras=extras))
    return collector.report


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    report = session_report(session, exitstatus)
    if report is None:
        return
    collector, plan = session.config.stash[COLLECTOR_KEY], session.config.stash[PLAN_KEY]
    if collector.report_path:
        try:
            _write(collector, report, plan.baseline)
        except OSError as exc:
            collector.write_error = (
                f"the report could not be written to {collector.report_path} "
                f"({exc.strerror or exc}); nothing half-written was left: free space or pass a "
                "writable --report, then re-run (the generation cache keeps what ran)"
            )
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
    if summary := os.environ.get("GITHUB_STEP_SUMMARY"):
        written = [b for b in collector.besides if not collector.write_error and b.path.is_file()]
        try:
            with open(summary, "a", encoding="utf-8") as f:
                f.write(markdown(report, _pointers(written)))
        except OSError as exc:
            collector.notes.append(
                f"GITHUB_STEP_SUMMARY {summary} could not be appended to ({exc.strerror or exc})"
            )
    done = hook().ctxgate_report_done(report=report, path=collector.report_path, plan=plan)
    collector.notes += flat(done)
    failed = any(g.verdict == "fail" for g in report.gates)
    if failed and session.exitstatus in (pytest.ExitCode.OK, pytest.ExitCode.NO_TESTS_COLLECTED):
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    collector = config.stash.get(COLLECTOR_KEY, None)
    if collector is None or collector.report is None:
        return
    write = terminalreporter.write_line
    terminalreporter.write_sep("=", "ctxgate")
    write(terminal(collector.report))
    for note in collector.notes:
        write(f"note: {note}")
    if collector.write_error:
        write(f"ERROR: {collector.write_error}", red=True)
    elif collector.report_path:
        beside = "".join(f", {b.path.suffix}" for b in collector.besides)
        write(f"report: {collector.report_path} (+ .predictions.jsonl, .md{beside})")
