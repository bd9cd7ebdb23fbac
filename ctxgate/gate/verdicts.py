"""Verdicts from records, as pure functions shared by the pytest plugin (while the suite runs) and
``ctxgate judge`` (when stored outputs are judged later): a case's judge failure gate and score
floor, and the session's gates. They fail closed: a selected case without a score fails the
``cases`` gate and counts against the floors, and a run in which no case ran fails, saying why."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ctxgate.gate.summaries import summary_tasks
from ctxgate.gate.thresholds import Thresholds
from ctxgate.hooks import hook
from ctxgate.lengths import format_length
from ctxgate.records.case import CaseRecord
from ctxgate.records.schema import BaselineRun
from ctxgate.records.summary import EffectiveLength, Gate, RelativeEffectiveLength
from ctxgate.records.vocabulary import BROKEN, BY_DESIGN, NOT_GIVEN

# Why a selected case has no score, and whether that fails the gates: the one rule every gate,
# `diff`, `bisect` and `watch` read through the verdict it yields (docs/gates.md, "Which cases
# count").
#   by design   the task cannot be built at this length: "skip", never a failure
#   not given   an optional input this run was not given (a data file, a judge): "skip", unless the
#               case is gated (a floor above 0, or a baseline score), then "error"
#   broken      the checkpoint or an input given to the run prevents it: always "error"


def score_expected(floor: float, baseline_scored: bool) -> bool:
    """Whether a gate expects the case's score: its floor, or its baseline's score."""
    return floor > 0 or baseline_scored


def unscored_verdict(cause: str, floor: float, baseline_scored: bool) -> str:
    """The verdict, skip or error, of a case that produced no score because of ``cause``."""
    if cause in BY_DESIGN:
        return "skip"
    if cause in NOT_GIVEN:
        return "error" if score_expected(floor, baseline_scored) else "skip"
    if cause in BROKEN:
        return "error"
    raise ValueError(f"unknown cause {cause!r}")


def gated_reason(floor: float, baseline_scored: bool) -> str:
    """Why a case whose input was not given still fails: what expected its score."""
    expected = [f"a floor of {floor:g}"] if floor > 0 else []
    expected += ["a baseline score"] if baseline_scored else []
    return f"it has {' and '.join(expected)}, so a missing score fails the gates"


def judge_failure(record: CaseRecord) -> str | None:
    """Too many failed verdicts fail a judged case: its mean would rest on too few samples."""
    judge = record.judge
    if judge is None or not judge.too_many_failed:
        return None
    first = judge.failed_samples[0] if judge.failed_samples else None
    return (
        f"{judge.failed} of {judge.failed + record.n} verdicts failed (rate "
        f"{judge.failure_rate:.0%} > max {judge.max_failure_rate or 0.0:.0%}); first: sample "
        f"{first and first.index}: {first and first.error}. Check the judge server, or raise "
        "[judge] max_failure_rate in thresholds.toml"
    )


@dataclass(frozen=True)
class Fault:
    """A case failed by an extra's rule (``hookspec.ctxgate_case_fault``): the line that says why,
    and the words the cases and the floors gates count such cases with."""

    message: str
    cases: str
    floors: str


def faults(record: CaseRecord) -> list[Fault]:
    """Every extra's fault with the case, in the extras' order."""
    return [f for f in hook().ctxgate_case_fault(record=record) if f is not None]


def fault(record: CaseRecord) -> Fault | None:
    """The first fault, which the gates count the case by."""
    return next(iter(faults(record)), None)


def fault_message(record: CaseRecord) -> str | None:
    """What each fault says, in one line."""
    return "; ".join(f.message for f in faults(record)) or None


def floor_failure(record: CaseRecord, thresholds: Thresholds) -> str | None:
    """Below the floor (rule "upper": the whole interval below it); under --sequential a
    certain test decides."""
    floor, seq = record.floor or 0.0, record.stop
    test = seq.floor if seq else None
    if test and test.decided == "above":
        return None
    case = f"{record.task} at {record.length} ({format_length(record.length)})"
    if seq and test and test.decided == "below":
        return (
            f"{case}: below the floor {floor:.1f}, certain at error rate {seq.alpha} after "
            f"{seq.used} of {seq.budget} samples (--sequential; interval "
            f"{test.interval[0]:.1f}-{test.interval[1]:.1f}, score {record.score or 0.0:.1f})"
        )
    ci, score = record.ci, record.score
    if ci is None or score is None:
        raise ValueError(f"{record.task} at {record.length} has no score to hold against its floor")
    low, high = ci
    if (high if thresholds.rule == "upper" else score) >= floor:
        return None
    return (
        f"{case}: score {score:.1f} < floor {floor:.1f} (n={record.n}, "
        f"{int(thresholds.confidence * 100)}% CI {low:.1f}-{high:.1f}, rule {thresholds.rule!r}, "
        f"floors from {thresholds.path})"
    )


def passed(record: CaseRecord) -> str:
    seq = record.stop
    score, floor = record.score or 0.0, record.floor or 0.0
    if seq and seq.decided == "pass":
        return (
            f"certain it passes at error rate {seq.alpha} after {seq.used} of {seq.budget} samples "
            f"(--sequential; score {score:.1f}, floor {floor:.1f})"
        )
    return f"score {score:.1f} >= floor {floor:.1f}"


def _pending(case: CaseRecord) -> bool:
    return case.judge_status == "pending"


def _first_five(named: Sequence[str]) -> str:
    """The first five of ``named``, and how many more there are."""
    return ", ".join(named[:5]) + (f" and {len(named) - 5} more" if len(named) > 5 else "")


def cases_gate(cases: Sequence[CaseRecord], complete: bool = True) -> Gate:
    """Every selected case finished (a session interrupted fails), and at least one ran."""
    unscored = [c for c in cases if c.verdict == "error"]
    ran = [c for c in cases if c.verdict in ("pass", "fail") or _pending(c)]
    cut = [(c, f) for c in ran if (f := fault(c))]
    if not cases:
        return Gate("cases", "fail", "no case was selected: -k/-m or --lengths left nothing to run")
    if unscored:
        shown = _first_five([f"{c.name} ({c.error_kind or 'error'})" for c in unscored])
        # the first case that failed for a cause of its own (a crash or an unrun case is said
        # elsewhere, once)
        own = next((c for c in unscored if c.error_kind in (*NOT_GIVEN, *BROKEN)), None)
        first = (own.message if own else "").strip().splitlines()
        said = f"; the first said: {first[0]}" if first else ""
        message = f"{len(unscored)} of {len(cases)} selected cases produced no score: {shown}"
        return Gate("cases", "fail", message + said)
    if not ran:
        message = f"no case ran: all {len(cases)} selected cases were skipped; the first said: "
        return Gate("cases", "fail", message + cases[0].message)
    if not complete:
        return Gate("cases", "fail", "the session did not finish (it was interrupted)")
    if cut:
        case, found = cut[0]
        message = f"{len(cut)} of {len(cases)} selected cases {found.cases}: {case.name}: "
        return Gate("cases", "fail", message + found.message)
    skipped = sum(c.verdict == "skip" and not _pending(c) for c in cases)
    pending = sum(_pending(c) for c in cases)
    scored = len(cases) - skipped - pending
    counts = f"{scored} scored, {skipped} skipped, {pending} waiting for a judge"
    return Gate("cases", "pass", f"all {len(cases)} selected cases finished ({counts})")


def _regressed_only(case: CaseRecord, thresholds: Thresholds) -> bool:
    """Failed only by dropping against the baseline: judge held, at or above its floor."""
    regressed = case.baseline is not None and case.baseline.regressed
    if not regressed or judge_failure(case) or fault(case):
        return False
    if case.score is None or case.ci is None:
        return False
    return floor_failure(case, thresholds) is None


def floors_gate(
    cases: Sequence[CaseRecord], thresholds: Thresholds, baseline_gated: bool = False
) -> Gate:
    """Cases below their floor, or counted as failing it. ``baseline_gated``: a case that failed
    only as a regression is left to the baseline gate, so no gate passes over a failed case."""
    failed = [c for c in cases if c.verdict == "fail"]
    judged = [c for c in failed if judge_failure(c)]
    cut = [f for c in failed if (f := fault(c)) and not judge_failure(c)]
    regressed = [c for c in failed if baseline_gated and _regressed_only(c, thresholds)]
    # a failed case's other cause: its floor
    below = len(failed) - len(judged) - len(cut) - len(regressed)
    unscored = [c for c in cases if c.verdict == "error"]
    ran = [c for c in cases if c.verdict in ("pass", "fail", "error")]
    pending = sum(_pending(c) for c in cases)
    if not ran and not pending:
        return Gate("floors", "fail", "no case was scored, so no floor was checked")
    message = f"{below} of {len(ran)} cases below their floor"
    for count, what in (
        (len(unscored), "without a score (counted as failing)"),
        (len(judged), "with too many failed judge verdicts (counted as failing)"),
        (len(cut), cut[0].floors if cut else ""),
        (len(regressed), "at or above it that regressed (the baseline gate fails them)"),
        (pending, "waiting for a judge"),
    ):
        message += f", {count} {what}" if count else ""
    return Gate("floors", "fail" if below or unscored or judged else "pass", message)


def _counted_as_failing(lengths: Sequence[int], why: str) -> str:
    return f"; {', '.join(map(format_length, lengths))} counted as failing{why}" if lengths else ""


def effective_length_gate(eff: EffectiveLength | None, thresholds: Thresholds) -> Gate | None:
    if not thresholds.min_effective_length:
        return None
    need = format_length(thresholds.min_effective_length)
    if eff is None:
        message = f"no RULER case ran, so the effective length cannot reach {need}"
        return Gate("min_effective_length", "fail", message)
    ok = eff.value >= thresholds.min_effective_length
    got = format_length(eff.value) if eff.value else "0 (the shortest length fails)"
    note = _counted_as_failing(eff.incomplete, ": a RULER task there produced no score")
    note += _counted_as_failing(
        eff.early,
        ": --sequential stopped a RULER task there early, and an average of early-stopped means "
        "has no guarantee",
    )
    return Gate(
        "min_effective_length",
        "pass" if ok else "fail",
        f"effective length {got} {'>=' if ok else '<'} required {need} (threshold "
        f"{eff.threshold}, from {thresholds.path}){note}",
    )


def baseline_gate(cases: Sequence[CaseRecord], baseline: BaselineRun) -> Gate:
    """A case the baseline scored that has no score now is a regression, as is a drop past its
    tolerance."""
    scored = set(baseline.scored)
    lost = [
        c
        for c in cases
        if c.name in scored and (c.score is None or c.verdict not in ("pass", "fail"))
    ]
    regressed = [c for c in cases if c.baseline and c.baseline.regressed]
    parts = []
    if lost:
        why = [f"{c.name} ({c.error_kind or c.skip_kind or c.verdict})" for c in lost]
        parts.append(
            f"{len(lost)} case(s) the baseline scored have no score now: {_first_five(why)}"
        )
    if regressed:
        parts.append(
            f"{len(regressed)} case(s) dropped by more than their tolerance: "
            f"{', '.join(c.name for c in regressed[:5])}"
        )
    compared = sum(1 for c in cases if c.baseline)
    message = (
        "; ".join(parts) or f"{compared} case(s) compared with {baseline.path}, none regressed"
    )
    if thin := [c for c in cases if c.baseline and c.baseline.baseline_stopped_early]:
        message += (
            f"; {len(thin)} case(s) compared on fewer samples because the baseline was a "
            f"--sequential run that stopped them early (e.g. {thin[0].name}): re-run the baseline "
            "without --sequential"
        )
    if unselected := baseline.not_selected:
        message += (
            f" (the baseline also scored {len(unselected)} case(s) this run did not select, e.g. "
            f"{unselected[0]}: not compared)"
        )
    scored_now = [c for c in cases if c.score is not None and not c.baseline]
    if new := [c.name for c in scored_now if c.name not in scored]:
        message += f" ({not_in_baseline(new, 'gated by their floors alone')})"
    return Gate("baseline", "fail" if parts else "pass", message)


def not_in_baseline(names: Sequence[str], instead: str) -> str:
    """Scored cases the baseline has no score for, as the baseline gate and diff say it."""
    return (
        f"{len(names)} scored case(s) have no score in the baseline, e.g. {_first_five(names)}: "
        f"{instead}; run the baseline with them to compare"
    )


def _no_relative_length(
    name: str, need: int, thresholds: Thresholds, cases: Sequence[CaseRecord]
) -> str:
    """Why a summary has no relative effective length, from the cases the run selected."""
    cannot = f"so its relative effective length cannot reach {format_length(need)}"
    up_to = thresholds.relative_base_up_to
    tasks = summary_tasks(name)
    mine = [c for c in cases if c.task in tasks]
    if not mine:
        return (
            f"no {name} case was selected (none of its tasks is among the run's {len(cases)} "
            f"cases), {cannot}: select its tasks (-k or -m), or gate another run on it"
        )
    if not any(c.length <= up_to for c in mine):
        return (
            f"{name} has no case at a length up to {format_length(up_to)}, the base it is "
            f"compared with, {cannot}: add such a length to --lengths, e.g. --lengths 256,512,..."
        )
    return (
        f"{name} has no score at a length up to {format_length(up_to)} (its cases there scored "
        f"0 or did not finish, or none of its tasks ran at every length), {cannot}"
    )


def session_gates(
    cases: Sequence[CaseRecord],
    complete: bool,
    eff: EffectiveLength | None,
    baseline: BaselineRun | None,
    thresholds: Thresholds,
    relative: Mapping[str, RelativeEffectiveLength] | None = None,
) -> tuple[Gate, ...]:
    floors = floors_gate(cases, thresholds, baseline_gated=baseline is not None)
    gates = (cases_gate(cases, complete), floors, effective_length_gate(eff, thresholds))
    return (
        *[g for g in gates if g],
        *[
            relative_length_gate(name, need, (relative or {}).get(name), thresholds, cases)
            for name, need in thresholds.relative_min_length
        ],
        *([baseline_gate(cases, baseline)] if baseline else []),
    )


def relative_length_gate(
    name: str,
    need: int,
    found: RelativeEffectiveLength | None,
    thresholds: Thresholds,
    cases: Sequence[CaseRecord],
) -> Gate:
    """The summary ``name`` keeps ``share`` of its own base up to at least ``need``."""
    gate = f"min_relative_effective_length.{name}"
    if found is None:
        return Gate(gate, "fail", _no_relative_length(name, need, thresholds, cases))
    if found.why:
        return Gate(
            gate,
            "fail",
            f"{name} has no relative effective length, so it cannot reach "
            f"{format_length(need)}: {found.why} (docs/gates.md#above-chance)",
        )
    ok, up_to = found.value >= need, format_length(thresholds.relative_base_up_to)
    got = format_length(found.value) if found.value else "0 (the shortest length falls short)"
    counted = [*found.incomplete, *found.early]
    note = _counted_as_failing(counted, " (no score, or stopped early)")
    return Gate(
        gate,
        "pass" if ok else "fail",
        f"{name}: relative effective length {got} {'>=' if ok else '<'} required "
        f"{format_length(need)} ({found.share:.0%} of its base {found.base:g}, its mean up to "
        f"{up_to}, from {thresholds.path}){note}",
    )
