"""The run's options (checkpoint, lengths, samples, data, thresholds, baseline), read once in ``pytest_configure``
into a frozen ``Settings`` kept in ``config.stash``; the engine, hf, judging and sequential plugins read their own.

Thresholds, the baseline, data folders and the checkpoint are checked here too, so a mistake stops the run before
any model is loaded. PYTEST_DONT_REWRITE: the plugins that build on these settings import this module before pytest
registers it, and it holds no assertion worth rewriting.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest

from ctxgate.backends.checkpoint import CheckpointError, ModelNotFound, resolve_model
from ctxgate.backends.formats import WrongFlag, locate
from ctxgate.backends.overrides import ConfigOverrides, OverrideError
from ctxgate.backends.overrides import applied as apply_overrides
from ctxgate.backends.overrides import parse as parse_overrides
from ctxgate.data.haystacks import HaystackError, load_essay
from ctxgate.gate.baseline import Baseline, BaselineError, load_baseline
from ctxgate.gate.thresholds import Thresholds, ThresholdsError, find_thresholds, load_or_default
from ctxgate.lengths import LengthError, parse_lengths
from ctxgate.run.compose import ModelSpec
from ctxgate.run.options import EVALUATION as RUN_OPTIONS
from ctxgate.run.options import cache_folder, samples_problem
from ctxgate.tasks.registry import task_names

from .collecting import collect_the_suite

BACKENDS = ("hf", "vllm", "openai")
# a JSON script instead of a model, for the project's own plumbing tests: accepted, never offered in --help
TEST_BACKEND = "scripted"
# the suite users run: at the top of a checkout beside the plugins, inside the plugin package when installed


@dataclass(frozen=True)
class Settings:
    """The run: which cases, where the report goes, what gates it; ``opening`` is how the checkpoint is opened and
    its cases built (``run/compose.py``'s ModelSpec, which ``ctxgate bisect`` builds from the same options), with
    the other plugins' parts (engine, hf, judging) added by ``plugins/model.py``."""

    lengths: tuple[int, ...]
    samples: int | None  # None: each task's HELMET/RULER count
    report: str | None
    force_lengths: bool
    baseline: str | None
    opening: ModelSpec
    thresholds_path: str = ""  # "" when none was found
    thresholds_found: str = ""  # how the thresholds file was found, or where none was: for the header

    @property
    def model(self) -> str | None:
        """--model; None: no model (the project's own tests, which run no case)."""
        return self.opening.model or None

    @property
    def backend(self) -> str:
        return self.opening.backend


SETTINGS_KEY = pytest.StashKey[Settings]()
THRESHOLDS_KEY = pytest.StashKey[Thresholds]()
BASELINE_KEY = pytest.StashKey[Baseline]()
STARTUP_ERROR_KEY = pytest.StashKey[str]()  # why nothing can run (a broken checkpoint, an engine that will not start)


def pytest_addoption(parser: pytest.Parser) -> None:
    g = parser.getgroup("ctxgate", "ctxgate long-context suite")
    g.addoption("--model", default=None, help="checkpoint folder or hub id to evaluate (e.g. fixtures/tiny-llama-niah)")
    g.addoption(
        "--backend",
        default="hf",
        metavar="{" + ",".join(BACKENDS) + "}",
        help="hf: transformers in each worker; vllm: vLLM servers the suite starts; openai: an "
        "OpenAI-compatible server you run (--base-url)",
    )
    for option in RUN_OPTIONS:
        option.add_to(g)
    g.addoption("--report", default=None, help="write the JSON report here (plus .predictions.jsonl and .md)")
    g.addoption("--haystack", default=None, help="essay haystack: a .txt file or a dataset with a 'text' column")
    g.addoption("--squad", default=None, help="SQuAD v2 for qa_1: hub id or local file/folder (hub layout)")
    g.addoption("--hotpotqa", default=None, help="HotpotQA distractor for qa_2: hub id or local file/folder")
    g.addoption(
        "--helmet-tokenizer",
        default=None,
        metavar="PATH",
        help="the tokenizer HELMET's length selections and (with --helmet-compat) its pre-cut of long documents count "
        "in (NarrativeQA, Multi-LexSum, InfiniteBench: Llama-2's, a local folder of meta-llama/Llama-2-7b-hf); "
        "default: the model's own",
    )
    g.addoption(
        "--allow-weight-mismatch",
        action="store_true",
        help="evaluate a checkpoint whose weights do not match its config.json (a tensor missing, extra or "
        "of another shape) as transformers loads it, missing tensors random; refused without it",
    )
    g.addoption(
        "--force-lengths",
        action="store_true",
        help="run lengths beyond the model's max positions with its own RoPE (--backend hf only: vLLM's RoPE table "
        "ends there; extend it with --model-override max_position_embeddings=N)",
    )
    g.addoption(
        "--rope-scaling",
        default=None,
        metavar="JSON",
        help="RoPE settings merged into the checkpoint's own for context extension, e.g. "
        """'{"rope_type": "yarn", "factor": 4.0}'; the window they give is the length limit""",
    )
    g.addoption(
        "--model-override",
        action="append",
        default=None,
        metavar="KEY=VALUE",
        help="set a config.json key before loading (VALUE is JSON, else text; repeatable), e.g. rope_theta=1000000",
    )
    g.addoption("--baseline", default=None, help="a previous --report JSON: fail cases that regressed against it")
    parser.addini(
        "ctxgate_thresholds",
        "the project's thresholds file, relative to this ini file; the run refuses to start without it",
        default="",
    )


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    """First of all (tryfirst, and registered after the tryfirst plugins that build on these settings: pluggy
    calls the last registered first)."""
    read(config)


def read(config: pytest.Config) -> None:
    """Every option and input is checked here, before any worker starts or any model loads: a mistake ends as one
    line naming the option and the fix (a UsageError). A checkpoint that exists but cannot be loaded is not a
    usage error: it is recorded (STARTUP_ERROR_KEY) and the run ends with a report that says so."""
    backend = config.getoption("--backend")
    if backend not in (*BACKENDS, TEST_BACKEND):
        raise pytest.UsageError(f"--backend {backend!r} is not one of {', '.join(BACKENDS)}: e.g. --backend hf")
    try:
        lengths = parse_lengths(config.getoption("--lengths"))
    except LengthError as exc:
        raise pytest.UsageError(f"--lengths: {exc}") from None
    if config.getoption("--model") == "":
        raise pytest.UsageError("--model is empty: give a checkpoint folder, e.g. --model fixtures/tiny-llama-niah")
    samples = config.getoption("--samples")
    if problem := samples_problem(samples):
        raise pytest.UsageError(problem)
    opening = ModelSpec(
        model=config.getoption("--model") or "",
        backend=backend,
        dtype=config.getoption("--dtype"),
        trust_remote_code=config.getoption("--trust-remote-code"),
        allow_pickle=config.getoption("--allow-pickle"),
        allow_weight_mismatch=config.getoption("--allow-weight-mismatch"),
        ignore_remote_code=config.getoption("--ignore-remote-code"),
        overrides=_overrides(config),
        chat_template=config.getoption("--chat-template"),
        seed=config.getoption("--seed"),
        haystack=config.getoption("--haystack"),
        squad=config.getoption("--squad"),
        hotpotqa=config.getoption("--hotpotqa"),
        data_dir=config.getoption("--data-dir"),
        helmet_compat=config.getoption("--helmet-compat"),
        helmet_tokenizer=config.getoption("--helmet-tokenizer"),
        cache_dir=cache_folder(
            config.getoption("--cache-dir"), config.getoption("--no-cache"), Path(config.invocation_params.dir)
        ),
    )
    settings = Settings(
        lengths=lengths,
        samples=samples,
        report=config.getoption("--report"),
        force_lengths=config.getoption("--force-lengths"),
        baseline=config.getoption("--baseline"),
        opening=opening,
    )
    config.stash[SETTINGS_KEY] = settings
    if settings.model is None:
        return  # the project's own tests: nothing to gate
    collect_the_suite(config)
    if settings.baseline:
        try:
            baseline = config.stash[BASELINE_KEY] = load_baseline(settings.baseline)
        except BaselineError as exc:
            raise pytest.UsageError(f"--baseline {settings.baseline}: {exc}") from None
        if baseline.incompleteness() and not hasattr(config, "workerinput"):
            config.issue_config_time_warning(
                pytest.PytestConfigWarning(
                    f"--baseline {baseline.incompleteness()}; cases without a baseline score are gated by their floors "
                    "only"
                ),
                stacklevel=2,
            )
        if baseline.sequential_note() and not hasattr(config, "workerinput"):
            config.issue_config_time_warning(pytest.PytestConfigWarning(baseline.sequential_note()), stacklevel=2)
    try:
        path, found = find_thresholds(
            config.getoption("--thresholds"),
            str(config.getini("ctxgate_thresholds") or ""),
            config.inipath,
            Path(config.rootpath),
            Path(config.invocation_params.dir),
        )
    except ThresholdsError as exc:
        raise pytest.UsageError(str(exc)) from None
    settings = replace(settings, thresholds_path=str(path) if path else "", thresholds_found=found)
    try:
        config.stash[THRESHOLDS_KEY] = load_or_default(path, task_names())
    except ThresholdsError as exc:
        raise pytest.UsageError(str(exc)) from None
    opening = settings.opening
    if opening.data_dir and not Path(opening.data_dir).is_dir():
        raise pytest.UsageError(
            f"--data-dir {opening.data_dir!r} is not a folder: give HELMET's data folder (or fixtures/helmet_data)"
        )
    if opening.helmet_tokenizer and not (Path(opening.helmet_tokenizer) / "tokenizer_config.json").is_file():
        raise pytest.UsageError(
            f"--helmet-tokenizer {opening.helmet_tokenizer!r} is not a tokenizer folder (no tokenizer_config.json): "
            "give a local copy of meta-llama/Llama-2-7b-hf's tokenizer"
        )
    if opening.haystack:
        try:
            load_essay(opening.haystack)
        except HaystackError as exc:
            raise pytest.UsageError(f"--haystack: {exc}") from None
    config.stash[SETTINGS_KEY] = _checked_model(config, settings)


def _overrides(config: pytest.Config) -> ConfigOverrides:
    try:
        return parse_overrides(config.getoption("--rope-scaling"), config.getoption("--model-override"))
    except OverrideError as exc:
        raise pytest.UsageError(str(exc)) from None


def pytest_report_header(config: pytest.Config) -> list[str] | None:
    settings = config.stash.get(SETTINGS_KEY, None)
    thresholds = config.stash.get(THRESHOLDS_KEY, None)
    if settings is None or settings.model is None or thresholds is None:
        return None
    lines = []
    if settings.opening.overrides:
        lines.append(f"ctxgate model config overrides: {json.dumps(settings.opening.overrides.describe())}")
    if not settings.thresholds_path:
        return lines + [
            f"ctxgate thresholds: {settings.thresholds_found}; no floors, so the floors gate checks nothing "
            "(pass --thresholds PATH)"
        ]
    gated = thresholds.default_floor > 0 or any(rule.value > 0 for rule in thresholds.floors)
    return lines + [
        f"ctxgate thresholds: {settings.thresholds_path} ({settings.thresholds_found}; "
        f"{len(thresholds.floors)} floor rule(s), default floor {thresholds.default_floor:g}, rule "
        f"{thresholds.rule!r})"
        + ("" if gated else "; no floor is above 0, so the floors gate checks nothing (add [[floor]] rules)")
    ]


def _checked_model(config: pytest.Config, settings: Settings) -> Settings:
    """``--model`` resolved to a folder (a name that is neither a folder nor a cached hub model is a usage error)
    and checked; a broken checkpoint is recorded for the run to report instead of loading it."""
    if settings.backend == "openai":  # a server you run; --model names it, or is its checkpoint's folder
        folder = Path(settings.model or "").expanduser()
        settings = _opening(settings, model_dir=str(folder) if folder.is_dir() else None)
        if settings.opening.model_dir:  # else the engine plugin checks them against --tokenizer's config
            check_overrides(settings, settings.opening.model_dir)
        return settings
    if settings.backend == TEST_BACKEND:
        if not Path(settings.model or "").is_file():
            raise pytest.UsageError(
                f"--model {settings.model!r} does not exist: --backend scripted needs a JSON script"
            )
        return settings
    try:
        folder = resolve_model(settings.model or "")
    except ModelNotFound as exc:
        raise pytest.UsageError(str(exc)) from None
    settings = _opening(settings, model_dir=str(folder))
    try:
        found = locate(
            folder,
            base_model=config.getoption("--base-model"),
            config_from=config.getoption("--config-from"),
            trust_remote_code=settings.opening.trust_remote_code,
            ignore_remote_code=settings.opening.ignore_remote_code,
            allow_pickle=settings.opening.allow_pickle,
        )
    except WrongFlag as exc:
        raise pytest.UsageError(str(exc)) from None
    except CheckpointError as exc:
        config.stash[STARTUP_ERROR_KEY] = str(exc)
        return settings
    settings = _opening(settings, checkpoint=found)
    check_overrides(settings, str(found.config_dir))
    return settings  # --backend vllm: the engine plugin starts its servers on this folder


def _opening(settings: Settings, **changes: Any) -> Settings:
    return replace(settings, opening=replace(settings.opening, **changes))


def check_overrides(settings: Settings, folder: str | None) -> None:
    """The overrides against the config they change: a key it does not have, or no config to change, is a usage
    error before anything loads."""
    if not settings.opening.overrides:
        return
    if folder is None or not Path(folder).is_dir():
        raise pytest.UsageError(
            "--rope-scaling/--model-override need the checkpoint's config.json: pass --model (or --tokenizer) as the "
            "served checkpoint's folder"
        )
    try:
        apply_overrides(folder, settings.opening.overrides)
    except OverrideError as exc:
        raise pytest.UsageError(str(exc)) from None
