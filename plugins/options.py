"""The run's options (checkpoint, lengths, samples, data, thresholds, baseline, engine, --sequential), read once in
``pytest_configure`` into the run's plan (``ctxgate.gate.plan``, as ``ctxgate bisect`` reads them) in a frozen
``Settings`` kept in ``config.stash``; the hf and judging plugins read their own, and the engine plugin starts
the servers the plan's engine names.

Thresholds, the baseline, data folders and the checkpoint are checked here too, so a mistake stops the run before
any model is loaded, and the suite is collected whatever the form of ``--model``. PYTEST_DONT_REWRITE: the plugins
that build on these settings import this module before pytest registers it, and it holds no assertion worth
rewriting.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest

from ctxgate.backends.checkpoint import CheckpointError, resolve_model
from ctxgate.gate.plan import Plan, make_plan
from ctxgate.gate.thresholds import INI_OPTION, PytestConfig
from ctxgate.records.refusal import CtxgateError
from ctxgate.run.loading import ModelSpec, factory_of
from ctxgate.run.options import BASELINE, SEQUENTIAL_OPTIONS
from ctxgate.run.options import EVALUATION as RUN_OPTIONS
from ctxgate.run.options import check_overrides as check_against_config
from ctxgate.run.serving import ENGINE

BACKENDS = ("hf", "vllm", "openai")  # and MODULE:FACTORY, a backend of one's own
_CHECKOUT_SUITE = Path(__file__).resolve().parent.parent / "tests_longctx"
# installed, the suite ships inside the plugins' package (pyproject.toml: ctxgate_plugins.suite)
SUITE_DIR = _CHECKOUT_SUITE if _CHECKOUT_SUITE.is_dir() else Path(__file__).resolve().parent / "suite"


@dataclass(frozen=True)
class Settings:
    """The run: its ``plan`` (``ctxgate.gate.plan``, which ``ctxgate bisect`` makes from the same options: how the
    checkpoint is opened, the cases, the thresholds, the baseline), where the report goes, and whether lengths
    beyond the model's window run. The other plugins' parts (engine, hf, judging) are added by ``plugins/model.py``."""

    plan: Plan
    report: str | None = None
    force_lengths: bool = False

    @property
    def opening(self) -> ModelSpec:
        return self.plan.opening

    @property
    def model(self) -> str | None:
        """--model; None: no model (the project's own tests, which run no case)."""
        return self.opening.model or None

    @property
    def backend(self) -> str:
        return self.opening.backend


SETTINGS_KEY = pytest.StashKey[Settings]()
STARTUP_ERROR_KEY = pytest.StashKey[str]()  # why nothing can run (a broken checkpoint, an engine that will not start)


def refusals_are_usage_errors(configure: Callable[[pytest.Config], None]) -> Callable[[pytest.Config], None]:
    """Every plugin's ``pytest_configure``: a refusal raised while it reads its options (``CtxgateError``, whose
    message names the bad value and the fix) ends the run before anything starts, as pytest's one ``ERROR:`` line
    and exit status 4. Each plugin's own is wrapped because pluggy allows no wrapper around a historic hook."""

    @functools.wraps(configure)
    def refusing(config: pytest.Config) -> None:
        try:
            configure(config)
        except CtxgateError as exc:
            raise pytest.UsageError(exc.line) from None

    return refusing


def pytest_addoption(parser: pytest.Parser) -> None:
    g = parser.getgroup("ctxgate", "ctxgate long-context suite")
    g.addoption("--model", help="checkpoint folder or hub id to evaluate (e.g. fixtures/tiny-llama-niah)")
    g.addoption(
        "--backend",
        default="hf",
        metavar="{" + ",".join(BACKENDS) + ",MODULE:FACTORY}",
        help="hf: transformers in each worker; vllm: vLLM servers the suite starts; openai: an "
        "OpenAI-compatible server you run (--base-url); MODULE:FACTORY: a backend of your own, made from the run's "
        "options (docs/architecture.md)",
    )
    for option in RUN_OPTIONS:
        option.add_to(g)
    g.addoption("--report", help="write the JSON report here (plus .predictions.jsonl and .md)")
    g.addoption(
        "--force-lengths",
        action="store_true",
        help="run lengths beyond the model's max positions with its own RoPE (--backend hf only: vLLM's RoPE table "
        "ends there; extend it with --model-override max_position_embeddings=N)",
    )
    BASELINE.add_to(g)
    engine = parser.getgroup("ctxgate-engine", "ctxgate engines: --backend openai / vllm")
    for option in ENGINE:
        option.add_to(engine)
    sequential = parser.getgroup("ctxgate-sequential", "ctxgate --sequential: stop a case once its verdict is certain")
    for option in SEQUENTIAL_OPTIONS:
        option.add_to(sequential)
    parser.addini(
        INI_OPTION,
        "the project's thresholds file, relative to this ini file; the run refuses to start without it",
        default="",
    )


@pytest.hookimpl(tryfirst=True)
@refusals_are_usage_errors
def pytest_configure(config: pytest.Config) -> None:
    """First of all (``plugins.MODULES`` says why). A mistake ends as one UsageError line naming the option and the
    fix, before any worker starts or any model loads; a checkpoint that exists but cannot be loaded is recorded
    (STARTUP_ERROR_KEY) for the run's report."""
    backend = config.getoption("--backend")
    if backend not in BACKENDS:
        factory_of(backend)
    model = config.getoption("--model")
    if model == "":
        raise pytest.UsageError("--model is empty: give a checkpoint folder, e.g. --model fixtures/tiny-llama-niah")
    here, ini = Path(config.invocation_params.dir), PytestConfig(config.inipath, str(config.getini(INI_OPTION) or ""))
    plan = make_plan(config.getoption, here, ini, gated=bool(model), model=model or "", backend=backend)
    if plan.opening.ray is not None and (config.getoption("numprocesses", None) or hasattr(config, "workerinput")):
        raise pytest.UsageError(
            f"--ray {plan.opening.ray} runs every case from this one pytest process, on the cluster's replicas: drop -n"
        )
    settings = Settings(plan, config.getoption("--report"), config.getoption("--force-lengths"))
    config.stash[SETTINGS_KEY] = settings
    if settings.model is None:
        return  # the project's own tests: nothing to gate
    if plan.sequential is not None and plan.thresholds.min_effective_length:
        raise pytest.UsageError(
            f"--sequential cannot check min_effective_length ({plan.thresholds.path}): the effective length averages "
            "RULER's tasks, and an average of means that stopped early is biased, with no guarantee. Drop "
            "--sequential, or pass --thresholds with a file whose [session] min_effective_length is 0"
        )
    if plan.sequential is not None and plan.thresholds.relative_min_length:
        raise pytest.UsageError(
            f"--sequential cannot check [relative_effective_length.min_length] ({plan.thresholds.path}): a relative "
            "effective length compares averages of means, and means that stopped early are biased, with no "
            "guarantee. Drop --sequential, or pass --thresholds with a file without that table"
        )
    collect_the_suite(config)
    if plan.baseline is not None and not hasattr(config, "workerinput"):
        incomplete = plan.baseline.incompleteness()
        for note in (
            incomplete and f"--baseline {incomplete}; cases without a baseline score are gated by their floors only",
            plan.baseline.sequential_note(),
        ):
            if note:
                config.issue_config_time_warning(pytest.PytestConfigWarning(note), stacklevel=2)
    config.stash[SETTINGS_KEY] = _checked_model(config, settings)


def pytest_report_header(config: pytest.Config) -> list[str] | None:
    settings = config.stash.get(SETTINGS_KEY, None)
    if settings is None or settings.model is None:
        return None
    plan, thresholds = settings.plan, settings.plan.thresholds
    lines = []
    if settings.opening.overrides:
        lines.append(f"ctxgate model config overrides: {json.dumps(settings.opening.overrides.describe())}")
    if not plan.thresholds_path:
        return lines + [
            f"ctxgate thresholds: {plan.thresholds_found}; no floors, so the floors gate checks nothing "
            "(pass --thresholds PATH)"
        ]
    gated = thresholds.default_floor > 0 or any(rule.value > 0 for rule in thresholds.floors)
    return lines + [
        f"ctxgate thresholds: {plan.thresholds_path} ({plan.thresholds_found}; "
        f"{len(thresholds.floors)} floor rule(s), default floor {thresholds.default_floor:g}, rule "
        f"{thresholds.rule!r})"
        + ("" if gated else "; no floor is above 0, so the floors gate checks nothing (add [[floor]] rules)")
    ]


def collect_the_suite(config: pytest.Config) -> None:
    """Collect the suite when the user named no test paths and no ini file named any, whatever the form of
    ``--model``: pytest picks its rootdir before plugins declare options, so it reads ``--model /abs/ckpt`` as a test
    path (pytest-dev/pytest#8846), reads no ini file of the project, and would collect the working directory."""
    if config.args_source != pytest.Config.ArgsSource.INVOCATION_DIR:
        return  # test paths on the command line, or the ini file's testpaths: the user chose
    if not SUITE_DIR.is_dir():
        raise pytest.UsageError(
            f"the ctxgate suite is not at {SUITE_DIR}: the installation is incomplete; reinstall ctxgate "
            "(pip install --force-reinstall ctxgate), or name the suite's folder: "
            "pytest tests_longctx --model path/to/ckpt"
        )
    config.args[:] = [str(SUITE_DIR)]


def _checked_model(config: pytest.Config, settings: Settings) -> Settings:
    """``--model`` resolved to a folder (a name that is neither a folder nor a cached hub model is a usage error)
    and checked; a broken checkpoint is recorded for the run to report instead of loading it."""
    if settings.backend == "openai":  # a server you run; --model names it, or is its checkpoint's folder
        folder = Path(settings.model or "").expanduser()
        settings = _opening(settings, model_dir=str(folder) if folder.is_dir() else None)
        if settings.opening.model_dir:  # else the engine plugin checks them against --tokenizer's config
            check_overrides(settings, settings.opening.model_dir)
        return settings
    if settings.backend not in BACKENDS:  # a backend of one's own takes --model as given
        return settings
    folder = resolve_model(settings.model or "")
    settings = _opening(settings, model_dir=str(folder))
    try:
        found = settings.opening.locate(folder)
    except CheckpointError as exc:  # a broken checkpoint is the run's result, in its report; a WrongFlag is usage
        config.stash[STARTUP_ERROR_KEY] = str(exc)
        return settings
    settings = _opening(settings, checkpoint=found)
    check_overrides(settings, str(found.config_dir))
    return settings  # --backend vllm: the engine plugin starts its servers on this folder


def _opening(settings: Settings, **changes: Any) -> Settings:
    return replace(settings, plan=replace(settings.plan, opening=replace(settings.opening, **changes)))


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
    check_against_config(settings.opening.overrides, folder)
