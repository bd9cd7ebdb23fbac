"""The search line says per task what ran and what the search left out: a case a floor or baseline
expects runs past the decision for its task alone, so lengths joined over every task would say a
length both ran and was skipped. Tasks treated alike share one entry."""

from __future__ import annotations

from dataclasses import replace

from ctxgate.ext.search import plugin
from ctxgate.ext.search.lines import search_line
from ctxgate.ext.search.records import SEARCH_SLOT, SearchRecord
from ctxgate.gate.session import judge_session
from ctxgate.gate.thresholds import Thresholds
from ctxgate.records.case import CaseRecord
from ctxgate.records.schema import RunInfo
from ctxgate.report.build import build_report, with_sections
from ctxgate.report.tables import rows

WHY = (
    "RULER's average 40 is not above 85.6 at 256: longer lengths cannot change its effective length"
)


def case(task: str, length: int, left_out: bool = False) -> CaseRecord:
    if left_out:
        return CaseRecord(task, "ruler", length, verdict="skip", skip_kind="search_stopped")
    return CaseRecord(task, "ruler", length, verdict="pass", score=90.0, n=4)


def test_tasks_the_search_treated_differently_are_listed_each_with_its_lengths():
    """niah_single_1 and vt: 512 left out, 1K run past the decision for a floor; cwe: 512 run, 1K
    left out. Their lengths joined would say 512 and 1K both ran and were skipped."""
    cases = [
        *(case(t, L, left_out=L == 512) for t in ("vt", "niah_single_1") for L in (256, 512, 1024)),
        case("cwe", 256),
        case("cwe", 512),
        case("cwe", 1024, left_out=True),
    ]
    search = SearchRecord((256, 512, 1024), (512, 1024), WHY)
    assert search_line(search, cases) == (
        "Search: niah_single_1, vt ran 256, 1K, skipped 512; cwe ran 256, 512, skipped 1K: " + WHY
    )


def test_tasks_the_search_treated_alike_share_one_entry():
    cases = [
        case(t, L, left_out=L > 256) for t in ("niah_single_1", "vt") for L in (256, 512, 1024)
    ]
    search = SearchRecord((256,), (512, 1024), WHY)
    assert search_line(search, cases) == f"Search: every task ran 256, skipped 512, 1K: {WHY}"
    alone = [c for c in cases if c.task == "vt"]
    assert search_line(search, alone) == f"Search: vt ran 256, skipped 512, 1K: {WHY}"


def test_a_task_left_out_everywhere_and_a_case_never_reached():
    """A task selected only past the decision ran nothing; a case an interrupted session never
    reached neither ran nor was left out by the search."""
    never = CaseRecord("vt", "ruler", 256, verdict="error", error_kind="not_run")
    cases = [case("niah_single_1", 256), case("vt", 512, left_out=True), never]
    line = search_line(SearchRecord((256,), (512,), WHY), cases)
    assert line == f"Search: niah_single_1 ran 256; vt skipped 512: {WHY}"


def test_the_terminal_markdown_and_html_say_the_same_per_task_line():
    cases = [case("niah_single_1", 256), case("niah_single_1", 512), case("vt", 256)]
    cases.append(case("vt", 512, left_out=True))
    search = SearchRecord((256, 512), (512,), WHY)
    verdict = judge_session(cases, Thresholds("t"), True, decided=search.decided)
    report = build_report(cases, RunInfo("m", None, 42, 4, (256, 512), "task"), verdict)
    report = with_sections(replace(report, extras={SEARCH_SLOT: search}))
    line = f"Search: niah_single_1 ran 256, 512; vt ran 256, skipped 512: {WHY}"
    assert line in rows(report)[2]  # the terminal's and the Markdown's notes
    [section] = plugin.ctxgate_report_sections(report)
    assert section.title == "Search" and section.lines == (line,)  # the HTML page's fact
