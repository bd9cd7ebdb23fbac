"""``ctxgate watch RUN_DIR [options] -- [pytest arguments]``: evaluate each new checkpoint (once no
file changed for ``--settle`` seconds) in a pytest subprocess until a complete report, up to
``--attempts`` times for the same files, and keep a trend; the state file survives a restart. A
checkpoint its report says could not be opened is skipped until its files change."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ctxgate.api import (
    Cost,
    CtxgateError,
    Report,
    ReportFileError,
    atomic_write,
    cost_line,
    read_options,
    read_report,
)
from ctxgate.ext.training.options import ATTEMPTS, INTERVAL, SETTLE, WATCH
from ctxgate.ext.training.run_folder import SKIPPED, left_out, step_of, why_left_out

USAGE_ERROR = 4  # pytest's exit code for arguments it refused


class WatchError(CtxgateError, RuntimeError):
    """The watcher cannot go on (its pytest arguments are refused); nothing was marked done."""


def ready(path: Path, settle: float) -> bool:
    """A checkpoint of the run's sequence, with its weights, unchanged for ``settle`` seconds."""
    if why_left_out(path) is not None:
        return False
    try:
        newest = max(f.stat().st_mtime for f in path.rglob("*") if f.is_file())
    except (FileNotFoundError, ValueError):  # rotated away (save_total_limit) while it was read
        return False
    return time.time() - newest >= settle


def signature(path: Path) -> str:
    """Names, sizes and times of a checkpoint's files: a rewritten one is a new one to try."""
    files = (f for f in path.rglob("*") if f.is_file())
    return json.dumps(
        sorted((str(f.relative_to(path)), f.stat().st_size, int(f.stat().st_mtime)) for f in files)
    )


@dataclass
class WatchState:
    done: set[str] = field(default_factory=set)
    failed: dict[str, dict[str, Any]] = field(default_factory=dict)  # name -> its failure
    last: str | None = None
    # name -> why it cannot be opened and the signature of the files that could not
    skipped: dict[str, dict[str, str]] = field(default_factory=dict)

    @classmethod
    def load(cls, path: Path) -> WatchState:
        if not path.exists():
            return cls()
        try:
            data = json.loads(path.read_text("utf-8"))
            return cls(
                set(data.get("done", [])),
                dict(data.get("failed", {})),
                data.get("last"),
                dict(data.get("skipped", {})),
            )
        except (OSError, ValueError, TypeError, AttributeError) as exc:
            raise WatchError(
                f"{path} is not a readable watch state ({exc}): delete it to evaluate every "
                "checkpoint again, or restore it"
            ) from None

    def save(self, path: Path) -> None:
        try:
            state = {
                "done": sorted(self.done),
                "failed": self.failed,
                "last": self.last,
                "skipped": self.skipped,
            }
            atomic_write(path, json.dumps(state, indent=1))
        except OSError as exc:
            raise WatchError(
                f"cannot write {path} ({exc.strerror or exc}): free space or give a writable "
                "--reports folder"
            ) from None

    def should_try(self, ckpt: Path, attempts: int) -> bool:
        if ckpt.name in self.done:
            return False
        if (skip := self.skipped.get(ckpt.name)) and skip["signature"] == signature(ckpt):
            return False
        tried = self.failed.get(ckpt.name)
        return (
            tried is None or tried["signature"] != signature(ckpt) or tried["attempts"] < attempts
        )


def evaluate(checkpoint: Path, reports: Path, pytest_args: Sequence[str]) -> int:
    report = reports / f"{checkpoint.name}.json"
    # --model=PATH, one word: pytest reads a separate absolute path as a test path (and rootdir)
    cmd = [sys.executable, "-m", "pytest", f"--model={checkpoint}", f"--report={report}"]
    cmd += pytest_args
    print("ctxgate watch:", " ".join(cmd), flush=True)
    return subprocess.call(cmd)


def readable(report: Path) -> Report | None:
    """The report, where one of this schema is there."""
    try:
        return read_report(report)
    except ReportFileError:
        return None


def unopened(report: Report | None) -> str | None:
    """Why the checkpoint could not be opened or loaded, as the report's ``error`` says; None when
    it says nothing stopped the run, or something other than the checkpoint did."""
    error = report.error if report is not None else None
    if error is None or not error.checkpoint:
        return None
    return error.message.removeprefix("ctxgate: ").splitlines()[0]


@dataclass(frozen=True)
class Watching:
    """What ``ctxgate watch`` was asked: the run's folder, where the reports go, the pytest
    arguments, when to stop (``once``, or the scan after ``until`` appears), how often to scan and
    how long a checkpoint must be unchanged, and how many evaluations of one may fail."""

    run_dir: Path
    reports: Path
    pytest_args: Sequence[str] = ()
    once: bool = False
    trend_dir: Path | None = None
    until: Path | None = None
    interval: float = INTERVAL.default
    settle: float = SETTLE.default
    attempts: int = ATTEMPTS.default


def watch(asked: Watching) -> tuple[list[str], dict[str, str]]:
    """Once ``until`` appears (or ``once``): the checkpoints not evaluated completely, and those
    skipped, with why they cannot be opened."""
    from .trend import trend

    run, out = asked.run_dir, asked.reports
    if not run.is_dir():
        raise WatchError(
            f"{run} is not a folder: give the training run's output folder, where checkpoint-N/ "
            "folders appear"
        )
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise WatchError(
            f"--reports {out} cannot be created ({exc.strerror or exc}): give a writable folder"
        ) from None
    state_path = out / "watch-state.json"
    state = WatchState.load(state_path)
    spent = Cost()  # by the checkpoints this watch evaluated
    while True:
        # seen before the scan: nothing written is missed; after it nothing is being written
        last_scan = asked.until is not None and asked.until.exists()
        settle = 0.0 if last_scan else asked.settle
        found = (p for p in run.iterdir() if p.is_dir() and ready(p, settle))
        for ckpt in sorted((p for p in found if state.should_try(p, asked.attempts)), key=step_of):
            spent += _evaluated(ckpt, asked, state)
            state.save(state_path)
            done = [p for p in sorted(out.glob("*.json")) if p != state_path]
            if done := [p for p in done if (r := readable(p)) is not None and r.complete]:
                trend(done, asked.trend_dir or out / "trend")
        if asked.once or last_scan:  # one rotated away since (save_total_limit): nothing to do
            print(f"ctxgate watch: {cost_line(spent, 'cost in all')}", flush=True)
            for folder, why in left_out(run).items():
                print(f"ctxgate watch: {folder} is not in the sequence: {why}", file=sys.stderr)
            skipped = {k: v["why"] for k, v in sorted(state.skipped.items()) if (run / k).is_dir()}
            return sorted(name for name in state.failed if (run / name).is_dir()), skipped
        time.sleep(asked.interval)


def _evaluated(ckpt: Path, asked: Watching, state: WatchState) -> Cost:
    """One checkpoint evaluated, and what ``state`` keeps of it: done, skipped (it cannot be
    opened) or failed (an attempt counted); what it cost."""
    before = signature(ckpt)
    code = evaluate(ckpt, asked.reports, asked.pytest_args)
    if code == USAGE_ERROR:
        raise WatchError(
            f"pytest refused the arguments for {ckpt.name} (exit {code}, its message is "
            "above); fix the arguments after --. Nothing was marked done"
        )
    state.last = ckpt.name
    state.skipped.pop(ckpt.name, None)
    made = readable(asked.reports / f"{ckpt.name}.json")
    cost = made.cost.total if made is not None and made.cost is not None else Cost()
    if made is not None and made.cost is not None:
        print(f"ctxgate watch: {ckpt.name}: {cost_line(made.cost, 'cost')}", flush=True)
    if made is not None and made.complete:
        state.done.add(ckpt.name)
        state.failed.pop(ckpt.name, None)
    elif why := unopened(made):  # no verdict, and no retry
        state.skipped[ckpt.name] = {"why": why, "signature": before}
        state.failed.pop(ckpt.name, None)
        said = f"{ckpt.name} cannot be opened ({why}): skipped until its files change"
        print(f"ctxgate watch: {said}", flush=True)
    else:
        prior = state.failed.get(ckpt.name, {})
        tries = prior.get("attempts", 0) + 1 if prior.get("signature") == before else 1
        state.failed[ckpt.name] = {"attempts": tries, "exit_code": code, "signature": before}
        then = "no attempts left until its files change"
        if (left := asked.attempts - tries) > 0:
            then = f"trying again at the next scan ({left} attempt(s) left)"
        said = f"{ckpt.name} was not evaluated completely (exit {code}); {then}"
        print(f"ctxgate watch: {said}", flush=True)
    return cost


def add_parser(sub: argparse._SubParsersAction) -> None:
    w = sub.add_parser(
        "watch", help="evaluate each new checkpoint of a training run and update the trend"
    )
    w.add_argument("run_dir", help="the training output folder that checkpoints appear in")
    w.add_argument("--reports", default="reports", help="folder for one report per checkpoint")
    w.add_argument("--trend", help="trend output folder (default REPORTS/trend)")
    for option in WATCH:
        option.add_to(w)
    w.add_argument("--once", action="store_true", help="scan once and exit")
    w.add_argument("--until", help="exit after the scan that follows this file's appearance")
    w.set_defaults(fn=main, pytest_args=[])
    w.epilog = (
        "pytest arguments go after --, e.g. ctxgate watch RUN_DIR --once -- --lengths 8k,32k -n "
        "auto. Exit status of --once and --until: 0, every checkpoint evaluated (a failed gate is "
        "a result, in its report); 1, one not evaluated completely; "
        f"{SKIPPED}, one that cannot be opened was skipped (named; tried again once its files "
        "change); 2, a refusal."
    )


def main(args: argparse.Namespace) -> int:
    given = read_options(WATCH, lambda dest: getattr(args, dest))
    trend_dir, until = (Path(p) if p else None for p in (args.trend, args.until))
    asked = Watching(Path(args.run_dir), Path(args.reports), args.pytest_args, args.once)
    incomplete, skipped = watch(replace(asked, trend_dir=trend_dir, until=until, **given))
    for name, why in skipped.items():
        print(
            f"ctxgate watch: {name} skipped: it cannot be opened ({why}); it is evaluated once "
            "its files change",
            file=sys.stderr,
        )
    if incomplete:  # a run that could not be evaluated must not pass a CI step as if it had been
        print(
            f"ctxgate watch: {len(incomplete)} checkpoint(s) not evaluated completely: "
            f"{', '.join(incomplete)} (their reports say why); the next scan tries them again, or "
            "once their files change",
            file=sys.stderr,
        )
        return 1
    return SKIPPED if skipped else 0
