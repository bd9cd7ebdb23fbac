"""A run's plan, resolved once from the option table's values: how the checkpoint is opened, the lengths and
samples, the ``--sequential`` stop rule, the engine (``--backend openai``/``vllm``), the thresholds and the
baseline. pytest (``plugins/options.py``) and ``ctxgate bisect`` both call ``make_plan``, so the same options give
the same plan and a bad value is the same refusal, before any model loads."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ctxgate.gate.baseline import Baseline, BaselineError, load_baseline
from ctxgate.gate.thresholds import PytestConfig, Thresholds, find_thresholds, load_or_default
from ctxgate.lengths import LengthError, parse_lengths
from ctxgate.run.loading import ModelSpec
from ctxgate.run.options import SEQUENTIAL_ALPHA, SEQUENTIAL_MIN, OptionError, opening, samples_problem
from ctxgate.run.options import sequential_problem as _sequential_problem
from ctxgate.run.serving import EngineSettings, read_engine
from ctxgate.tasks.registry import task_names


@dataclass(frozen=True)
class Sequential:
    """``--sequential``: each case stops once its verdict is certain at ``alpha``, after ``min_samples``."""

    alpha: float = SEQUENTIAL_ALPHA.default
    min_samples: int = SEQUENTIAL_MIN.default

    def describe(self) -> dict[str, float | int]:
        return {"alpha": self.alpha, "min_samples": self.min_samples}


@dataclass(frozen=True)
class Plan:
    opening: ModelSpec
    lengths: tuple[int, ...]
    samples: int | None  # None: each task's HELMET/RULER count
    sequential: Sequential | None  # None: every case runs its samples
    thresholds: Thresholds
    engine: EngineSettings = EngineSettings()  # the options of --backend openai/vllm, checked
    thresholds_path: str = ""  # "" when none was found
    thresholds_found: str = ""  # how the thresholds file was found, or where none was
    baseline: Baseline | None = None


def make_plan(
    value: Callable[[str], Any], started_in: Path, ini: PytestConfig | None = None, *, gated: bool = True, **given: Any
) -> Plan:
    """The plan from the option table's values as pytest or argparse read them (``value(dest)``; an option the
    caller does not take reads None) plus ``given`` (the model, the backend). ``ini``: the config file pytest
    read (None: found as pytest started in ``started_in`` would find it). ``gated=False`` (no model: the project's
    own tests) looks for no thresholds or baseline."""
    try:
        lengths = parse_lengths(value("lengths"))
    except LengthError as exc:
        raise OptionError(f"--lengths: {exc}") from None
    samples = value("samples")
    problem = samples_problem(samples)
    sequential = Sequential(value("sequential_alpha"), value("sequential_min")) if value("sequential") else None
    if sequential is not None:
        problem = problem or _sequential_problem(sequential.alpha, sequential.min_samples)
    if problem:
        raise OptionError(problem)
    spec = opening(value, started_in, **given)
    engine = read_engine(value, spec.backend, spec.chat_template)
    plan = Plan(spec, lengths, samples, sequential, load_or_default(None, ()), engine)
    if not gated:
        return plan
    baseline = None
    if value("baseline"):
        try:
            baseline = load_baseline(value("baseline"))
        except BaselineError as exc:
            raise OptionError(f"--baseline {value('baseline')}: {exc}") from None
    path, found = find_thresholds(value("thresholds"), started_in, ini)
    thresholds = load_or_default(path, task_names())
    return Plan(spec, lengths, samples, sequential, thresholds, engine, str(path) if path else "", found, baseline)
