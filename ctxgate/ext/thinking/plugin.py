"""Reasoning models: ``--thinking``, ``--thinking-budget``, ``--budget-forcing``, ``--think-end``;
how each output is read (the thought split off, the budget held), the ``[thinking]`` table of
thresholds.toml and the gate on cut samples, and the thought in every report form."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from ctxgate.hookspec import hookimpl
from ctxgate.run.options import Get, Option, OptionError, OptionGroup, whole

from .formats import MODES

if TYPE_CHECKING:
    from ctxgate.backends.base import Backend
    from ctxgate.gate.baseline import RunKey
    from ctxgate.gate.plan import Plan
    from ctxgate.gate.verdicts import Fault
    from ctxgate.records.schema import CaseRecord, Report
    from ctxgate.run.loading import ModelSpec

    from .formats import ThoughtFormat
    from .reading import ThoughtReading

NAME = "thinking"
THINKING = Option(
    "--thinking",
    "a reasoning model's thinking: default (the model's own), on or off (its chat template's "
    "enable_thinking), or gpt-oss's reasoning level low, medium or high (reasoning_effort); the "
    "thought is removed before scoring either way",
    default="default",
    choices=MODES,
)
THINKING_BUDGET = Option(
    "--thinking-budget",
    "tokens of thought before each answer, beside the task's own answer budget: the thought is "
    "closed at this many tokens and the answer generated after it: by the engine's own thinking "
    "budget where it has one (vLLM's thinking_token_budget, with --reasoning-parser), else by "
    "budget forcing (default: thought and answer share the task's budget, as the references run)",
    parse=whole(1),
    example="1024",
)
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
    """The options as read, and the share of cut samples past which a case fails."""

    mode: str = THINKING.default
    budget: int | None = None
    end: str | None = None
    forcing: bool = False
    max_cut_share: float = CUT_SHARE_DEFAULT


def settings(spec: ModelSpec) -> ThinkingSettings:
    found = spec.extras.get(NAME)
    return found if isinstance(found, ThinkingSettings) else ThinkingSettings()


@hookimpl
def ctxgate_option_groups() -> list[OptionGroup]:
    options = (THINKING, THINKING_BUDGET, BUDGET_FORCING, THINK_END)
    return [OptionGroup("ctxgate-thinking", "ctxgate reasoning models", options, evaluates=True)]


@hookimpl
def ctxgate_plan_section(get: Get, plan: Plan) -> tuple[str, ThinkingSettings]:
    mode, budget, end = (o.read(get(o.dest)) for o in (THINKING, THINKING_BUDGET, THINK_END))
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
    if mode == "off" and budget is not None:
        raise OptionError(
            f"--thinking-budget {budget} with --thinking off: a model told not to think has no "
            "thought to hold to a budget: drop --thinking-budget, or pass --thinking on"
        )
    share = plan.thresholds.extras.get(CUT_SHARE, CUT_SHARE_DEFAULT)
    return NAME, ThinkingSettings(mode, budget, end, forcing, share)


@hookimpl
def ctxgate_threshold_tables() -> dict[str, Any]:
    from ctxgate.gate.thresholds_schema import number

    return {"thinking": {"max_cut_share": (CUT_SHARE, number(0, 1, CUT_SHARE_DEFAULT))}}


@hookimpl
def ctxgate_positions(spec: ModelSpec) -> int:
    return settings(spec).budget or 0  # the thought comes on top of the length


@hookimpl
def ctxgate_backend_facts(spec: ModelSpec, backend: Backend) -> dict[str, bool]:
    """A replica's server asked whether it holds a thought to a budget itself, where one is set."""
    from .forcing import has_own_budget

    return {"has_thinking_budget": settings(spec).budget is not None and has_own_budget(backend)}


@hookimpl
def ctxgate_reading(spec: ModelSpec, backend: Backend) -> ThoughtReading:
    """The model's thought format with who holds its budget. Raises ModelError naming the stage."""
    from ctxgate.backends.base import BackendDown
    from ctxgate.records.refusal import CtxgateError
    from ctxgate.run.loading import ModelError

    from .formats import Thinking, ThinkingError, prepare
    from .reading import ThoughtReading, budget_holder

    given = settings(spec)
    asked = Thinking(given.mode, given.budget, given.end)
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
    from ctxgate.run.facts import resolve_chat
    from ctxgate.tokens.chat import ChatTemplateError

    if not fmt.thinks or fmt.mode == "off" or fmt.closed:  # closed: the prompt ends the thought
        return None
    if getattr(backend, "chat_api", False):
        return "left out"
    try:
        has_template = backend.tokenizer.chat_parts() is not None
    except ChatTemplateError:  # refused in one line where the prompts are built
        return None
    # "task": RULER's own policy, which uses the template
    chat = resolve_chat(spec.chat_template, has_template) != "off"
    return "after the thought" if chat else None


@hookimpl
def ctxgate_run_keys() -> list[RunKey]:
    from ctxgate.gate.baseline import RunKey

    words = (
        "thinking setting (--thinking, --thinking-budget, the thought's markers, where the answer "
        "prefix goes)"
    )
    return [RunKey("thinking", words, _as_now)]


def _as_now(value: Any) -> Any:
    """A report from before ``budget_by`` was recorded forced its thinking budget, as every
    engine then did; one from before ``answer_prefix`` kept the prefix in the prompt."""
    if not isinstance(value, dict):
        return value
    if "budget_by" not in value:
        value = value | {"budget_by": "forcing" if value.get("budget") is not None else None}
    return {"answer_prefix": None} | value


@hookimpl
def ctxgate_case_fault(record: CaseRecord) -> Fault | None:
    from ctxgate.gate.verdicts import Fault

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
def ctxgate_report_notes(report: Report, place: str) -> list[str]:
    from .lines import off_line, thinking_line

    found = (thinking_line(report), off_line(report)) if place == "run" else ()
    return [line for line in found if line]


@hookimpl
def ctxgate_report_facts(report: Report) -> list[tuple[str, str]]:
    from .lines import thinking_line

    line = (thinking_line(report) or "").removeprefix("Thinking ")
    return [("Thinking", line)] if line else []


@hookimpl
def ctxgate_report_tables(report: Report) -> list[tuple[list[str], list[list[str]]]]:
    from .lines import thinking_rows

    return [table] if (table := thinking_rows(report)) else []


@hookimpl
def ctxgate_junit_properties(report: Report) -> list[tuple[str, str]]:
    from .lines import case_thinking

    named = [(c.name, c.thinking) for c in report.cases if c.thinking]
    return [(f"ctxgate.thinking.{name}", case_thinking(t)) for name, t in named]
