"""The run's options, declared in the one table (``ctxgate/run/options.py``), read once in
``pytest_configure`` into the run's plan (``ctxgate.gate.plan``, as ``ctxgate bisect`` makes it) and
kept frozen under ``PLAN_KEY``, where the other plugins read it. PYTEST_DONT_REWRITE: the plugins
that build on the plan import this module before pytest registers it."""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path

import pytest

from ctxgate.gate.plan import Plan, make_plan
from ctxgate.gate.thresholds import INI_OPTION, PytestConfig
from ctxgate.hooks import flat, hook
from ctxgate.records.schema import RunError
from ctxgate.refusal import CtxgateError
from ctxgate.run.flags import extra_groups
from ctxgate.run.loading import placement
from ctxgate.run.options import (
    BACKEND,
    BASELINE,
    ENGINE,
    EVALUATION,
    FORCE_LENGTHS,
    HF,
    JUDGE,
    MODEL,
    REASONING,
    REPORT,
)

_HERE = Path(__file__).resolve().parent
_CHECKOUT_SUITE = _HERE.parent / "tests_longctx"
# installed, the suite ships inside the plugins' package (pyproject.toml: ctxgate_plugins.suite)
SUITE_DIR = _CHECKOUT_SUITE if _CHECKOUT_SUITE.is_dir() else _HERE / "suite"

PLAN_KEY = pytest.StashKey[Plan]()
# why nothing can run (a broken checkpoint, an engine that will not start)
STARTUP_ERROR_KEY = pytest.StashKey[RunError]()


def refusals_are_usage_errors(
    configure: Callable[[pytest.Config], None],
) -> Callable[[pytest.Config], None]:
    """Every plugin's ``pytest_configure``: a ``CtxgateError`` ends the run as pytest's one
    ``ERROR:`` line (exit 4). Each is wrapped itself: pluggy wraps no historic hook."""

    @functools.wraps(configure)
    def refusing(config: pytest.Config) -> None:
        try:
            configure(config)
        except CtxgateError as exc:
            raise pytest.UsageError(exc.line) from None

    return refusing


def pytest_addoption(parser: pytest.Parser) -> None:
    for name, description, options in (
        (
            "ctxgate",
            "ctxgate long-context suite",
            (MODEL, BACKEND, *EVALUATION, REPORT, FORCE_LENGTHS, BASELINE),
        ),
        ("ctxgate-engine", "ctxgate engines: --backend openai / vllm", ENGINE),
        ("ctxgate-hf", "ctxgate --backend hf: batching and placement", HF),
        ("ctxgate-judge", "ctxgate judged tasks (Cite, NarrativeQA, Summ)", JUDGE),
        ("ctxgate-thinking", "ctxgate reasoning models", REASONING),
    ):
        group = parser.getgroup(name, description)
        for option in options:
            option.add_to(group)
    try:
        extras = extra_groups()
    except CtxgateError as exc:  # an outside plugin that cannot take part: pytest's one line
        raise pytest.UsageError(exc.line) from None
    for extra in extras:
        group = parser.getgroup(extra.name, extra.description)
        for option in extra.options:
            option.add_to(group)
    parser.addini(
        INI_OPTION,
        "the project's thresholds file, relative to this ini file; the run refuses to start "
        "without it",
        default="",
    )


@pytest.hookimpl(tryfirst=True)
@refusals_are_usage_errors
def pytest_configure(config: pytest.Config) -> None:
    """First of all (``plugins.MODULES`` says why). A checkpoint that exists but cannot be opened is
    the plan's startup error, recorded for the run's report."""
    ini = PytestConfig(config.inipath, str(config.getini(INI_OPTION) or ""))
    plan = make_plan(config.getoption, Path(config.invocation_params.dir), ini)
    why = one_process(plan)
    spread = config.getoption("numprocesses", None) or hasattr(config, "workerinput")
    if why is not None and spread:
        raise pytest.UsageError(f"{why}: drop -n")
    config.stash[PLAN_KEY] = plan
    if not plan.model.model:
        return  # the project's own tests: nothing to gate
    if plan.startup_error is not None:
        config.stash[STARTUP_ERROR_KEY] = RunError(plan.startup_error)
    # No test paths named: collect the suite. pytest reads ``--model /abs/ckpt`` as a test path
    # (pytest-dev/pytest#8846), picks a rootdir from it, and would collect the working directory.
    if config.args_source == pytest.Config.ArgsSource.INVOCATION_DIR:
        if not SUITE_DIR.is_dir():
            raise pytest.UsageError(
                f"the ctxgate suite is not at {SUITE_DIR}: the installation is incomplete; "
                "reinstall ctxgate (pip install --force-reinstall ctxgate), or name the suite's "
                "folder: pytest tests_longctx --model path/to/ckpt"
            )
        config.args[:] = [str(SUITE_DIR)]
    if plan.baseline is not None and not hasattr(config, "workerinput"):
        incomplete = plan.baseline.incompleteness()
        for note in (
            incomplete
            and f"--baseline {incomplete}; cases without a baseline score are gated by their "
            "floors only",
            plan.baseline.sequential_note(),
        ):
            if note:
                config.issue_config_time_warning(pytest.PytestConfigWarning(note), stacklevel=2)


def one_process(plan: Plan) -> str | None:
    """Why the run's cases stay in this one pytest process, where an extra places the model's
    replicas itself (``run.loading.Placement``); None: xdist may spread them."""
    placed = placement(plan.model)
    return placed.why if placed else None


def pytest_report_header(config: pytest.Config) -> list[str] | None:
    plan = config.stash.get(PLAN_KEY, None)
    if plan is None or not plan.model.model:
        return None
    t, lines = plan.thresholds, []
    if not plan.thresholds_path:
        lines.append(
            f"ctxgate thresholds: {plan.thresholds_found}; no floors, so the floors gate checks "
            "nothing (pass --thresholds PATH)"
        )
    else:
        gated = t.default_floor > 0 or any(rule.value > 0 for rule in t.floors)
        ungated = "; no floor is above 0, so the floors gate checks nothing (add [[floor]] rules)"
        lines.append(
            f"ctxgate thresholds: {plan.thresholds_path} ({plan.thresholds_found}; "
            f"{len(t.floors)} floor rule(s), default floor {t.default_floor:g}, rule {t.rule!r})"
            + ("" if gated else ungated)
        )
    return lines + list(flat(hook().ctxgate_plan_lines(plan=plan)))
