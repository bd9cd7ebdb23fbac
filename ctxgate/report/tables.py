"""Tasks x lengths tables for the terminal and for Markdown (GitHub step summaries)."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from ctxgate.lengths import format_length
from ctxgate.records.case import CaseRecord
from ctxgate.records.cost import Cost, RunCost
from ctxgate.records.schema import Report
from ctxgate.records.slots import absent
from ctxgate.records.summary import Gate, GroupScore
from ctxgate.tasks.registry import category_label, membership, suite_label, task_names

# a case without a score, by why (records/vocabulary.py): short enough for a table cell
_NO_SCORE = {"error": "error", "crash": "crash", "not_run": "not run", "window": "window"}
_NO_SCORE |= {"too_short": "skip", "data_unreadable": "bad data", "data_not_given": "no data"}
_NO_SCORE |= {"judge_not_given": "no judge", "judge_failed": "judge err"}
_NO_SCORE |= {"search_stopped": "searched"}


def no_score_word(case: CaseRecord) -> str:
    """Why a skipped or errored case has no score, in a table cell's words."""
    if case.verdict == "skip":
        return _NO_SCORE.get(case.skip_kind or "too_short", "skip")
    return _NO_SCORE.get(case.error_kind or "error", "error")


def _cell(case: CaseRecord | None) -> str:
    if case is None:
        return ""
    if case.verdict in ("skip", "error"):
        return no_score_word(case)
    mark = " ✗" if case.verdict == "fail" else ""
    score = "no score" if case.score is None else f"{case.score:.1f}"  # e.g. every verdict failed
    return f"{score}{mark}"


def _group_cell(group: GroupScore | None) -> str:
    if group is None or (group.score is None and not group.incomplete):
        return ""
    score = "n/a" if group.score is None else f"{group.score:.1f}"
    marks = ("*" if group.partial else "") + ("!" if group.incomplete else "")
    return score + marks + ("~" if group.early else "")


def in_registry_order(tasks: Iterable[str]) -> list[str]:
    """Registration order (RULER's, then HELMET's by category), unknown tasks after by name."""
    known = task_names()
    return sorted(set(tasks), key=lambda t: (known.index(t) if t in known else len(known), t))


def summary_labels() -> list[tuple[str, str]]:
    """(label, ``by_length`` key) of each summary per length, in the tables' order."""
    tasks = membership()
    return [
        ("RULER avg", "ruler"),
        *[(f"HELMET {category_label(c)}", f"helmet_{c}") for c in tasks.helmet],
        ("HELMET overall", "helmet_overall"),
        *[(f"{suite_label(f)} avg", f) for f in tasks.families],
    ]


def _above(chance: float) -> str:
    return f" above chance {chance:g}" if chance else ""


PARTIAL = " (partial: a member missing at a length)"


def _partial(partial: bool) -> str:
    return PARTIAL if partial else ""


def effective_lengths(report: Report) -> list[tuple[str, str, str, str]]:
    """Each summary with an effective length or a LongScore: (label, absolute, relative,
    LongScore)."""
    eff, out = report.effective_length, []
    for label, key in summary_labels():
        rel, ls = report.relative_effective_length.get(key), report.long_score.get(key)
        absolute = relative = long_score = "—"
        if key == "ruler" and eff is not None:
            absolute = f"{format_length(eff.value) if eff.value else '0'} (avg > {eff.threshold:g})"
            absolute += _partial(eff.partial)
        if rel is not None:
            value = format_length(rel.value) if rel.value else "0"
            up_to, above = format_length(max(rel.base_lengths)), _above(rel.chance)
            kept = f"{value} (>= {rel.share:.0%} of {rel.base:g}{above}, its mean up to {up_to})"
            relative = f"— ({rel.why})" if rel.why else kept + _partial(rel.partial)
        if ls is not None:
            at = ", ".join(map(format_length, ls.base_lengths))
            base = (
                "" if ls.base is None else f"base {ls.base:g}{_above(ls.chance)}, its mean at {at}"
            )
            long_score = f"{ls.value:+.2f}% ({base})" if ls.value is not None else f"— ({ls.why})"
            long_score += _partial(ls.partial and ls.value is not None)
        if (absolute, relative) != ("—", "—") or ls is not None:  # a value, or why there is none
            out.append((label, absolute, relative, long_score))
    return out


def chances(report: Report) -> dict[str, str]:
    """Each task's chance score as a table cell: "lo-hi" where it moves with the length (each case's
    is ``cases[].chance``); "" where it has none."""
    found: dict[str, set[str]] = {c.task: set() for c in report.cases}
    for c in report.cases:
        found[c.task] |= {f"{c.chance:.1f}"} if c.chance is not None else set()
    cells = {t: sorted(f, key=float) for t, f in found.items()}
    return {t: "-".join(dict.fromkeys([c[0], c[-1]])) if c else "" for t, c in cells.items()}


def _tokens(n: int) -> str:
    return f"{n / 1e6:.2f}M" if n >= 1e6 else f"{n / 1e3:.1f}K" if n >= 1e4 else f"{n:,}"


def cost_line(
    cost: RunCost | Cost, what: str = "Cost", tokens: Callable[[int], str] = _tokens
) -> str:
    """What a run (or a checkpoint, a case) cost, in one line: its plan's generations, run, cached
    or saved, then what those run took. ``tokens``: how a count of tokens is written."""
    run, cost = (cost, cost.total) if isinstance(cost, RunCost) else (None, cost)
    planned = cost.generations + cost.cached_generations + cost.saved_generations
    saved = f" (~{tokens(cost.saved_prompt_tokens)} prompt tokens)" * bool(cost.saved_generations)
    parts = [f"{tokens(cost.thinking_tokens)} of them thought"] if cost.thinking_tokens else []
    if cost.reported_tokens:  # which numbers a server gave, and which were counted here
        parts.append(f"{tokens(cost.reported_tokens)} as the server counted them")
    spent = (
        f"{what}: {planned:,} generations planned: {cost.generations:,} run, "
        f"{cost.cached_generations:,} from the cache, {cost.saved_generations:,} saved{saved}; "
        f"{tokens(cost.prompt_tokens)} prompt tokens prefilled{_split(cost, tokens)}, "
        f"{tokens(cost.generated_tokens)} generated"
        + (f" ({'; '.join(parts)})" if parts else "")
        + f", {cost.engine_seconds:,.1f} engine-s"
    )
    if cost.overruns:  # the server ignored the budget: named, its text cut to it
        spent += f"; {cost.overruns:,} replies ran past their budget and were cut to it"
    if run is not None and run.device:
        gpu = f"{run.gpu_seconds:,.1f} GPU-s " if run.gpu_seconds is not None else ""
        spent += f" ({gpu}on {run.device})"
    return spent


def _split(cost: Cost, tokens: Callable[[int], str]) -> str:
    """The prefill's computed and cached tokens, as far as the engine reported its cache."""
    if not cost.generations:
        return ""
    if not cost.cache_reported:
        return " (the engine reports no cached tokens)"
    cached = cost.cached_prompt_tokens
    if cost.cache_reported == cost.generations:
        return f" ({tokens(cost.prompt_tokens - cached)} computed, {tokens(cached)} cached)"
    return (
        f" ({tokens(cached)} cached in the {cost.cache_reported:,} generations whose engine "
        "reported its cache)"
    )


COST_NOTE = (
    "cost: per case, generations run+from the cache+saved, then prompt tokens prefilled (those "
    "the engine served from its prefix cache)"
)


def cost_rows(report: Report) -> list[tuple[list[str], list[list[str]]]]:
    """Each case's cost (``COST_NOTE``) by task and length, then each length's; none if none ran."""
    costs: dict[tuple[str, int], Cost | None] = {(c.task, c.length): c.cost for c in report.cases}
    if report.cost is None or not any(costs.values()):
        return []
    lengths = sorted({c.length for c in report.cases})
    tasks = [*in_registry_order(t for (t, _), c in costs.items() if c), "all"]
    costs |= {("all", L): report.cost.by_length.get(str(L)) for L in lengths}

    def cell(c: Cost | None) -> str:
        if c is None:
            return ""
        cached = f" ({_tokens(c.cached_prompt_tokens)} cached)" * bool(c.cached_prompt_tokens)
        return f"{c.generations}+{c.cached_generations}+{c.saved_generations} " + (
            f"{_tokens(c.prompt_tokens)}{cached}"
        )

    body = [[t, *(cell(costs.get((t, L))) for L in lengths)] for t in tasks]
    return [(["cost", *map(format_length, lengths)], body)]


def rows(report: Report) -> tuple[list[str], list[list[str]], list[str]]:
    """The tasks x lengths table (a row per task, then a row per summary) and the notes under it."""
    lengths = sorted({c.length for c in report.cases})
    by_key = {(c.task, c.length): c for c in report.cases}
    summaries = report.length_summaries
    chance = chances(report)
    header = ["task"] + [format_length(L) for L in lengths] + ["chance"]
    body = [
        [t] + [_cell(by_key.get((t, L))) for L in lengths] + [chance[t]]
        for t in in_registry_order({c.task for c in report.cases})
    ]
    for label, key in summary_labels():
        cells = [_group_cell(summaries.get(L, {}).get(key)) for L in lengths]
        if any(cells):
            body.append([label] + cells + [""])
    return header, body, _notes(report, lengths, chance)


def _notes(report: Report, lengths: list[int], chance: dict[str, str]) -> list[str]:
    """The run's cost and state, its effective lengths, then what each mark in the table means."""
    notes = [cost_line(report.cost)] if report.cost else []
    notes += [line for section in report.sections for line in section.lines]
    if kept := kept_slots(report):
        notes.append(
            f"Kept as written, from extras not installed here: {kept} (install them to read it)"
        )
    if report.error:
        notes.append(f"Run error: {report.error.message.splitlines()[0]}")
    if not report.complete:
        notes.append("INCOMPLETE: not every selected case finished; this run cannot pass")
    if eff := report.effective_length:
        value = format_length(eff.value) if eff.value else f"< {format_length(lengths[0])}"
        note = f"Effective length (RULER avg > {eff.threshold}, every shorter length too): {value}"
        if eff.partial:
            note += f" (partial: not all {len(membership().ruler)} RULER tasks ran)"
        if eff.incomplete:
            failing = ", ".join(format_length(L) for L in eff.incomplete)
            note += f" (incomplete: {failing} counted as failing, a RULER task there has no score)"
        notes.append(note)
    if any(chance.values()):
        notes.append(
            "chance: a random answer's expected score, lowest-highest over the lengths where it "
            "moves (docs/tasks.md); a floor at or below it gates nothing"
        )
    notes += [COST_NOTE] if cost_rows(report) else []
    notes += [
        f"Effective length, {label}: absolute {absolute}, relative {rel}; LongScore {ls}"
        for label, absolute, rel, ls in effective_lengths(report)
        if (rel, ls) != ("—", "—")
    ]
    notes += _marks(report)
    return notes + [gate_line(gate) for gate in report.gates]


def _marks(report: Report) -> list[str]:
    """What the table's marks stand for: partial and incomplete summaries, Recall's stand-ins,
    cases that ran fewer samples than asked."""
    notes, summaries = [], report.length_summaries
    partial: dict[str, list[str]] = {}
    for label, key in summary_labels():
        for v in summaries.values():
            if (g := v.get(key)) and g.score is not None and g.partial:
                seen = partial.setdefault(label, [])
                seen += [m for m in g.missing if m not in seen]
    if partial:
        what = "; ".join(f"{label} lacks {', '.join(lack)}" for label, lack in partial.items())
        notes.append(
            f"* partial (the mean of the members that ran, not the category score): {what}"
        )
    if unscored := [_at(c, f"({_cell(c)})") for c in report.cases if c.verdict == "error"]:
        shown = ", ".join(unscored[:8])
        shown += f" and {len(unscored) - 8} more" if len(unscored) > 8 else ""
        notes.append(
            f"! incomplete (the mean of the members with a score; the others have none): {shown}"
        )
    # RULER's cases standing in for HELMET's own in Recall
    tasks_now = membership()
    stand_ins = set(tasks_now.stand_ins.values()) & set(tasks_now.helmet.get("recall", ()))
    recall = [(L, v.get("helmet_recall")) for L, v in summaries.items()]
    found = {format_length(L) for L, g in recall if g and stand_ins & set(g.members)}
    if stand_in := sorted(found):
        notes.append(
            f"HELMET Recall at {', '.join(stand_in)} uses the suite's RULER cases "
            f"({', '.join(sorted(stand_ins))}): HELMET's own ruler/ files were not in --data-dir "
            "for those lengths"
        )
    if capped := [
        _at(c, f"ran {c.sample_cap['pool']} of {c.sample_cap['requested']}")
        for c in report.cases
        if c.sample_cap
    ]:
        notes.append(
            "Fewer samples than asked (the data holds no more distinct ones; none is repeated): "
            + "; ".join(capped)
        )
    return notes


def _at(case: CaseRecord, what: str) -> str:
    return f"{case.task} at {format_length(case.length)} {what}"


def gate_line(gate: Gate) -> str:
    """A session gate's verdict line, as the terminal, the Markdown and the junit file say it."""
    return f"Gate {gate.name}: {gate.verdict.upper()} - {gate.message}"


def markdown(report: Report, pointers: Iterable[str] = ()) -> str:
    """``pointers``: a line for each file beside it (``records.io.Beside``)."""
    header, body, notes = rows(report)
    lines = [f"### ctxgate: {report.run.model}", ""]
    for pointer in pointers:
        lines += [pointer, ""]
    lines += [md_row(header), "|" + "---|" * len(header), *map(md_row, body), ""]
    for title, head, table in [("", *t) for t in cost_rows(report)] + section_tables(report):
        lines += [f"#### {title}", ""] if title else []
        lines += [md_row(head), "|" + "---|" * len(head), *map(md_row, table), ""]
    return "\n".join([*lines, *(f"- {n}" for n in notes)]) + "\n"


def md_row(cells: list[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def terminal(report: Report) -> str:
    header, body, notes = rows(report)
    tables = _aligned(header, body)
    for title, head, table in [("", *t) for t in cost_rows(report)] + section_tables(report):
        tables += ["", f"{title}:"] if title else []
        tables += _aligned(head, table)
    return "\n".join([*tables, *notes])


def section_tables(report: Report) -> list[tuple[str, list[str], list[list[str]]]]:
    """The extras' sections' tables (``Report.sections``): a title, a header, then the rows."""
    return [
        (s.title, list(s.table[0]), [list(row) for row in s.table[1:]])
        for s in report.sections
        if s.table
    ]


def kept_slots(report: Report) -> str:
    """The slots of the report's records that no installed extra reads, in words; "": none."""
    found = [f"report's {n}" for n in absent(report.extras, "report")]
    found += [f"run's {n}" for n in absent(report.run.extras, "run")]
    cases = {n for c in report.cases for n in absent(c.extras, "case")}
    return ", ".join(found + [f"cases' {n}" for n in sorted(cases)])


def _aligned(header: list[str], body: list[list[str]]) -> list[str]:
    """A table's lines for the terminal: its first column to the left, the others right."""
    widths = [max(len(r[i]) for r in [header, *body]) for i in range(len(header))]

    def fmt(r: list[str]) -> str:
        cells = (c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths)))
        return "  ".join(cells).rstrip()

    rule = "-" * (sum(widths) + 2 * (len(widths) - 1))
    return [fmt(header), rule, *map(fmt, body)]
