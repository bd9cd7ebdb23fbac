"""The HTML report beside every ``--report``, and the ``ctxgate html`` verb."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

from ctxgate.api import Beside, hookimpl, predictions_path, read_predictions, read_report

if TYPE_CHECKING:
    from ctxgate.api import Baseline, Prediction, Report


@hookimpl
def ctxgate_verbs() -> list[ModuleType]:
    from . import verb

    return [verb]


@hookimpl
def ctxgate_report_files(
    report: Report, predictions: list[Prediction], path: Path, baseline: Baseline | None
) -> list[Beside]:
    """The page, or a note: a page that cannot be drawn never costs the JSON."""
    from .page import PageInput, render

    html = path.with_suffix(".html")
    try:
        baseline_rows: list[Prediction] = []
        if baseline is not None:
            base = Path(baseline.path)
            baseline_rows = read_predictions(predictions_path(base, read_report(base)))
        where = baseline.path if baseline else None
        page = render(PageInput(report, predictions, baseline_rows, where, report_name=path.name))
    except Exception as exc:  # noqa: BLE001 - whatever went wrong, the JSON report is written
        note = (
            f"the HTML report was not written ({type(exc).__name__}: {exc}); ctxgate html {path} "
            f"-o {html} draws it from the JSON"
        )
        return [Beside(html, None, note)]
    pointer = (
        f"Heatmaps, needle depths and every sample: `{html.name}`, beside this report (in CI: the "
        "report folder's artifact)."
    )
    return [Beside(html, page, pointer=pointer)]
