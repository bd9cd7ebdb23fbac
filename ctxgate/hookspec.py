"""The spine's hook points: the one place where an extra (``ctxgate/ext/``, or any package's
``ctxgate`` entry point) reaches the run. Each hook's one line says what the spine asks for and
when; ``hooks.py`` registers the extras and calls them. The types named in the docstrings live on
higher floors, so the annotations here stay ``Any``: this module imports nothing of ctxgate.

The order of a run: options (``ctxgate_option_groups``), plan (``ctxgate_model_section``, the
checkpoint located with ``ctxgate_checkpoint_kinds``, then ``ctxgate_plan_section`` and
``ctxgate_places_replicas``), model (``ctxgate_model_slots``, ``ctxgate_open_backend``,
``ctxgate_reading``), cases (``ctxgate_task_modules``, ``ctxgate_case_stop``,
``ctxgate_cases_ahead``), report (``ctxgate_report_fields``, then each form's lines). An extra's
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
def ctxgate_threshold_tables() -> Any:
    """The extra's tables of thresholds.toml: a tree as ``gate.thresholds_schema.SCHEMA``'s, each
    leaf setting a dotted key of ``Thresholds.extras``."""


@hookspec
def ctxgate_positions(spec: Any) -> Any:
    """Positions a case needs past its length (a thought's budget), for the engines sized before
    the model opens."""


@hookspec(firstresult=True)
def ctxgate_places_replicas(spec: Any) -> Any:
    """Why the run stays in this one pytest process, where the backend the extra opens for
    ``spec`` (``ctxgate_open_backend``) places replicas of the model itself: ``-n`` is refused
    with it (``"{why}: drop -n"``), the session starts no vLLM server (each replica starts its
    own from ``Served.launch``) and runs the cases longest first. None: the spine places it."""


@hookspec(firstresult=True)
def ctxgate_model_slots(spec: Any) -> Any:
    """How many copies of the model the extra's backend holds for ``spec``: ``ctxgate bisect``
    probes that many checkpoints side by side, each round. None: one."""


@hookspec(firstresult=True)
def ctxgate_open_backend(spec: Any, served: Any, replicas: Any) -> Any:
    """The backend for ``spec`` (sending to ``served``; at most ``replicas`` copies of the model,
    None: as many as it has room for), opened by the extra instead of the spine's
    ``load_backend``; None: the spine loads it."""


@hookspec
def ctxgate_backend_facts(spec: Any, backend: Any) -> Any:
    """What the extra asks of a backend where it was loaded (a mapping of a question to its
    answer): a cluster's replica answers for its own backend, and the session reads them."""


@hookspec(firstresult=True)
def ctxgate_reading(spec: Any, backend: Any) -> Any:
    """How the model's output is read before it is scored (``run.case.Reading``), asked once the
    backend is open and before the prompts' encoder is made; None: as it came."""


@hookspec
def ctxgate_run_keys() -> Any:
    """``gate.baseline.RunKey``s: settings of the run's record a baseline must share."""


@hookspec
def ctxgate_run_fields(plan: Any) -> Any:
    """Fields the extra adds to the run's record (``RunInfo``), from the plan."""


@hookspec(firstresult=True)
def ctxgate_case_stop(plan: Any, floor: Any, baseline: Any, tolerance: Any) -> Any:
    """How a case may stop once its verdict is certain (``run.case.EarlyStop``), given its gate's
    questions: its ``floor`` (a fraction, or None), the ``baseline``'s scores by sample (or None)
    and the drop it tolerates (a fraction); None: the case runs its full count."""


@hookspec(firstresult=True)
def ctxgate_cases_ahead(plan: Any, keys: Any, runner: Any, runs: Any) -> Any:
    """What runs the selected cases (``keys``, in order) ahead of their items in place of the
    spine's own: an object with ``key in it`` and ``take(key)`` (and ``verdicts``, a summary's
    per length), through ``runner`` (``run.case.Runner``); ``runs(task, length)``: whether a case
    still runs. None: the spine decides."""


@hookspec(firstresult=True)
def ctxgate_case_fault(record: Any) -> Any:
    """``gate.verdicts.Fault``: why the extra's own rule fails a scored case; None: it does not."""


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
def ctxgate_report_notes(report: Any) -> Any:
    """Lines among the report's notes, after its cost line (terminal and Markdown alike)."""


@hookspec
def ctxgate_report_facts(report: Any) -> Any:
    """``(label, text)`` pairs among the run's facts the HTML report lists, after its cost."""


@hookspec
def ctxgate_report_tables(report: Any) -> Any:
    """``(header, rows)`` tables after the report's own, in the terminal and the Markdown."""


@hookspec
def ctxgate_junit_properties(report: Any) -> Any:
    """``(name, value)`` properties of the junit file's ``<testsuite>``, after the summaries'."""


@hookspec
def ctxgate_terminal_lines(report: Any) -> Any:
    """Lines after the terminal's tables and notes."""


@hookspec
def ctxgate_markdown_lines(report: Any) -> Any:
    """Lines after the Markdown report's tables and notes."""
