"""The families' tasks, metrics and data files, as the spine's registries take them."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ctxgate.hookspec import hookimpl

if TYPE_CHECKING:
    from ctxgate.metrics.registry import Metric
    from ctxgate.sources.files import DataFile


@hookimpl
def ctxgate_task_modules() -> list[str]:
    return [f"{__package__}.{name}" for name in ("mrcr", "babilong", "nolima")]


@hookimpl
def ctxgate_metrics() -> list[Metric]:
    from .metrics import BABILONG_MATCH, MRCR_RATIO, NOLIMA_CONTAINS, NOLIMA_ONE_NAME

    return [NOLIMA_ONE_NAME, NOLIMA_CONTAINS, BABILONG_MATCH, MRCR_RATIO]


@hookimpl
def ctxgate_data_files() -> list[DataFile]:
    from . import babilong_files, mrcr_files, nolima_files

    return [f for reader in (babilong_files, mrcr_files, nolima_files) for f in reader.DATA_FILES]
