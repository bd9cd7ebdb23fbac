"""``ctxgate judge REPORT.json``: judge a finished run's judged cases from its stored outputs,
without the model, then gate them and rewrite the report, its predictions and its Markdown."""

from __future__ import annotations

import argparse
import json
from dataclasses import fields, replace
from pathlib import Path

from ctxgate.gate.session import judge_session
from ctxgate.gate.thresholds import (
    NO_THRESHOLDS,
    Thresholds,
    checked_file,
    load_thresholds,
    thresholds_here,
)
from ctxgate.gate.verdicts import fault_message, floor_failure, judge_failure, passed
from ctxgate.judge.score import Judges, build_judges, is_judged
from ctxgate.records.case import CaseRecord, Prediction
from ctxgate.records.io import (
    atomic_write_all,
    predictions_path,
    read_predictions,
    read_report,
    report_text,
)
from ctxgate.records.schema import Report, to_json
from ctxgate.refusal import CtxgateError
from ctxgate.report.build import build_report, prediction_rows, with_sections
from ctxgate.report.tables import markdown, terminal
from ctxgate.run.case import CaseResult, judge_case
from ctxgate.run.flags import read
from ctxgate.run.options import ALLOW_PICKLE, CACHE_FOLDER, JUDGE, THRESHOLDS
from ctxgate.tasks.registry import task_names


class RejudgeError(CtxgateError, ValueError):
    """A report or its predictions cannot be judged; the message names the file and the fix."""


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "judge", help="score a run's judged cases (Cite, NarrativeQA, Summ) from its stored outputs"
    )
    p.set_defaults(fn=main)
    p.add_argument("report", help="a --report JSON whose .predictions.jsonl sits beside it")
    for option in (*JUDGE, ALLOW_PICKLE):
        option.add_to(p)
    judged_with = (
        "floors and [judge] max_failure_rate (default: the file the run was gated with, as its "
        "report records it; for a run gated without one, the file the other verbs find: the ini "
        "option ctxgate_thresholds, else the nearest thresholds.toml from here up)"
    )
    replace(THRESHOLDS, help=judged_with).add_to(p)
    p.add_argument(
        "--all", action="store_true", help="judge every judged case again, not only pending ones"
    )
    p.add_argument("--out", help="write the judged report here instead of over REPORT")


def _runs_thresholds(report: Report, report_path: Path) -> Thresholds:
    """The run's own thresholds file, which must still be there, else the shared lookup."""
    recorded = report.run.thresholds
    if not recorded or recorded == NO_THRESHOLDS:
        return thresholds_here(None, task_names())
    return load_thresholds(checked_file(recorded, f"{report_path}: run.thresholds"), task_names())


def _judges(args: argparse.Namespace, thresholds: Thresholds, report: Report) -> Judges:
    """The judges the options name; their cache by default in the run's generation cache folder."""
    from ctxgate.gate.plan import judge_settings  # the plan's one reading of the judge options

    values = read((*JUDGE, ALLOW_PICKLE), lambda dest: getattr(args, dest, None))
    cache_dir = str((report.run.cache or {}).get("dir") or CACHE_FOLDER)
    try:
        judges = build_judges(
            judge_settings(values, cache_dir),
            values["nli_model"],
            thresholds.judge_max_failure_rate,
            report.run.helmet_compat,
            values["allow_pickle"],
        )
    except (ValueError, OSError) as exc:  # what transformers raises loading the NLI checkpoint
        raise RejudgeError(str(exc)) from None
    if judges is None:
        raise RejudgeError(
            "pass --judge-model (and --judge-base-url for a local server) and/or --nli-model PATH"
        )
    return judges


def _case_result(case: CaseRecord, rows: list[Prediction]) -> CaseResult:
    measured = {
        f.name: getattr(case, f.name)
        for f in fields(CaseResult)
        if f.name not in ("samples", "ci", "extras")
    }
    samples = tuple(sorted(rows, key=lambda r: r.index))
    return CaseResult(**measured, ci=case.ci or (0.0, 0.0), samples=samples)


def _verdict(case: CaseRecord, thresholds: Thresholds) -> CaseRecord:
    """The plugin's gates, minus the baseline (a later judging has no paired baseline run)."""
    # why it had no score (no judge in its run) is gone: it has one now
    case = replace(
        case, floor=thresholds.floor_for(case.task, case.length), error_kind=None, skip_kind=None
    )
    for message in (judge_failure(case), fault_message(case)):
        if message:
            return replace(case, verdict="fail", message=f"{case.task} at {case.length}: {message}")
    if message := floor_failure(case, thresholds):
        return replace(case, verdict="fail", message=message)
    return replace(case, verdict="pass", message=passed(case))


class NothingToJudge(Exception):
    """Every judged case is already judged: the report is left as it is."""


def _to_judge(report: Report, report_path: Path, everything: bool) -> list[CaseRecord]:
    judged = [c for c in report.cases if is_judged(c.metric)]
    if not judged:
        raise RejudgeError(
            f"{report_path} has no judged case (Cite, NarrativeQA, Summ): nothing to judge, and "
            "the report is left as it is. Run the suite with those tasks (-m judge) first"
        )
    chosen = [c for c in judged if everything or c.judge_status == "pending"]
    if not chosen:
        raise NothingToJudge(
            f"{report_path}: all {len(judged)} judged case(s) are judged already; the report is "
            "left as it is. Pass --all to judge them again"
        )
    return chosen


def judge_report(args: argparse.Namespace) -> tuple[Report, int, int]:
    """The rewritten report, how many cases were judged, how many cases fail."""
    report_path = Path(args.report)
    report = read_report(report_path)
    predictions = predictions_path(report_path, report)
    rows = read_predictions(predictions)
    # a --thresholds given is checked even when nothing turns out to need judging
    given = thresholds_here(args.thresholds, task_names()) if args.thresholds else None
    chosen = _to_judge(report, report_path, args.all)
    thresholds = given or _runs_thresholds(report, report_path)
    judges = _judges(args, thresholds, report)
    by_case: dict[tuple[str, int], list[Prediction]] = {}
    for r in rows:
        by_case.setdefault((r.task, r.length), []).append(r)
    judged: dict[tuple[str, int], CaseRecord] = {}
    for case in chosen:
        case_rows = by_case.get((case.task, case.length))
        if not case_rows:
            raise RejudgeError(f"{predictions} has no samples for {case.task} at {case.length}")
        result = judge_case(_case_result(case, case_rows), judges, thresholds.confidence)
        by_case[(case.task, case.length)] = prediction_rows(case, result.samples)
        judged[(case.task, case.length)] = _verdict(result.onto(case), thresholds)
    cases = [judged.get((c.task, c.length), c) for c in report.cases]
    run = replace(report.run, judge=judges.describe())
    eff = report.effective_length
    threshold, decided = (eff.threshold, eff.decided) if eff else (None, None)
    verdict = judge_session(
        cases, thresholds, report.session_complete, threshold, report.baseline, decided
    )
    new = with_sections(
        replace(build_report(cases, run, verdict, report.error), extras=report.extras), report
    )
    out = Path(args.out) if args.out else report_path
    out_predictions = out.with_suffix(".predictions.jsonl")
    new = replace(new, predictions=out_predictions.name)
    lines = "".join(json.dumps(to_json(r)) + "\n" for rs in by_case.values() for r in rs)
    atomic_write_all(
        {out_predictions: lines, out.with_suffix(".md"): markdown(new), out: report_text(new)}
    )
    return new, len(chosen), sum(c.verdict == "fail" for c in new.cases)


def main(args: argparse.Namespace) -> int:
    try:
        report, judged, failed = judge_report(args)
    except NothingToJudge as exc:
        print(f"ctxgate judge: {exc}")
        return 0
    print(terminal(report))
    if usage := [c.judge.usage for c in report.cases if c.judge and c.judge.usage]:
        kinds = "requests cache_hits prompt_tokens completion_tokens failed_verdicts".split()
        total = {k: sum(getattr(u, k) for u in usage) for k in kinds}
        cost = [u.cost_usd for u in usage]
        said = "unknown (pass --judge-price IN,OUT)"
        if None not in cost:
            said = f"${sum(c or 0.0 for c in cost):.4f}"
        print(
            f"judged {judged} case(s): {total['requests']} requests, {total['cache_hits']} cache "
            f"hits, {total['prompt_tokens']} prompt + {total['completion_tokens']} completion "
            f"tokens, {total['failed_verdicts']} failed verdicts, cost {said}"
        )
    print(f"report: {args.out or args.report}")
    return 1 if failed else 0
