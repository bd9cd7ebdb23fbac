"""A run against a paper's published numbers: per measure and length, the published score, the
measured one with its interval, the difference, and whether the published number lies in the band a
reproduction allows (the measured interval widened by the source's run-to-run allowance). Where the
run's setting is not the paper's it says how, instead of a verdict: a number from another setting
neither confirms nor refutes the paper's. An average's interval is the normal one from its
members' (independent tasks, each standard error its interval's half width over z)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from ctxgate.api import (
    COMPAT_TASKS,
    GroupScore,
    Report,
    all_tasks,
    category_label,
    membership,
    z_value,
)
from ctxgate.ext.published.records import PublishedLength, PublishedRow
from ctxgate.ext.published.scores import Published

Z = z_value(0.95)
Verdict = Literal["within", "outside", "settings differ"]
RULER_PARTS = {
    "niah": "NIAH (8 tasks)",
    "vt": "VT",
    "aggregation": "aggregation (CWE, FWE)",
    "qa": "QA",
}


def measure_label(measure: str) -> str:
    if measure == "ruler":
        return "RULER average"
    if measure.startswith("ruler_"):
        return f"RULER {RULER_PARTS.get(measure[6:], measure[6:])}"
    if measure == "helmet_overall":
        return "HELMET overall"
    return f"HELMET {category_label(measure[7:])}"


@dataclass(frozen=True)
class Measured:
    score: float
    low: float
    high: float
    missing: tuple[str, ...]  # member tasks without a score at this length
    tasks: tuple[str, ...]  # the tasks that counted


def _groups(measure: str, at: Mapping[str, GroupScore]) -> list[tuple[str, ...]]:
    """The tasks an average is over, as groups whose means are averaged."""
    if measure == "helmet_overall":
        return [g for c in membership().helmet for g in _groups(f"helmet_{c}", at)]
    if measure == "ruler":
        return [membership().ruler]
    if measure.startswith("ruler_"):
        category = {t.name: t.category for t in all_tasks()}
        return [tuple(t for t in membership().ruler if category[t] == measure[6:])]
    group = at.get(measure)
    if group and (group.members or group.missing):  # as summarised: HELMET's files or stand-ins
        return [group.members + group.missing]
    return [tuple(membership().helmet.get(measure[7:], ()))]


def measure(report: Report, name: str, length: int) -> Measured | None:
    cases = {(c.task, c.length): c for c in report.cases}
    at = report.length_summaries.get(length, {})
    groups = [g for g in _groups(name, at) if g]
    if not groups:
        return None
    means, variances, missing, counted = [], [], [], []
    for group in groups:
        found = {t: cases.get((t, length)) for t in group}
        present = {
            t: (c.score, c.ci) for t, c in found.items() if c and c.score is not None and c.ci
        }
        missing += [t for t in group if t not in present]
        if not present:
            continue
        counted += list(present)
        means.append(sum(score for score, _ in present.values()) / len(present))
        se = [(ci[1] - ci[0]) / (2 * Z) for _, ci in present.values()]
        variances.append(sum(s * s for s in se) / len(present) ** 2)
    if not means:
        return None
    score = sum(means) / len(means)
    half = Z * math.sqrt(sum(variances)) / len(means)
    low, high = max(0.0, score - half), min(100.0, score + half)
    return Measured(round(score, 2), round(low, 2), round(high, 2), tuple(missing), tuple(counted))


def _differs(report: Report, row: Published, got: Measured, length: int) -> list[str]:
    """How this run's setting differs from the one behind ``row`` at ``length``."""
    cases = [c for c in report.cases if c.task in got.tasks and c.length == length]
    why = []
    if got.missing:
        missing = ", ".join(got.missing)
        why.append(f"not every task of the paper's average has a score (missing: {missing})")
    fewest = min((c.n for c in cases), default=0)
    if row.source.samples and fewest < row.source.samples:
        why.append(f"{fewest} samples per task, the paper {row.source.samples}")
    if not row.source.samples and (asked := report.run.samples) is not None:
        why.append(f"--samples {asked}, the paper HELMET's per-dataset counts")
    if row.chat_template == "task":  # HELMET: each task its own policy (TaskSpec.chat_template)
        # a stored report's unknown task: no policy to hold
        policy = {t.name: t.chat_template for t in all_tasks()}
        other = {c.task for c in cases if (ran := bool(c.chat_template)) != policy.get(c.task, ran)}
        if other:
            named = ", ".join(sorted(other))
            why.append(f"{named} ran under another chat policy than the paper's per-task one")
    else:
        chat = {bool(c.chat_template) for c in cases}
        wanted = row.chat_template == "on"
        if chat and chat != {wanted}:
            said = "with" if wanted else "without"
            why.append(
                f"the paper ran this model {said} its chat template; this run "
                f"{'did not' if wanted else 'did'}"
            )
    haystack = report.run.haystack or ""
    if (
        row.measure in ("ruler", "ruler_niah")
        and haystack
        and "paul_graham" not in haystack.lower()
    ):
        why.append(
            f"the essay haystack is {haystack}, the paper's Paul Graham's essays (5 of the NIAH "
            "tasks read it; `ctxgate data fetch --ruler-essays` writes them)"
        )
    compat = sorted(COMPAT_TASKS & set(got.tasks))
    if row.source.key.startswith("helmet") and compat and not report.run.helmet_compat:
        named = ", ".join(compat)
        why.append(f"{named} ran on ctxgate's prompts, not HELMET's (--helmet-compat builds those)")
    if row.source.length_unit == "Llama-2 tokens":
        why.append(
            "lengths here are counted in this model's tokenizer, the paper's in Llama-2 tokens"
        )
    if not report.complete:
        why.append("the run is incomplete")
    return why


def compare(report: Report, rows: Sequence[Published]) -> list[PublishedRow]:
    """One entry per published row with a length this run has: its lengths' comparisons."""
    out = []
    for row in rows:
        shared = [L for L in report.length_summaries if L in row.scores]
        if not shared:
            continue
        entries = []
        for L in shared:
            published = row.scores[L]
            got = measure(report, row.measure, L)
            if got is None:
                entries.append(PublishedLength(L, published, "not measured"))
                continue
            allowance = row.source.allowance
            band = (round(got.low - allowance, 2), round(got.high + allowance, 2))
            differs = tuple(_differs(report, row, got, L))
            inside = band[0] <= published <= band[1]
            verdict: Verdict = "settings differ" if differs else ("within" if inside else "outside")
            measured = (got.score, (got.low, got.high), round(got.score - published, 2), band)
            entries.append(PublishedLength(L, published, verdict, differs, *measured))
        src = row.source
        source = (src.key, src.paper, src.table, row.label, src.allowance, src.allowance_source)
        paper = (row.chat_template, tuple(entries), row.claimed, row.effective, row.effective_bar)
        out.append(PublishedRow(row.measure, measure_label(row.measure), *source, *paper))
    return out
