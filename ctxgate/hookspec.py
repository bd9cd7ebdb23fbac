"""The spine's hooks: where an extra (``ctxgate/ext/``, or another package's ``ctxgate`` entry
point) reaches the run, grouped by the run's phases as pytest's ``_pytest/hookspec.py`` is:
what an extra adds, the plan, the model, the cases, the verdict and the report. ``hooks.py``
registers the extras and calls them, always by keyword; an extra marks its answers with
``hookimpl`` (``ctxgate.api.hookimpl``). The types named here are imported for the type checker
only, so this module imports nothing of ctxgate when it runs.

Where one answer decides (the backend that places the model, how a case stops, what runs the
cases ahead of their items, the changes to the model's config), every extra is still asked, and two
answers are refused in one line naming both (``hooks.one_answer``): a second extra's answer is
never silently dropped. Fault checks, readers of the output and report sections are collected.
An extra may declare hooks of its own for other extras to answer (``hooks.add_hookspecs``, as
xdist's ``newhooks.py``); the trackers extra declares ``ctxgate_tracker_kinds``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

import pluggy

if TYPE_CHECKING:
    import pytest

    from ctxgate.backends.base import Backend
    from ctxgate.backends.formats import CheckpointKind
    from ctxgate.backends.model_config import ConfigChanges
    from ctxgate.gate.baseline import Baseline
    from ctxgate.gate.plan import Plan
    from ctxgate.gate.thresholds_schema import ExtraTable
    from ctxgate.gate.verdicts import Fault
    from ctxgate.metrics.registry import Metric
    from ctxgate.records.case import CaseRecord, Prediction
    from ctxgate.records.io import Beside
    from ctxgate.records.schema import Report, ReportSection
    from ctxgate.records.slots import Slot
    from ctxgate.run.case import Ahead, EarlyStop, Reading, Runner
    from ctxgate.run.flags import Get, OptionGroup
    from ctxgate.run.loading import ModelSpec, Placement
    from ctxgate.run.progress import Progress
    from ctxgate.sources.files import DataFile

PROJECT = "ctxgate"
hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)  # what an extra marks its hooks with


# --- What an extra adds: asked once per process, its answers listed in the extras' order ---------


@hookspec
def ctxgate_option_groups() -> Sequence[OptionGroup]:
    """The extra's options, as groups of the option table: pytest shows each group under its name;
    a group that ``evaluates`` is also taken by the verbs that evaluate a checkpoint outside
    pytest (``ctxgate bisect``). The extra reads its options back in ``ctxgate_model_section`` or
    ``ctxgate_plan_section``."""


@hookspec
def ctxgate_verbs() -> Sequence[ModuleType]:
    """The extra's ``ctxgate`` verbs: modules with ``add_parser(sub)``, listed after the spine's
    (``ctxgate --help`` lists them)."""


@hookspec
def ctxgate_threshold_tables() -> Sequence[ExtraTable]:
    """The extra's tables of thresholds.toml: each its keys (a tree as
    ``gate.thresholds_schema.SCHEMA``'s, each leaf setting a dotted key of ``Thresholds.extras``)
    and the commented text ``ctxgate init`` writes for it. A table no installed package declares
    is refused, naming the extras installed."""


@hookspec
def ctxgate_task_modules() -> Sequence[str]:
    """The extra's task modules, by import name: the task registry imports them after the spine's,
    and each registers its tasks (``api.register``) and its suite's label
    (``api.register_suite``)."""


@hookspec
def ctxgate_metrics() -> Sequence[Metric]:
    """The extra's metrics, named by its tasks' specs and by ``ctxgate rescore --metric``."""


@hookspec
def ctxgate_data_files() -> Sequence[DataFile]:
    """The extra's data files: what ``ctxgate data verify`` checks that its tasks read."""


@hookspec
def ctxgate_checkpoint_kinds() -> Sequence[CheckpointKind]:
    """The kinds of checkpoint folder the extra adds to the Hugging Face folder, asked wherever a
    folder's kind decides (locating ``--model``, what a training run's folders hold)."""


@hookspec
def ctxgate_slots() -> Sequence[Slot]:
    """The extra's slots in the records: a name in the ``extras`` of the run's record, a case's
    record or the report, with the frozen dataclass its data is read back into. A report written
    with the extra present keeps the slot's data as plain JSON where it is absent."""


# --- The plan: made once from the options, by pytest and ``ctxgate bisect`` alike ---------------


@hookspec
def ctxgate_model_section(get: Get) -> tuple[str, object] | None:
    """The extra's part of how the model opens, read before ``--model`` is located (a checkpoint
    kind reads it from ``ModelSpec.extras``).

    :param get: an option's value as given, by its ``dest``.
    :return: ``(name, section)``, a frozen section read once from the extra's options; None:
        nothing to add."""


@hookspec
def ctxgate_plan_section(get: Get, plan: Plan) -> tuple[str, object] | None:
    """The extra's frozen section of the run's plan (``plan.extras[name]``), read once from its
    options and checked against the spine's part of the plan (a refusal is an ``OptionError``).

    :param get: an option's value as given, by its ``dest``.
    :param plan: the plan as the spine made it, with the extras' model sections."""


@hookspec
def ctxgate_task_budgets(plan: Plan) -> Mapping[str, int]:
    """Generation budgets this run gives tasks in place of their specs' ``tokens_to_generate``
    (an extra's option, such as a benchmark's own budget turned down for a small model); the
    extra records the option in its run slot, so that a baseline with another is refused.

    :param plan: the plan, every extra's section in it.
    :return: a budget (1 or more tokens) by task name."""


@hookspec
def ctxgate_plan_lines(plan: Plan) -> Sequence[str]:
    """What the extra will do in this run, in lines for pytest's header, after the spine's.

    :param plan: the run's plan, every extra's section in it."""


@hookspec
def ctxgate_run_plugin(plan: Plan, config: pytest.Config) -> object | None:
    """The extra's plugin for one pytest run, made once the plan is: registered with pytest's
    plugin manager (its ``pytest_*`` hooks: collection order, the terminal) and with ctxgate's
    (its ``ctxgate_*`` hooks: ``ctxgate_left_out``, ``ctxgate_case_done``, ``ctxgate_progress``,
    ``ctxgate_decided_lengths``), and unregistered at the run's end; the state of one run lives on
    it. A refusal (``CtxgateError``) ends the run as pytest's one ``ERROR:`` line.

    :param plan: the run's plan.
    :param config: pytest's config, on the controller and on each xdist worker alike."""


# --- The model: opened once per process (an xdist worker, a cluster's replica, a bisect probe) ---


@hookspec
def ctxgate_config_changes(spec: ModelSpec, config_dir: Path) -> ConfigChanges | None:
    """What the extra changes in the model's config.json, checked against it, and the window the
    changed config covers; asked when the plan is made and wherever the config is read to load or
    serve the model. One extra at most may answer.

    :param spec: what to evaluate (``spec.extras``: the extras' sections).
    :param config_dir: the folder of the config.json to change."""


@hookspec
def ctxgate_model_changes(spec: ModelSpec) -> Mapping[str, object]:
    """What the extra changes in the model past its checkpoint's files, as asked (JSON values;
    empty: nothing): added to the checkpoint's fingerprint, so to the cache's namespace, and
    recorded as the run's ``model_overrides``.

    :param spec: what to evaluate."""


@hookspec
def ctxgate_placement(spec: ModelSpec) -> Placement | None:
    """A backend the extra opens in place of the spine's, placing the model's replicas itself (a
    cluster's): why the run then stays in one pytest process, how many copies it holds, and how to
    open it. One extra at most may answer.

    :param spec: what to evaluate."""


@hookspec
def ctxgate_reading(spec: ModelSpec, backend: Backend) -> Reading | None:
    """How the extra reads the model's output before it is scored (a reasoning model's thought
    split off, its budget held), asked once the backend is open and before the prompts' encoder is
    made. Every answer reads, in the extras' order (``run.case.Readings``).

    :param spec: what to evaluate.
    :param backend: the open backend."""


# --- The cases ----------------------------------------------------------------------------------


@hookspec
def ctxgate_case_stop(
    plan: Plan, floor: float | None, baseline: Mapping[int, float] | None, tolerance: float
) -> EarlyStop | None:
    """How a case may stop once its verdict is certain. One extra at most may answer; None: the
    case runs its full count.

    :param plan: the run's plan.
    :param floor: the case's floor, a fraction; None: it has none.
    :param baseline: the baseline's score of each sample, by index; None: no baseline case.
    :param tolerance: the drop against the baseline the case tolerates, a fraction."""


@hookspec
def ctxgate_cases_ahead(
    plan: Plan, keys: Sequence[tuple[str, int]], runner: Runner
) -> Ahead | None:
    """What runs the selected cases ahead of their items, in place of the spine's own. One extra at
    most may answer.

    :param plan: the run's plan.
    :param keys: the cases that will run, (task, length), in their items' order.
    :param runner: how the session opens a case and scores what was drawn."""


@hookspec
def ctxgate_left_out(task: str, length: int) -> str | None:
    """Why the extra leaves a selected case out as the run goes (a run plugin's answer): the case
    is skipped with this line and its samples counted as saved; None: it runs. A case a floor or a
    baseline score expects is the extra's to keep.

    :param task: the case's task.
    :param length: the case's length."""


@hookspec
def ctxgate_progress(progress: Progress) -> None:
    """Where a running case stands, after each of its samples and once when it is over
    (``progress.over``); a run plugin's, on the process that runs the case.

    :param progress: the case's progress."""


@hookspec
def ctxgate_case_done(record: CaseRecord) -> None:
    """A case's record once its item has finished, on the process that ran it (a run plugin's).

    :param record: the case's record, verdict included."""


# --- The verdict --------------------------------------------------------------------------------


@hookspec
def ctxgate_case_fault(record: CaseRecord) -> Fault | None:
    """Why the extra's own rule fails a scored case; every extra's fault is listed.

    :param record: the case's record, scored."""


@hookspec
def ctxgate_decided_lengths() -> Mapping[int, bool] | None:
    """The lengths whose RULER average the extra's own test decided before every case there ran
    (a run plugin's): the effective length takes each as passing or failing.
    """


# --- The report ---------------------------------------------------------------------------------


@hookspec
def ctxgate_run_record(plan: Plan) -> Mapping[str, object]:
    """The extra's slots of the run's record (``RunInfo.extras``), from the plan, by slot name. A
    slot whose ``baseline`` names the options it records must hold the same value in a
    ``--baseline`` run: another is refused before anything runs.

    :param plan: the run's plan."""


@hookspec
def ctxgate_report_record(report: Report, plan: Plan) -> Mapping[str, object]:
    """The extra's slots of the finished report (``Report.extras``), by slot name.

    :param report: the report as the spine made it.
    :param plan: the run's plan."""


@hookspec
def ctxgate_report_sections(report: Report) -> Sequence[ReportSection]:
    """The extra's sections of the report: lines, a table and named values, which the terminal,
    the Markdown and HTML reports and the junit file each render, and which the report's JSON
    keeps (``Report.sections``), so a report read back without the extra still shows them.

    :param report: the report, every slot filled."""


@hookspec
def ctxgate_report_files(
    report: Report, predictions: Sequence[Prediction], path: Path, baseline: Baseline | None
) -> Sequence[Beside]:
    """Files the extra writes beside the report, in the same atomic write.

    :param report: the finished report.
    :param predictions: its ``.predictions.jsonl`` rows.
    :param path: where the report is written.
    :param baseline: the ``--baseline`` run, or None."""


@hookspec
def ctxgate_report_done(report: Report, path: Path | None, plan: Plan) -> Sequence[str]:
    """Notes on what the extra did with the finished report, once it is written, on the
    controller (a tracker logs it).

    :param report: the finished report.
    :param path: the report file, or None without ``--report``.
    :param plan: the run's plan."""
