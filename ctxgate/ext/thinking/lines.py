"""A reasoning model's thought in the report's words: the run's line, each case's table cell and
its junit property, and the line a case fails with when budgets cut too many of its samples."""

from __future__ import annotations

from ctxgate.api import CaseRecord, Report, ThinkingRecord, format_length, in_registry_order


def case_thinking(t: ThinkingRecord) -> str:
    """A case's thought, in a few words."""
    return (
        f"{t.tokens_mean:g} thought tokens per sample (max {t.tokens_max}), cut: "
        f"{t.thought_cut} thoughts, {t.answer_cut} answers; {t.never_ended} never ended "
        f"({t.unclosed} stopped inside the thought), of {t.samples}"
    )


def thinking_line(report: Report) -> str | None:
    """How the run thought (--thinking, --thinking-budget); each case's thought is its table."""
    if not any(c.thinking for c in report.cases):
        return None
    asked = report.run.thinking or {}
    budget = asked.get("budget")
    holder = {"engine": ", held by the engine's own budget", "forcing": ", forced"}
    how = f"--thinking {asked.get('mode', 'default')}, " + (
        f"--thinking-budget {budget} tokens of thought beside each task's answer budget"
        + holder.get(str(asked.get("budget_by")), "")
        if budget
        else "thought and answer sharing each task's budget"
    )
    prefix = {
        "after the thought": "; the answer prefix after the thought",
        "left out": "; the answer prefix left out, as a chat API cannot continue a thought",
    }.get(str(asked.get("answer_prefix")), "")
    return (
        f"Thinking ({how}; removed before scoring{prefix}): per case, thought tokens per sample "
        "(mean/max) and the samples a budget cut (thought, answer) or whose thought never ended"
    )


def off_line(report: Report) -> str | None:
    """Thoughts a model wrote under --thinking off: removed before scoring, and named."""
    thought = [c for c in report.cases if c.thinking]
    if (report.run.thinking or {}).get("mode") != "off" or not thought:
        return None
    had = sum(c.thinking.samples for c in thought if c.thinking)
    every = [c.name for c in thought if c.thinking and c.thinking.samples >= c.n]
    marked = f"; every answer of {len(every)} case(s) came with one: {', '.join(every[:5])}"
    return (
        f"--thinking off: the model thought anyway in {had} of {sum(c.n for c in thought)} "
        f"samples of {len(thought)} case(s), each thought removed before scoring"
        f"{marked if every else ''}"
    )


def thinking_rows(report: Report) -> tuple[list[str], list[list[str]]] | None:
    """Each case's thought, a task per row and a length per column; None where none thought."""
    cases = {(c.task, c.length): c.thinking for c in report.cases if c.thinking}
    if not cases:
        return None
    lengths = sorted({c.length for c in report.cases})

    def cell(t: ThinkingRecord | None) -> str:
        if t is None:
            return ""
        marks = [(t.thought_cut, "thought cut"), (t.answer_cut, "answer cut")]
        marks += [(t.never_ended, "unended"), (t.unclosed, "stopped in thought")]
        return ", ".join(
            [f"{t.tokens_mean:g}/{t.tokens_max}"] + [f"{n} {w}" for n, w in marks if n]
        )

    tasks = in_registry_order(task for task, _ in cases)
    body = [[t] + [cell(cases.get((t, L))) for L in lengths] for t in tasks]
    return ["thinking"] + [format_length(L) for L in lengths], body


def unclosed_failure(record: CaseRecord) -> str | None:
    """Too many outputs the model ended inside a thought fail its case: each answer is empty,
    scored as such (docs/running.md), so its score measures how the thought was read, or a model
    that stops before it answers. The advice fits what the run was given: a marker of its own
    (``--think-end``), or the model's."""
    t = record.thinking
    if t is None or t.unclosed <= (t.max_cut_share or 0.0) * t.samples:
        return None
    marker = repr(t.end) if t.end else "the end marker (run.thinking.end)"
    said = (
        f"{t.unclosed} of {t.samples} outputs ended inside their thought: the model stopped on "
        f"its own before writing {marker}, so each answer is empty and scored 0"
    )
    if t.end_given:
        fix = (
            f"--think-end {t.end!r} is not what this model ends its thoughts with: pass "
            "--think-end with the text its outputs end their thoughts with, or leave --think-end "
            "out to find the model's own marker"
        )
    else:
        fix = (
            "the model stops before it answers: ask it not to think (--thinking off, where its "
            "template has the switch), or raise [thinking] max_cut_share to accept these cases"
        )
    return f"{said}. Fix: {fix}"


def cut_failure(record: CaseRecord) -> str | None:
    """Too many answers a budget cut fail a reasoning model's case: its score measures the budget,
    not the model. The line names the budget to raise."""
    t = record.thinking
    if t is None or not t.too_many_cut:
        return None
    why = []
    if t.thought_cut:
        at = f"--thinking-budget {t.budget}" if t.budget else f"the task's {t.answer_budget} tokens"
        why.append(f"{t.thought_cut} thoughts cut at {at} (the longest took {t.tokens_max})")
    if t.answer_cut:
        why.append(f"{t.answer_cut} answers cut at the task's answer budget of {t.answer_budget}")
    if t.budget is None:
        fix = f"pass --thinking-budget N above {t.tokens_max} (the answer keeps its own budget)"
    elif t.thought_cut:
        fix = f"raise --thinking-budget above {t.budget}"
    else:  # the task's answer budget is the reference's
        fix = "the answer budget is the task's own: raise [thinking] max_cut_share to accept it"
    return (
        f"{t.cut} of {t.samples} samples cut by a budget ({t.cut / t.samples:.0%} > max "
        f"{t.max_cut_share or 0.0:.0%}): {'; '.join(why)}. Fix: {fix}, or raise [thinking] "
        "max_cut_share in thresholds.toml"
    )
