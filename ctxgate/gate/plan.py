"""A run's plan, made once from the option table's values (``run/options.py``) and frozen: the
checkpoint, how it is served and judged, the lengths and samples, the thresholds and the baseline,
and each extra's section. pytest and ``ctxgate bisect`` both call ``make_plan``, so the same
options give the same plan and a bad value is the same one line, before any model loads."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from ctxgate.backends.checkpoint import CheckpointError, check_tokenizer, resolve_model
from ctxgate.backends.formats import Checkpoint
from ctxgate.data.haystacks import HaystackError, load_essay
from ctxgate.gate.baseline import Baseline, BaselineError, load_baseline
from ctxgate.gate.thresholds import (
    PytestConfig,
    Thresholds,
    find_thresholds,
    load_or_default,
    refuse_floors_at_chance,
)
from ctxgate.hooks import hook, installed, one_answer, readers
from ctxgate.judge.client import JudgeError, JudgeSettings
from ctxgate.judge.entail import check_nli_model
from ctxgate.records.schema import to_json
from ctxgate.records.slots import slots
from ctxgate.refusal import CtxgateError
from ctxgate.run import options as opt
from ctxgate.run.case import EarlyStop
from ctxgate.run.flags import Get, Option, OptionError, read
from ctxgate.run.loading import EngineSettings, ModelSpec, config_changes, factory_of, read_engine
from ctxgate.tasks.base import TaskSpec
from ctxgate.tasks.registry import get_task, task_names

OPTIONS: tuple[Option, ...] = (opt.MODEL, opt.BACKEND, *opt.EVALUATION, *opt.REASONING)
OPTIONS += (*opt.ENGINE, *opt.HF, *opt.JUDGE, opt.REPORT, opt.FORCE_LENGTHS, opt.BASELINE)
LLAMA2 = "give a local copy of meta-llama/Llama-2-7b-hf's tokenizer"


@dataclass(frozen=True)
class Plan:
    """``model``: what to evaluate and how (``model`` "" for the project's own tests).
    ``startup_error``: why nothing can run, reported for every case."""

    model: ModelSpec
    lengths: tuple[int, ...]
    samples: int | None  # None: each task's HELMET/RULER count
    thresholds: Thresholds
    engine: EngineSettings = EngineSettings()  # --backend openai/vllm
    thresholds_path: str = ""  # "" when none was found
    thresholds_found: str = ""  # how the thresholds file was found, or where none was
    baseline: Baseline | None = None
    report: str | None = None
    force_lengths: bool = False
    startup_error: str | None = None
    # each extra's frozen section, by the extra's name (``hookspec.ctxgate_plan_section``)
    extras: Mapping[str, Any] = field(default_factory=dict)
    # generation budgets in place of tasks' own, by task (``hookspec.ctxgate_task_budgets``)
    budgets: Mapping[str, int] = field(default_factory=dict)


def task_for(plan: Plan, name: str) -> TaskSpec:
    """The task as this run runs it: its spec, with the budget an extra's option gave it."""
    spec = get_task(name)
    budget = plan.budgets.get(name)
    return spec if budget is None else replace(spec, tokens_to_generate=budget)


def make_plan(
    get: Get, started_in: Path, ini: PytestConfig | None = None, *, gated: bool | None = None
) -> Plan:
    """The plan from the options as pytest or argparse read them (``get(dest)``). ``ini``: the
    config file pytest read. ``gated``: whether it has thresholds and a baseline (None: with
    --model; the project's own tests run pytest without one)."""
    values = read(OPTIONS, get)
    backend, model = values[opt.BACKEND.dest], values[opt.MODEL.dest]
    if backend not in opt.BACKENDS:
        factory_of(backend)
    if model == "":
        raise OptionError(
            "--model is empty: give a checkpoint folder, e.g. --model fixtures/tiny-llama-niah"
        )
    # the extras' part of how the model opens, read before it is located (a checkpoint kind's)
    opening = _sections(hook().ctxgate_model_section(get=get))
    checkpoint, startup_error = _located(values, backend, model, opening) if model else (None, None)
    tokenizer = str(checkpoint.tokenizer_dir) if checkpoint else None
    engine = read_engine(values, backend, values["chat_template"], tokenizer)
    path, found, thresholds, baseline = None, "", load_or_default(None, ()), None
    if model if gated is None else gated:
        path, found = find_thresholds(values["thresholds"], started_in, ini)
        thresholds = load_or_default(path, task_names())
        refuse_floors_at_chance(thresholds, values["lengths"])
        if values["baseline"]:
            try:
                baseline = load_baseline(values["baseline"])
            except BaselineError as exc:
                raise OptionError(f"--baseline {values['baseline']}: {exc}") from None
    spec = _spec(values, checkpoint, started_in, thresholds.judge_max_failure_rate, opening)
    if model and startup_error is None:
        _check_served(spec, engine)
    plan = Plan(
        spec,
        values["lengths"],
        values["samples"],
        thresholds,
        engine,
        str(path) if path else "",
        found,
        baseline,
        values[opt.REPORT.dest],
        values[opt.FORCE_LENGTHS.dest],
        startup_error,
        extras=opening,
    )
    sections = _sections([*opening.items(), *hook().ctxgate_plan_section(get=get, plan=plan)])
    plan = replace(plan, model=replace(plan.model, extras=sections), extras=sections)
    plan = replace(plan, budgets=_budgets(plan))
    if plan.baseline is not None:
        _same_settings(plan.baseline, run_record(plan))
    return plan


def _budgets(plan: Plan) -> dict[str, int]:
    found: dict[str, int] = {}
    for answer in hook().ctxgate_task_budgets(plan=plan):
        for name, budget in answer.items():
            get_task(name)  # a task no package registered: one line naming it
            if isinstance(budget, bool) or not isinstance(budget, int) or budget < 1:
                raise OptionError(
                    f"an extra gave {name} a generation budget of {budget!r}: a budget is a whole "
                    "number of tokens, 1 or more; fix the option that sets it"
                )
            if found.get(name, budget) != budget:
                raise OptionError(
                    f"two extras give {name} a generation budget ({found[name]} and {budget}): "
                    "set it through one of them"
                )
            found[name] = budget
    return found


def case_stop(
    plan: Plan, floor: float | None, baseline: Mapping[int, float] | None, tolerance: float
) -> EarlyStop | None:
    """How a case stops once its gate's questions are answered (an extra's answer,
    ``hookspec.ctxgate_case_stop``): is its true score above ``floor`` (a fraction)? did it drop by
    more than ``tolerance`` (a fraction) against the ``baseline``'s scores by sample?"""
    answers = hook().ctxgate_case_stop(
        plan=plan, floor=floor, baseline=baseline, tolerance=tolerance
    )
    found: EarlyStop | None = one_answer("ctxgate_case_stop", answers)
    return found


def run_record(plan: Plan) -> dict[str, object]:
    """The extras' slots of the run's record, from the plan (``hookspec.ctxgate_run_record``)."""
    found: dict[str, object] = {}
    for answer in hook().ctxgate_run_record(plan=plan):
        found |= {name: value for name, value in answer.items() if value is not None}
    return found


def _same_settings(baseline: Baseline, extras: Mapping[str, object]) -> None:
    """A run slot that names its options (``Slot.baseline``) holds the baseline's value, or the run
    is refused before anything is generated: its samples could not be paired."""
    for name, slot in slots("run").items():
        if slot.baseline is None:
            continue
        then = baseline.run.extras.get(name)
        then = slot.as_now(then) if slot.as_now else then
        now = extras.get(name)
        if to_json(then) != to_json(now):
            raise OptionError(
                f"--baseline {baseline.path} ran with {slot.baseline} {_said(then)}, this run "
                f"with {_said(now)}: its samples cannot be paired with these. Re-run the baseline "
                f"with the same {slot.baseline}, or drop --baseline"
            )


def _said(value: object) -> str:
    """A slot's value as a refusal shows it: its fields' values, or "none"."""
    plain = to_json(value)
    if isinstance(plain, dict):
        return ", ".join(f"{k} {v!r}" for k, v in plain.items()) or "none"
    return "none" if plain is None else repr(plain)


def _sections(answers: list[tuple[str, Any] | None]) -> dict[str, Any]:
    """The extras' sections by name: two of one name are two plugins' bug, refused."""
    found: dict[str, Any] = {}
    for name, section in filter(None, answers):
        if name in found:
            raise CtxgateError(
                f"two ctxgate plugins name their section of the plan {name!r}: rename one"
            )
        found[name] = section
    return found


def _located(
    values: Mapping[str, Any], backend: str, model: str, extras: Mapping[str, Any]
) -> tuple[Checkpoint | None, str | None]:
    """The checkpoint --model names, located and checked (``extras``: the extras' part of how the
    model opens); one that cannot be opened is the run's startup error (reported for every case),
    not a usage error."""
    unopened_server = backend == "openai" and not Path(model).expanduser().is_dir()
    if backend not in opt.BACKENDS or unopened_server:
        return None, None
    folder = resolve_model(model)
    keys = ("trust_remote_code", "ignore_remote_code", "allow_pickle")
    try:
        return ModelSpec(model, extras=extras, **{k: values[k] for k in keys}).locate(folder), None
    except CheckpointError as exc:
        return None, str(exc)


def _spec(
    values: Mapping[str, Any],
    checkpoint: Checkpoint | None,
    started_in: Path,
    judge_max_failure_rate: float,
    extras: Mapping[str, Any],
) -> ModelSpec:
    """The model's spec (``extras``: the extras' part of how it opens), each option checked."""
    model = values[opt.MODEL.dest] or ""
    if checkpoint is not None:  # the extras' changes to its config, against it
        config_changes(ModelSpec(model, extras=extras), checkpoint.config_dir)
    _check_hf(values, values[opt.BACKEND.dest])
    _check_thinking(values)
    helmet = values["helmet_tokenizer"]
    for folder, flag, fix in (
        (values["data_dir"], "--data-dir", "give HELMET's data folder (or fixtures/helmet_data)"),
        (helmet, "--helmet-tokenizer", LLAMA2),
    ):
        if folder and not Path(folder).is_dir():
            raise OptionError(f"{flag} {folder!r} is not a folder: {fix}")
    if helmet and not (Path(helmet) / "tokenizer_config.json").is_file():
        raise OptionError(
            f"--helmet-tokenizer {helmet!r} is not a tokenizer folder (no tokenizer_config.json): "
            + LLAMA2
        )
    if helmet:
        check_tokenizer(Path(helmet), "--helmet-tokenizer")
    if values["haystack"]:
        try:
            load_essay(values["haystack"])
        except HaystackError as exc:
            raise OptionError(f"--haystack: {exc}") from None
    cache_dir = None
    if not values["no_cache"]:
        cache_dir = str(values["cache_dir"] or started_in / opt.CACHE_FOLDER)
    judge = judge_settings(values, cache_dir)
    if values["nli_model"]:
        check_nli_model(values["nli_model"], values["allow_pickle"])
    resolved: dict[str, Any] = {"cache_dir": cache_dir, "judge": judge, "extras": extras}
    resolved |= {"nli_model": values["nli_model"], "judge_max_failure_rate": judge_max_failure_rate}
    # the other fields are options of the same name, as the table read them
    given = {f.name: values[f.name] for f in fields(ModelSpec) if f.name in values}
    return ModelSpec(**{**given, "model": model, "checkpoint": checkpoint, **resolved})


def _check_served(spec: ModelSpec, engine: EngineSettings) -> None:
    """--backend openai: the tokenizer to check the servers against."""
    if spec.backend != "openai":
        return
    if engine.tokenizer is None:
        raise OptionError(
            f"--backend openai: --model {spec.model!r} is not a folder, so pass --tokenizer with "
            "the served model's tokenizer folder"
        )
    check_tokenizer(Path(engine.tokenizer), "--tokenizer")
    if spec.checkpoint is None:  # the extras' changes to the served model's config, against it
        config_changes(spec, engine.tokenizer)


def _check_hf(values: Mapping[str, Any], backend: str) -> None:
    device_map, per_replica = values["device_map"], values["gpus_per_replica"]
    if backend != "hf" and (values["batch_size"] is not None or device_map or per_replica):
        served = backend in ("vllm", "openai")
        fix = "--concurrency N (requests in flight per replica)" if served else "nothing"
        raise OptionError(
            "--batch-size/--device-map/--gpus-per-replica are for --backend hf; with --backend "
            f"{backend} use {fix}"
        )
    if per_replica is not None and device_map is None:
        raise OptionError(
            f"--gpus-per-replica {per_replica} needs --device-map auto, e.g. --device-map auto "
            "--gpus-per-replica 4"
        )


def _check_thinking(values: Mapping[str, Any]) -> None:
    """A thought to ask for needs a reader of the model's thoughts (an extra's reading), and a
    budget needs a thought."""
    mode, budget = values[opt.THINKING.dest], values[opt.THINKING_BUDGET.dest]
    if mode == "off" and budget is not None:
        raise OptionError(
            f"--thinking-budget {budget} with --thinking off: a model told not to think has no "
            "thought to hold to a budget: drop --thinking-budget, or pass --thinking on"
        )
    asked = "--thinking-budget" if budget is not None else f"--thinking {mode}"
    if (budget is not None or mode != "default") and not readers():
        raise OptionError(
            f"{asked}: no installed extra reads a model's thought (splits it from the answer, "
            f"holds it to a budget); extras installed: {', '.join(installed()) or 'none'}. "
            "Install ctxgate with its extras (pip install --force-reinstall ctxgate), or drop "
            f"{asked.split()[0]}"
        )


def judge_settings(values: Mapping[str, Any], cache_dir: str | None) -> JudgeSettings | None:
    """The judge from the judge options; None without --judge-model."""
    model, base_url, price = values["judge_model"], values["judge_base_url"], values["judge_price"]
    if model is None:
        if price is not None or base_url is not None:
            flag = "--judge-price" if price is not None else "--judge-base-url"
            raise JudgeError(
                f"{flag} sets up a judge: add --judge-model NAME (e.g. --judge-model "
                "gpt-4o-2024-05-13)"
            )
        return None
    if base_url is None and not os.environ.get("OPENAI_API_KEY"):
        raise JudgeError(
            f"--judge-model {model} needs OPENAI_API_KEY in the environment (or --judge-base-url "
            "for an OpenAI-compatible server)"
        )
    return JudgeSettings(
        model=model,
        base_url=base_url,
        timeout_s=values["judge_timeout"],
        time_limit_s=values["judge_time_limit"],
        max_retries=values["judge_retries"],
        concurrency=values["judge_concurrency"],
        price_per_mtok=price,
        cache_dir=values["judge_cache"] or cache_dir,
    )
