"""The judged tasks' options (Cite, NarrativeQA, Summ): the LLM judge and the NLI model, read once into
``JudgingSettings`` under ``JUDGING_KEY``, checked before any model loads. The model plugin builds the judges."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from ctxgate.judge.client import OPTIONS, JudgeSettings
from ctxgate.judge.entail import check_nli_model

from .options import SETTINGS_KEY, refusals_are_usage_errors


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
@refusals_are_usage_errors
def pytest_configure(config: pytest.Config) -> None:
    run = config.stash[SETTINGS_KEY]
    judge = JudgeSettings.from_options(config.getoption, run.opening.cache_dir)
    nli_model = config.getoption("--nli-model")
    config.stash[JUDGING_KEY] = JudgingSettings(judge, nli_model)
    if run.model is not None and nli_model:
        check_nli_model(nli_model, run.opening.allow_pickle)
