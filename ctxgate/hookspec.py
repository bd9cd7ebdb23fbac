"""The spine's hook points: the one place where an extra (``ctxgate/ext/``, or any package's
``ctxgate`` entry point) reaches the run. Each hook's one line says what the spine asks for and
when; ``hooks.py`` registers the extras and calls them. The types named in the docstrings live on
higher floors, so the annotations here stay ``Any``: this module imports nothing of ctxgate.

The order of a run: options (``ctxgate_option_groups``), plan (``ctxgate_model_section``, the
checkpoint located with ``ctxgate_checkpoint_kinds``, its config's changes checked with
``ctxgate_config_changes``, then ``ctxgate_plan_section`` and ``ctxgate_places_replicas``), model
(``ctxgate_model_slots``, ``ctxgate_open_backend``, ``ctxgate_config_changes`` and
``ctxgate_model_changes``, ``ctxgate_reading``), cases (``ctxgate_task_modules``,
``ctxgate_case_stop``, ``ctxgate_cases_ahead``), report (``ctxgate_report_fields``, then each form's
lines). An extra's results are listed in the order ``ctxgate/ext/__init__.py`` states."""

from __future__ import annotations

from typing import Any

import pluggy

PROJECT = "ctxgate"
hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)  # what an extra marks its hooks with


@hookspec
def ctxgate_option_groups() -> Any:
    """The extra's rows of the option table. Each a ``run.options.OptionGroup``: a pytest group and
    the options the extra reads in ``ctxgate_model_section`` or ``ctxgate_plan_section``."""


@hookspec
def ctxgate_verbs() -> Any:
    """The extra's ``ctxgate`` verbs. Modules with ``add_parser(sub)``, listed after the spine's."""


@hookspec
def ctxgate_pytest_plugins() -> Any:
    """The extra's pytest plugins. Module names, registered after ``ctxgate_plugins``' own."""


@hookspec
def ctxgate_task_modules() -> Any:
    """The extra's task modules. Names the task registry imports after the spine's: each registers
    its tasks as a spine module does (``tasks/registration.py``)."""


@hookspec
def ctxgate_metrics() -> Any:
    """The extra's metrics. ``metrics.registry.Metric``s, named by its tasks and by ``ctxgate
    score``."""


@hookspec
def ctxgate_data_files() -> Any:
    """The extra's data files. ``sources.files.DataFile``s: what ``ctxgate data verify`` checks it
    reads."""


@hookspec
def ctxgate_model_section(get: Any) -> Any:
    """The extra's part of how the model opens, read before ``--model`` is located. ``(name,
    section)``: a frozen section read once from its options (``get(dest)``); it lands in
    ``ModelSpec.extras`` (where a checkpoint kind reads it) and ``Plan.extras``. None: nothing to
    add."""


@hookspec
def ctxgate_checkpoint_kinds() -> Any:
    """The kinds of checkpoint folder the extra adds to the Hugging Face folder.
    ``backends.formats.CheckpointKind``s, asked wherever a folder's kind decides (locating
    ``--model``, what a training run's folders hold)."""


@hookspec(firstresult=True)
def ctxgate_config_changes(spec: Any, config_dir: Any) -> Any:
    """``backends.model_config.ConfigChanges``: what the extra changes in the config.json of
    ``config_dir`` for ``spec``, checked against it, and the window the changed config covers;
    asked when the plan is made (a refusal is a ``CtxgateError``), and where the model's config is
    read to load or serve it. None: the config as it is."""


@hookspec
def ctxgate_model_changes(spec: Any) -> Any:
    """What the extra changes in ``spec``'s model past its checkpoint's files, as asked (a JSON
    mapping; empty: nothing): added to the checkpoint's fingerprint (so to the cache's namespace)
    and recorded as the run's ``model_overrides``."""


@hookspec
def ctxgate_plan_section(get: Any, plan: Any) -> Any:
    """The extra's frozen section of the run's plan. ``(name, section)``, read once from its options
    (``get(dest)``) and checked against the spine's ``plan``; None: nothing to add."""


@hookspec
def ctxgate_threshold_tables() -> Any:
    """The extra's tables of thresholds.toml. A tree as ``gate.thresholds_schema.SCHEMA``'s, each
    leaf setting a dotted key of ``Thresholds.extras``."""


@hookspec
def ctxgate_positions(spec: Any) -> Any:
    """Positions a case needs past its length, for engines sized before the model opens. An int (a
    thought's budget)."""


@hookspec(firstresult=True)
def ctxgate_places_replicas(spec: Any) -> Any:
    """Why the run stays in one pytest process: the extra's backend places the model's replicas. A
    line, for ``spec``'s backend the extra opens (``ctxgate_open_backend``): ``-n`` is refused with
    it (``"{why}: drop -n"``), the session starts no vLLM server (each replica starts its own from
    ``Served.launch``) and runs the cases longest first. None: the spine places it."""


@hookspec(firstresult=True)
def ctxgate_model_slots(spec: Any) -> Any:
    """How many copies of the model the extra's backend holds. ``ctxgate bisect`` probes that many
    checkpoints side by side, each round; None: one."""


@hookspec(firstresult=True)
def ctxgate_open_backend(spec: Any, served: Any, replicas: Any) -> Any:
    """The backend the extra opens instead of the spine's ``load_backend``. For ``spec``, sending
    to ``served``, with at most ``replicas`` copies of the model (None: as many as it has room for);
    None: the spine loads it."""


@hookspec
def ctxgate_backend_facts(spec: Any, backend: Any) -> Any:
    """What the extra asks of a backend where it was loaded. A mapping of a question to its answer:
    a cluster's replica answers for its own backend, and the session reads them."""


@hookspec(firstresult=True)
def ctxgate_reading(spec: Any, backend: Any) -> Any:
    """How the model's output is read before it is scored. A ``run.case.Reading``, asked once the
    backend is open and before the prompts' encoder is made; None: as it came."""


@hookspec
def ctxgate_run_keys() -> Any:
    """Settings of the run's record a baseline must share. ``gate.baseline.RunKey``s."""


@hookspec
def ctxgate_run_fields(plan: Any) -> Any:
    """Fields the extra adds to the run's record. A mapping of ``RunInfo`` fields, from the plan."""


@hookspec(firstresult=True)
def ctxgate_case_stop(plan: Any, floor: Any, baseline: Any, tolerance: Any) -> Any:
    """How a case may stop once its verdict is certain. A ``run.case.EarlyStop``, given the case's
    gate questions: its ``floor`` (a fraction, or None), the ``baseline``'s scores by sample (or
    None) and the drop it tolerates (a fraction); None: the case runs its full count."""


@hookspec(firstresult=True)
def ctxgate_cases_ahead(plan: Any, keys: Any, runner: Any, runs: Any) -> Any:
    """What runs the selected cases ahead of their items, in place of the spine's own. An object
    with ``key in it`` and ``take(key)`` (and ``verdicts``, a summary's per length) over ``keys``
    (in order), through ``runner`` (``run.case.Runner``); ``runs(task, length)``: whether a case
    still runs. None: the spine decides."""


@hookspec(firstresult=True)
def ctxgate_case_fault(record: Any) -> Any:
    """Why the extra's own rule fails a scored case. A ``gate.verdicts.Fault``; None: it does
    not."""


@hookspec
def ctxgate_report_header(plan: Any, place: Any) -> Any:
    """Lines for pytest's header, at ``place``. What the extra will do in this run: "model" (how the
    model is changed, before the thresholds' line) or "run" (after it)."""


@hookspec
def ctxgate_report_fields(report: Any, plan: Any) -> Any:
    """Fields of the finished report the extra fills. A mapping of ``Report`` field to value."""


@hookspec
def ctxgate_report_files(report: Any, predictions: Any, path: Any, baseline: Any) -> Any:
    """Files the extra writes beside the report, in the same atomic write. ``records.io.Beside``s
    for the report at ``path``, with its ``predictions`` rows and the ``--baseline`` run (or
    None)."""


@hookspec
def ctxgate_report_done(report: Any, path: Any, plan: Any) -> Any:
    """Notes on what the extra did with the finished report. Once the report is made and written
    (``path``: the report file, or None without ``--report``), on the controller: a tracker logs
    it."""


@hookspec
def ctxgate_report_notes(report: Any, place: Any) -> Any:
    """Lines among the report's notes, at ``place``. In the terminal and the Markdown alike: "run"
    (after the cost line) or "marks" (among what the table's marks mean, before short samples)."""


@hookspec
def ctxgate_report_facts(report: Any) -> Any:
    """Facts the HTML report lists about the run, after its cost. ``(label, text)`` pairs."""


@hookspec
def ctxgate_report_tables(report: Any) -> Any:
    """Tables after the report's own, in the terminal and the Markdown. ``(header, rows)`` pairs."""


@hookspec
def ctxgate_junit_properties(report: Any) -> Any:
    """Properties of the junit file's ``<testsuite>``, after the summaries'. ``(name, value)``
    pairs."""


@hookspec
def ctxgate_terminal_lines(report: Any) -> Any:
    """Lines after the terminal's tables and notes."""


@hookspec
def ctxgate_markdown_lines(report: Any) -> Any:
    """Lines after the Markdown report's tables and notes."""
