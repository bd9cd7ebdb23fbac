"""``--sequential``: stop a case once its gate verdict is certain (``ctxgate.stats.sequential``). Its options are
read once into ``SequentialSettings`` under ``SEQUENTIAL_KEY`` (None: fixed n), after the options plugin has found
the thresholds, so a gate that has no sequential guarantee is refused before anything runs."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from ctxgate.run.options import SEQUENTIAL_ALPHA, SEQUENTIAL_MIN, SEQUENTIAL_OPTIONS, sequential_problem

from .options import SETTINGS_KEY, THRESHOLDS_KEY


@dataclass(frozen=True)
class SequentialSettings:
    alpha: float = SEQUENTIAL_ALPHA.default  # the error rate of each case's early verdict
    min_samples: int = SEQUENTIAL_MIN.default

    def describe(self) -> dict[str, float | int]:
        return {"alpha": self.alpha, "min_samples": self.min_samples}


SEQUENTIAL_KEY = pytest.StashKey[SequentialSettings | None]()


def pytest_addoption(parser: pytest.Parser) -> None:
    g = parser.getgroup("ctxgate-sequential", "ctxgate --sequential: stop a case once its verdict is certain")
    for option in SEQUENTIAL_OPTIONS:
        option.add_to(g)


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    config.stash[SEQUENTIAL_KEY] = settings = read(config)
    thresholds = config.stash.get(THRESHOLDS_KEY, None)
    if settings is None or config.stash[SETTINGS_KEY].model is None or thresholds is None:
        return
    if thresholds.min_effective_length:
        raise pytest.UsageError(
            f"--sequential cannot check min_effective_length ({thresholds.path}): the effective length averages "
            "RULER's tasks, and an average of means that stopped early is biased, with no guarantee. Drop "
            "--sequential, or pass --thresholds with a file whose [session] min_effective_length is 0"
        )


def read(config: pytest.Config) -> SequentialSettings | None:
    if not config.getoption("--sequential"):
        return None
    alpha, minimum = config.getoption("--sequential-alpha"), config.getoption("--sequential-min")
    if problem := sequential_problem(alpha, minimum):
        raise pytest.UsageError(problem)
    return SequentialSettings(alpha, minimum)
