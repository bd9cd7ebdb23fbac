"""Reports under xdist: case records ride on test reports to the controller, which writes JSON, predictions,
Markdown and the terminal table, and applies the session gates (effective length).

Each record is also appended to ``<report>.partial.jsonl`` the moment it arrives, so an interrupted run keeps
every finished case.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from ctxgate.gates import floors_gate
from ctxgate.lengths import format_length
from ctxgate.report.build import build_report, prediction_rows
from ctxgate.report.tables import markdown, terminal

from .cases import CASE_RECORD_KEY
from .options import SETTINGS_KEY, THRESHOLDS_KEY


class Collector:
    def __init__(self, report_path: str | None) -> None:
        self.records: dict[tuple[str, int], dict[str, Any]] = {}
        self.run_meta: dict[str, Any] | None = None
        self.report_path = Path(report_path) if report_path else None
        self.report: dict[str, Any] | None = None
        if self.report_path:
            self.report_path.parent.mkdir(parents=True, exist_ok=True)
            self.partial = self.report_path.with_suffix(".partial.jsonl")
            self.partial.write_text("")

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """On the controller: every case record arrives here, from this process or from an xdist worker."""
        record = getattr(report, "ctxgate_case", None)
        if record is not None:
            self.add(record)

    def add(self, record: dict[str, Any]) -> None:
        record = dict(record)
        meta = record.pop("run_meta", None)
        if meta and self.run_meta is None:
            self.run_meta = meta
        if meta and self.run_meta is not None and "cache" in meta:  # workers may each set a broken file aside
            seen = self.run_meta.setdefault("cache", dict(meta["cache"]))["set_aside"]
            seen.extend(p for p in meta["cache"]["set_aside"] if p not in seen)
        self.records[(record["task"], record["length"])] = record
        if self.report_path:
            with self.partial.open("a", encoding="utf-8") as f:
                f.write(json.dumps(record) + "\n")


COLLECTOR_KEY = pytest.StashKey[Collector]()


def _is_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


def pytest_configure(config: pytest.Config) -> None:
    settings = config.stash[SETTINGS_KEY]
    if settings.model is not None and not _is_worker(config):
        collector = Collector(settings.report)
        config.stash[COLLECTOR_KEY] = collector
        config.pluginmanager.register(collector, "ctxgate-collector")


def pytest_unconfigure(config: pytest.Config) -> None:
    collector = config.stash.get(COLLECTOR_KEY, None)
    if collector is not None:
        config.pluginmanager.unregister(collector)
        del config.stash[COLLECTOR_KEY]


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> pytest.TestReport:
    report: pytest.TestReport = yield
    record = item.stash.get(CASE_RECORD_KEY, None)
    final = report.when == "call" or (report.when == "setup" and not report.passed)
    if record is not None and final:
        if report.failed and record["verdict"] not in ("fail",):
            record["verdict"] = "error"
            record["message"] = str(report.longrepr)[-2000:]
        # A plain attribute travels through xdist's report serialization (and stays out of junit).
        report.ctxgate_case = record  # type: ignore[attr-defined]
    return report


def _gates(config: pytest.Config, report: dict[str, Any]) -> list[dict[str, Any]]:
    thresholds = config.stash[THRESHOLDS_KEY]
    gates: list[dict[str, Any]] = [floors_gate(report["cases"])]
    if thresholds.min_effective_length:
        eff = report["effective_length"]
        need = format_length(thresholds.min_effective_length)
        if eff is None:
            gates.append({"name": "min_effective_length", "verdict": "fail",
                          "message": f"no RULER case ran, so the effective length cannot reach {need}"})
        else:
            ok = eff["value"] >= thresholds.min_effective_length
            got = format_length(eff["value"]) if eff["value"] else "0 (the shortest length fails)"
            gates.append({"name": "min_effective_length", "verdict": "pass" if ok else "fail",
                          "message": f"effective length {got} {'>=' if ok else '<'} required {need} "
                                     f"(threshold {eff['threshold']}, from {thresholds.path})"})
    return gates


def _write(collector: Collector, report: dict[str, Any]) -> None:
    assert collector.report_path is not None
    path = collector.report_path
    predictions = path.with_suffix(".predictions.jsonl")
    with predictions.open("w", encoding="utf-8") as f:
        for case in report["cases"]:
            for row in prediction_rows(case, case.pop("samples", None) or []):
                f.write(json.dumps(row) + "\n")
    report["predictions"] = predictions.name
    path.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    path.with_suffix(".md").write_text(markdown(report), encoding="utf-8")
    collector.partial.unlink(missing_ok=True)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    config = session.config
    collector = config.stash.get(COLLECTOR_KEY, None)
    if collector is None or not collector.records:
        return
    thresholds = config.stash[THRESHOLDS_KEY]
    settings = config.stash[SETTINGS_KEY]
    run = collector.run_meta or {"model": settings.model, "backend": None, "seed": settings.seed,
                                 "samples": settings.samples, "lengths": list(settings.lengths),
                                 "chat_template": "off" if settings.chat_template == "auto" else settings.chat_template}
    run = {**run, "thresholds": thresholds.path,
           "data_sha256": _combined([c.get("data_sha256") for c in collector.records.values()])}
    if "cache" in run:
        run["cache"] = {**run["cache"], "samples_from_cache": sum(
            c.get("samples_from_cache", 0) for c in collector.records.values())}
    complete = exitstatus not in (pytest.ExitCode.INTERRUPTED, pytest.ExitCode.INTERNAL_ERROR)
    report = build_report(list(collector.records.values()), run, thresholds.effective_threshold, [], complete)
    report["gates"] = _gates(config, report)
    collector.report = report
    if collector.report_path:
        _write(collector, json.loads(json.dumps(report)))
    summary = os.environ.get("GITHUB_STEP_SUMMARY")
    if summary:
        with open(summary, "a", encoding="utf-8") as f:
            f.write(markdown(report))
    session_gate_failed = any(g["verdict"] == "fail" and g["name"] != "floors" for g in report["gates"])
    if session_gate_failed and session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def _combined(hashes: list[Any]) -> str | None:
    import hashlib

    present = sorted(h for h in hashes if h)
    return hashlib.sha256("".join(present).encode()).hexdigest() if present else None


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    collector = config.stash.get(COLLECTOR_KEY, None)
    if collector is None or collector.report is None:
        return
    terminalreporter.write_sep("=", "ctxgate")
    terminalreporter.write_line(terminal(collector.report))
    if collector.report_path:
        terminalreporter.write_line(f"report: {collector.report_path} (+ .predictions.jsonl, .md)")
