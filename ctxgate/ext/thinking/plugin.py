"""Reasoning models' techniques: how each output is read (the thought split off at its format's
markers, ``--think-end``), how a thinking budget is held (the engine's own, or budget forcing,
``--budget-forcing``), the ``[thinking]`` table of thresholds.toml and the gate on cut samples,
and the thought in every report form. What the model is asked to think (``--thinking``,
``--thinking-budget``) is the spine's (``ModelSpec.thinking``, ``thinking_budget``)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from ctxgate.api import (
    ExtraTable,
    Get,
    Option,
    OptionError,
    OptionGroup,
    ReportSection,
    hookimpl,
)

if TYPE_CHECKING:
    from ctxgate.api import Backend, CaseRecord, Fault, ModelSpec, Plan, Report

    from .formats import ThoughtFormat
    from .reading import ThoughtReading

NAME = "thinking"
BUDGET_FORCING = Option(
    "--budget-forcing",
    "force --thinking-budget by the suite's two requests per sample on every engine, a server "
    "with its own thinking budget included, so that every engine thinks alike",
    action="store_true",
)


def _marker(text: str) -> str:
    if not text.strip():  # found at the end of every text: every answer would be empty
        raise ValueError("is blank: give the text that ends the thought")
    return text


THINK_END = Option(
    "--think-end",
    "the text that ends the model's thought (default: found in its tokenizer and chat template: "
    "</think>, [/THINK], gpt-oss's final channel)",
    parse=_marker,
    example="'</think>'",
)

CUT_SHARE = "thinking.max_cut_share"  # thresholds.toml's [thinking] max_cut_share
CUT_SHARE_DEFAULT = 0.1


@dataclass(frozen=True)
class ThinkingSettings:
    """The extra's options as read, and the share of cut samples past which a case fails."""

    end: str | None = None
    forcing: bool = False
    max_cut_share: float = CUT_SHARE_DEFAULT


def settings(spec: ModelSpec) -> ThinkingSettings:
    found = spec.extras.get(NAME)
    return found if isinstance(found, ThinkingSettings) else ThinkingSettings()


@hookimpl
def ctxgate_option_groups() -> list[OptionGroup]:
    options = (BUDGET_FORCING, THINK_END)
    return [OptionGroup("ctxgate-thinking", "ctxgate reasoning models", options, evaluates=True)]


@hookimpl
def ctxgate_plan_section(get: Get, plan: Plan) -> tuple[str, ThinkingSettings]:
    budget, end = plan.model.thinking_budget, THINK_END.read(get(THINK_END.dest))
    forcing = bool(BUDGET_FORCING.read(get(BUDGET_FORCING.dest)))
    if plan.engine.endpoint_api == "chat" and forcing:
        raise OptionError(
            "--budget-forcing with --endpoint-api chat: budget forcing continues the prompt's ids "
            "after the thought, which a chat API cannot take; use --endpoint-api completions"
        )
    if forcing and budget is None:
        raise OptionError(
            "--budget-forcing without --thinking-budget: forcing holds each thought to a budget, "
            "and none is given: pass --thinking-budget N, or drop --budget-forcing"
        )
    share = plan.thresholds.extras.get(CUT_SHARE, CUT_SHARE_DEFAULT)
    return NAME, ThinkingSettings(end, forcing, share)


CUT_SHARE_TABLE = f"""
# Reasoning models: a case fails when more than this share of its samples had their thought or
# answer cut by a budget (--thinking-budget, or the task's own answer budget); the line names the
# budget to raise.
[thinking]
max_cut_share = {CUT_SHARE_DEFAULT}
"""


@hookimpl
def ctxgate_threshold_tables() -> list[ExtraTable]:
    from ctxgate.api import threshold_number

    keys = {"max_cut_share": (CUT_SHARE, threshold_number(0, 1, CUT_SHARE_DEFAULT))}
    return [ExtraTable(NAME, keys, CUT_SHARE_TABLE)]


@hookimpl
def ctxgate_reading(spec: ModelSpec, backend: Backend) -> ThoughtReading:
    """The model's thought format with who holds its budget. Raises ModelError naming the stage."""
    from ctxgate.api import BackendDown, CtxgateError, ModelError

    from .formats import Thinking, ThinkingError, prepare
    from .reading import ThoughtReading, budget_holder

    given = settings(spec)
    asked = Thinking(spec.thinking, spec.thinking_budget, given.end)
    try:
        fmt = prepare(asked, backend.tokenizer, spec.model)
    except ThinkingError as exc:
        raise ModelError("the thinking options", exc) from exc
    try:
        fmt = budget_holder(given.forcing, backend, fmt)
    except (CtxgateError, BackendDown) as exc:  # the server's, not the checkpoint's
        raise ModelError("the thinking budget", exc, checkpoint=False) from exc
    fmt = replace(fmt, answer_prefix=answer_prefix(spec, backend, fmt))
    return ThoughtReading(fmt, backend.tokenizer, given.max_cut_share)


def answer_prefix(spec: ModelSpec, backend: Backend, fmt: ThoughtFormat) -> str | None:
    """Where a chat prompt's answer prefix goes for a model that thinks: after its thought, which
    the suite continues with it, or left out over a chat API; a prompt without a chat template
    keeps it (the model writes on from the prefix, as in the references)."""
    from ctxgate.api import ChatTemplateError, resolve_chat, takes_messages

    if not fmt.thinks or fmt.mode == "off" or fmt.closed:  # closed: the prompt ends the thought
        return None
    if takes_messages(backend):
        return "left out"
    try:
        has_template = backend.tokenizer.chat_parts() is not None
    except ChatTemplateError:  # refused in one line where the prompts are built
        return None
    # "task": RULER's own policy, which uses the template
    chat = resolve_chat(spec.chat_template, has_template) != "off"
    return "after the thought" if chat else None


@hookimpl
def ctxgate_case_fault(record: CaseRecord) -> Fault | None:
    from ctxgate.api import Fault

    from .lines import cut_failure, unclosed_failure

    unclosed = unclosed_failure(record)
    if unclosed is not None:
        counted = "whose outputs ended inside a thought (the cases gate fails them)"
        return Fault(unclosed, "had outputs that ended inside an unclosed thought", counted)
    message = cut_failure(record)
    if message is None:
        return None
    counted = "with too many samples cut by a budget (the cases gate fails them)"
    return Fault(message, "had too many samples cut by a budget", counted)


@hookimpl
def ctxgate_report_sections(report: Report) -> list[ReportSection]:
    """The run's line on how it thought, each case's thought as a table and a junit property."""
    from .lines import case_thinking, off_line, thinking_line, thinking_rows

    lines = tuple(line for line in (thinking_line(report), off_line(report)) if line)
    table = thinking_rows(report)
    rows = tuple(tuple(r) for r in ([table[0], *table[1]] if table else []))
    named = {f"thinking.{c.name}": case_thinking(c.thinking) for c in report.cases if c.thinking}
    if not (lines or rows or named):
        return []
    return [ReportSection(NAME, "Thinking", lines, rows, named)]
