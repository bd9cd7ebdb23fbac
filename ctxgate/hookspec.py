"""The spine's hook points: the one place where an extra (``ctxgate/ext/``, or any package's
``ctxgate`` entry point) reaches the run. Each hook's one line says what the spine asks for and
when; ``hooks.py`` registers the extras and calls them. The types named in the docstrings live on
higher floors, so the annotations here stay ``Any``: this module imports nothing of ctxgate.

The order of a run: options (``ctxgate_option_groups``), plan (``ctxgate_model_section``, the
checkpoint located with ``ctxgate_checkpoint_kinds``, then ``ctxgate_plan_section``), model
(``ctxgate_open_backend``, ``ctxgate_wrap_backend``), cases
(``ctxgate_task_modules``), report (``ctxgate_report_fields``, then each form's lines). An extra's
results are listed in the order ``ctxgate/ext/__init__.py`` states."""

from __future__ import annotations

from typing import Any

import pluggy

PROJECT = "ctxgate"
hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)  # what an extra marks its hooks with


@hookspec
def ctxgate_option_groups() -> Any:
    """The extra's rows of the option table: ``run.options.OptionGroup``s, each a pytest group
    and the options the plan reads in ``ctxgate_plan_section``."""


@hookspec
def ctxgate_verbs() -> Any:
    """The extra's ``ctxgate`` verbs: modules with ``add_parser(sub)``, listed after the spine's."""


@hookspec
def ctxgate_pytest_plugins() -> Any:
    """Module names of the extra's pytest plugins, registered beside ``ctxgate_plugins``."""


@hookspec
def ctxgate_task_modules() -> Any:
    """Names of the extra's task modules, imported by the task registry after the spine's: each
    registers its tasks as a spine module does (``tasks/registration.py``)."""


@hookspec
def ctxgate_metrics() -> Any:
    """The extra's ``metrics.registry.Metric``s, named by its tasks and by ``ctxgate score``."""


@hookspec
def ctxgate_data_files() -> Any:
    """The extra's ``sources.files.DataFile``s: what ``ctxgate data verify`` checks it reads."""


@hookspec
def ctxgate_model_section(get: Any) -> Any:
    """``(name, section)``: the extra's frozen part of how the model opens, read once from its
    options (``get(dest)``) before ``--model`` is located; it lands in ``ModelSpec.extras`` (where
    a checkpoint kind reads it) and ``Plan.extras``. None: the extra has nothing to add."""


@hookspec
def ctxgate_checkpoint_kinds() -> Any:
    """``backends.formats.CheckpointKind``s: the kinds of checkpoint folder the extra claims and
    locates besides the Hugging Face folder, asked wherever a folder's kind decides (locating
    ``--model``, what a training run's folders hold)."""


@hookspec
def ctxgate_plan_section(get: Any, plan: Any) -> Any:
    """``(name, section)``: the extra's frozen part of the run's plan, read once from its options
    (``get(dest)``) and checked against the spine's ``plan``; None: the extra has nothing to add."""


@hookspec
def ctxgate_report_header(plan: Any) -> Any:
    """Lines for pytest's header: what the extra will do in this run."""


@hookspec
def ctxgate_report_fields(report: Any, plan: Any) -> Any:
    """Fields of the finished ``Report`` the extra fills (a mapping of field to value)."""


@hookspec
def ctxgate_report_files(report: Any, predictions: Any, path: Any, baseline: Any) -> Any:
    """``records.io.Beside``s: files the extra writes beside the report at ``path`` (with its
    ``predictions`` rows; ``baseline``: the ``--baseline`` run, or None), in the same atomic
    write."""


@hookspec
def ctxgate_report_done(report: Any, path: Any, plan: Any) -> Any:
    """Notes, once the run's report is made and written (``path``: the report file, or None
    without ``--report``): what the extra did with it (a tracker logged it). On the controller."""


@hookspec
def ctxgate_terminal_lines(report: Any) -> Any:
    """Lines after the terminal's tables and notes."""


@hookspec
def ctxgate_markdown_lines(report: Any) -> Any:
    """Lines after the Markdown report's tables and notes."""
