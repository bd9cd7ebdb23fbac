"""The judged tasks' options (Cite, NarrativeQA, Summ): the LLM judge and the NLI model, read once into
``JudgingSettings`` under ``JUDGING_KEY``, checked before any model loads. The model plugin builds the judges."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from ctxgate.backends.checkpoint import CheckpointError, check_checkpoint
from ctxgate.judge.client import OPTIONS, JudgeSettings

from .options import SETTINGS_KEY, usage_errors


@dataclass(frozen=True)
class JudgingSettings:
    judge: JudgeSettings | None = None  # None: judged tasks keep their outputs for `ctxgate judge` later
    nli_model: str | None = None


JUDGING_KEY = pytest.StashKey[JudgingSettings]()


def pytest_addoption(parser: pytest.Parser) -> None:
    j = parser.getgroup("ctxgate-judge", "ctxgate judged tasks (Cite, NarrativeQA, Summ)")
    for flag, kwargs in OPTIONS:
        j.addoption(flag, **kwargs)


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    run = config.stash[SETTINGS_KEY]
    with usage_errors(ValueError):
        judge = JudgeSettings.from_options(config.getoption, run.opening.cache_dir)
    nli_model = config.getoption("--nli-model")
    config.stash[JUDGING_KEY] = JudgingSettings(judge, nli_model)
    if run.model is None or not nli_model:
        return
    if not Path(nli_model).is_dir():
        raise pytest.UsageError(
            f"--nli-model {nli_model!r} is not a folder: give a local NLI checkpoint (an MNLI classifier or a T5 "
            "TRUE model)"
        )
    # the judge's checkpoint passes the same checks as --model's (pickle, checkpoint code)
    with usage_errors(CheckpointError, prefix="--nli-model: "):
        check_checkpoint(Path(nli_model), allow_pickle=run.opening.allow_pickle)
