"""ctxgate's public face: everything an extra (``ctxgate/ext/<name>/``) or another package's plugin
may use, named once here, as ``pytest`` re-exports ``_pytest``. An extra imports ctxgate only from
this module (``tests/test_contract.py`` holds every extra and the outside example to it); the
modules behind it are the spine's own, free to move. docs/extending.md walks through writing a task
family on it, and docs/architecture.md lists the hooks by the run's phases."""

from ctxgate.backends.base import (
    TOKENS_IN_FLIGHT,
    Backend,
    BackendDown,
    Generation,
    GenerationParams,
    Request,
    Window,
    Withdrawn,
    own_thinking_budget,
    takes_messages,
    window_of,
)
from ctxgate.backends.checkpoint import (
    TOKENIZER_FILES,
    CheckpointError,
    ModelNotFound,
    check_checkpoint,
    check_json_files,
    check_safetensors,
    check_tokenizer,
    read_json,
    resolve_model,
    tokenizer_files,
)
from ctxgate.backends.fingerprint import checkpoint_fingerprint, file_digest
from ctxgate.backends.formats import (
    Checkpoint,
    CheckpointKind,
    Opening,
    WrongFlag,
    checkpoint_kinds,
    has_hf_weights,
)
from ctxgate.backends.formats import written as checkpoint_written
from ctxgate.backends.hf import BackendError
from ctxgate.backends.model_config import ConfigChanges, rope_key
from ctxgate.backends.model_config import window as config_window
from ctxgate.backends.vllm_server import VLLMServer
from ctxgate.data.haystacks import EssayTokens, HaystackError, essay_tokens, load_essay
from ctxgate.data.words import nouns
from ctxgate.gate.baseline import Baseline, comparison_entry, regression_verdict
from ctxgate.gate.baseline import describe as describe_comparison
from ctxgate.gate.plan import Plan, case_stop, make_plan, run_record, task_for
from ctxgate.gate.session import relative_lengths, summarize, summary_inputs
from ctxgate.gate.thresholds import Thresholds, thresholds_here
from ctxgate.gate.thresholds_schema import ExtraTable
from ctxgate.gate.thresholds_schema import number as threshold_number
from ctxgate.gate.verdicts import Fault, score_expected
from ctxgate.hooks import flat, hook, installed
from ctxgate.hookspec import hookimpl, hookspec
from ctxgate.lengths import format_length, parse_length
from ctxgate.memo import memo
from ctxgate.metrics.registry import Metric, Scored
from ctxgate.records.case import (
    CaseRecord,
    Prediction,
    QuestionTest,
    SampleOutcome,
    StopRecord,
    ThinkingRecord,
)
from ctxgate.records.cost import Cost
from ctxgate.records.io import (
    Beside,
    ReportFileError,
    atomic_write,
    atomic_write_all,
    predictions_path,
    read_predictions,
    read_report,
    report_text,
)
from ctxgate.records.schema import Report, ReportSection, to_json
from ctxgate.records.slots import Slot
from ctxgate.records.summary import EffectiveLength, GroupScore
from ctxgate.records.vocabulary import ThoughtEnd
from ctxgate.refusal import CtxgateError, Refusal, Unreachable
from ctxgate.report.tables import (
    COST_NOTE,
    chances,
    cost_line,
    cost_rows,
    effective_lengths,
    in_registry_order,
    md_row,
    no_score_word,
)
from ctxgate.retrying import Refused
from ctxgate.run.case import Ahead, CaseResult, Drawing, EarlyStop, Runner, drive, run_case
from ctxgate.run.compose import load_model
from ctxgate.run.facts import resolve_chat, task_samples
from ctxgate.run.flags import (
    Get,
    Option,
    OptionError,
    OptionGroup,
    extra_groups,
    not_negative,
    positive,
    whole,
)
from ctxgate.run.flags import read as read_options
from ctxgate.run.loading import (
    ModelError,
    ModelSpec,
    Placement,
    Served,
    config_changes,
    load_backend,
    model_changes,
    placement,
)
from ctxgate.run.options import BASELINE, EVALUATION, REASONING, THINKING_MODES, THRESHOLDS
from ctxgate.run.progress import Progress, case_label, case_of
from ctxgate.run.reading import Reading
from ctxgate.run.sections import Section
from ctxgate.seeding import seeded_order
from ctxgate.sources.door import check as check_data_file
from ctxgate.sources.door import json_document, json_field
from ctxgate.sources.errors import DataNotGiven, DataUnavailable
from ctxgate.sources.files import (
    DataFile,
    go_offline,
    iter_rows,
    load_rows,
    missing_fields,
    open_table,
    sha256_of,
    sha256_of_files,
    unreadable,
)
from ctxgate.sources.helmet_files import order as helmet_order
from ctxgate.stats.intervals import z_value
from ctxgate.stats.paired import PairedResult
from ctxgate.stats.paired import compare as paired_compare
from ctxgate.steps import step_in_name, training_step, zero_latest
from ctxgate.tasks.bands import Bands, Chance
from ctxgate.tasks.base import (
    BuildContext,
    Builder,
    Frame,
    Job,
    Prompt,
    Sample,
    TaskSpec,
    TaskTooShort,
    distinct,
)
from ctxgate.tasks.build import fits_at_all
from ctxgate.tasks.helmet_compat import COMPAT_TASKS
from ctxgate.tasks.niah import DEPTHS
from ctxgate.tasks.registration import register, register_all, register_suite
from ctxgate.tasks.registry import (
    Membership,
    UnknownTask,
    all_tasks,
    category_label,
    get_task,
    membership,
    suite_label,
    task_names,
)
from ctxgate.tokens.chat import ChatTemplateError, ChatTurns
from ctxgate.tokens.codec import PieceEncoder
from ctxgate.tokens.tokenizers import (
    HFTokenizer,
    RawTokenizer,
    model_template,
    render,
    set_template_kwargs,
    vocabulary,
)
from ctxgate.values import did_you_mean, is_finite, is_number, is_whole
from ctxgate.workflows.diff import diff_reports
from ctxgate.workflows.trend import CATEGORIES, FIELDS, load_points

__all__ = [
    "Ahead",
    "all_tasks",
    "atomic_write",
    "atomic_write_all",
    "Backend",
    "BackendDown",
    "BackendError",
    "Bands",
    "BASELINE",
    "Baseline",
    "Beside",
    "BuildContext",
    "Builder",
    "case_label",
    "case_of",
    "case_stop",
    "CaseRecord",
    "CaseResult",
    "CATEGORIES",
    "category_label",
    "Chance",
    "chances",
    "ChatTemplateError",
    "ChatTurns",
    "check_checkpoint",
    "check_data_file",
    "check_json_files",
    "check_safetensors",
    "check_tokenizer",
    "Checkpoint",
    "checkpoint_fingerprint",
    "checkpoint_kinds",
    "checkpoint_written",
    "CheckpointError",
    "CheckpointKind",
    "comparison_entry",
    "COMPAT_TASKS",
    "config_changes",
    "config_window",
    "ConfigChanges",
    "Cost",
    "cost_line",
    "COST_NOTE",
    "cost_rows",
    "CtxgateError",
    "DataFile",
    "DataNotGiven",
    "DataUnavailable",
    "DEPTHS",
    "describe_comparison",
    "did_you_mean",
    "diff_reports",
    "distinct",
    "Drawing",
    "drive",
    "EarlyStop",
    "effective_lengths",
    "EffectiveLength",
    "essay_tokens",
    "EssayTokens",
    "EVALUATION",
    "extra_groups",
    "ExtraTable",
    "Fault",
    "FIELDS",
    "file_digest",
    "fits_at_all",
    "flat",
    "format_length",
    "Frame",
    "Generation",
    "GenerationParams",
    "Get",
    "get_task",
    "go_offline",
    "open_table",
    "GroupScore",
    "has_hf_weights",
    "HaystackError",
    "helmet_order",
    "HFTokenizer",
    "hook",
    "hookimpl",
    "hookspec",
    "in_registry_order",
    "installed",
    "is_finite",
    "is_number",
    "is_whole",
    "Job",
    "json_document",
    "json_field",
    "load_backend",
    "load_essay",
    "load_model",
    "load_points",
    "iter_rows",
    "load_rows",
    "make_plan",
    "md_row",
    "Membership",
    "membership",
    "memo",
    "model_template",
    "Metric",
    "missing_fields",
    "model_changes",
    "ModelError",
    "ModelNotFound",
    "ModelSpec",
    "no_score_word",
    "not_negative",
    "nouns",
    "Opening",
    "Option",
    "OptionError",
    "OptionGroup",
    "own_thinking_budget",
    "paired_compare",
    "PairedResult",
    "parse_length",
    "PieceEncoder",
    "Placement",
    "placement",
    "Plan",
    "positive",
    "Prediction",
    "predictions_path",
    "Progress",
    "Prompt",
    "QuestionTest",
    "RawTokenizer",
    "read_json",
    "read_options",
    "read_predictions",
    "read_report",
    "Reading",
    "REASONING",
    "Refusal",
    "Refused",
    "register",
    "register_all",
    "register_suite",
    "regression_verdict",
    "relative_lengths",
    "render",
    "Report",
    "report_text",
    "ReportFileError",
    "ReportSection",
    "Request",
    "resolve_chat",
    "resolve_model",
    "rope_key",
    "run_case",
    "run_record",
    "Runner",
    "Sample",
    "SampleOutcome",
    "score_expected",
    "Scored",
    "seeded_order",
    "set_template_kwargs",
    "StopRecord",
    "Served",
    "sha256_of",
    "sha256_of_files",
    "Section",
    "Slot",
    "step_in_name",
    "suite_label",
    "summarize",
    "summary_inputs",
    "task_names",
    "takes_messages",
    "task_for",
    "task_samples",
    "TaskSpec",
    "TaskTooShort",
    "ThinkingRecord",
    "ThoughtEnd",
    "threshold_number",
    "THRESHOLDS",
    "THINKING_MODES",
    "Thresholds",
    "thresholds_here",
    "to_json",
    "TOKENIZER_FILES",
    "tokenizer_files",
    "TOKENS_IN_FLIGHT",
    "training_step",
    "UnknownTask",
    "Unreachable",
    "unreadable",
    "vocabulary",
    "VLLMServer",
    "whole",
    "Window",
    "window_of",
    "Withdrawn",
    "WrongFlag",
    "z_value",
    "zero_latest",
]
