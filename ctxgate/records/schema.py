"""The report written by ``--report``, declared once as frozen records: the runner fills them, the
gates, the renderers and every verb that reads a report file read them, and the JSON Schema
(``ctxgate schema``) is derived from them. This module holds the report's root and the run's own
records; a case's are in ``case.py``, the cost's in ``cost.py``, the summaries' and gates' in
``summary.py``, the words they share in ``vocabulary.py``. Bump SCHEMA_VERSION on breaking
changes."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, Literal, TypeVar

from ctxgate.records.case import CaseRecord
from ctxgate.records.cost import RunCost
from ctxgate.records.summary import (
    EffectiveLength,
    Gate,
    GroupScore,
    LongScore,
    Overall,
    RelativeEffectiveLength,
)
from ctxgate.records.vocabulary import DESCRIBED, Json

if TYPE_CHECKING:
    from pydantic import TypeAdapter

SCHEMA_VERSION: Final = 2  # of the report file; readers read 1 (records/migrate.py), refuse others

T = TypeVar("T")


@dataclass(frozen=True)
class BaselineRun:
    """The ``--baseline`` run."""

    path: str
    """The baseline report's path."""
    scored: tuple[str, ...]
    """The ``task-length`` names it scored that this run selected."""
    not_selected: tuple[str, ...] = ()
    """Those it scored that this run did not select: named, not failed."""


@dataclass(frozen=True)
class RunError:
    """What stopped the whole run."""

    message: str
    """What could not be opened or started (the checkpoint, a cluster, a server, the judge): why."""
    checkpoint: bool = True
    """The checkpoint's own files are at fault (watch skips it until they change); false: what
    else the run needs (a Ray cluster, a server, the judge) failed, and a later try may succeed."""


@dataclass(frozen=True)
class RunInfo:
    """What ran: the checkpoint, how it was loaded and prompted, and the selection."""

    model: str
    """``--model`` as given."""
    backend: Json | None
    """The engine: ``backend`` (hf, vllm, openai); for hf its ``device``, ``dtype``,
    ``attn_implementation``, ``batch_size``, ``device_map``, ``devices``, library versions and
    ``cuda_visible_devices``; for a server its ``endpoints``, ``served_model``, ``server_version``,
    ``max_model_len``, ``api`` and ``concurrency``; an adapter's or a sharded checkpoint's format
    and folders."""
    seed: int
    """``--seed``: every sample's random stream derives from it."""
    samples: int | None
    """``--samples``; null: each task's own count."""
    lengths: tuple[int, ...]
    """In tokens."""
    chat_template: Literal["task", "on", "off"]
    """``--chat-template`` as applied (``task``: each paper's policy); no template: ``off``."""
    model_fingerprint: Json | None = None
    """``sha256`` over every checkpoint file the outputs depend on (config, generation config,
    tokenizer, chat template, weights, model code), each hashed whole, and ``file:NAME`` each file's
    digest; with ``--model-override`` or ``--rope-scaling``, ``checkpoint_sha256`` is the
    checkpoint's own and the settings are added."""
    model_dir: str | None = None
    """``--model`` resolved to a local folder, when it is one."""
    base_model: str | None = None
    """A PEFT adapter's base model folder."""
    model_overrides: Json | None = None
    """``--rope-scaling`` and ``--model-override`` as given."""
    ignore_remote_code: bool = False
    """``--ignore-remote-code``: transformers' built-in class replaced the checkpoint's code."""
    weights_mismatch: str | None = None
    """Weights missing, unexpected or misshapen, run anyway (``--allow-weight-mismatch``)."""
    helmet_compat: bool = False
    """``--helmet-compat``: HELMET's long-document and citation prompts and its scoring rules."""
    helmet_length_tokenizer: str | None = None
    """What HELMET's document filter counted in: ``--helmet-tokenizer``, else ``the model's``."""
    chat_template_sha256: str | None = None
    """Of the chat template the prompts used; null when none was."""
    tokenizer_sha256: str | None = None
    """The tokenizer's identity."""
    haystack: str | None = None
    """The essay text: ``ctxgate:haystack_wikipedia`` (shipped) or the ``--haystack`` path."""
    haystack_sha256: str | None = None
    """Of the whitespace-collapsed text."""
    packages: dict[str, str] = field(default_factory=dict)
    """Versions of ctxgate and the libraries the outputs depend on."""
    python: str | None = None
    """The Python version."""
    thinking: Json | None = None
    """A reasoning model's thought (null: the model writes none, and nothing is split): ``mode``
    (``--thinking``), ``budget`` (``--thinking-budget``; null: thought and answer share each task's
    budget), ``budget_by`` (what held the thought to it: ``engine``, the server's own thinking
    budget, or ``forcing``), the ``start`` and ``end`` markers found, ``opened`` and ``closed``
    (its prompt opens the thought, or closes an empty one) and the chat template's
    ``template_kwargs``."""
    judge: Json | None = None
    """The judges: ``llm``, ``entailment``, ``max_failure_rate``."""
    cache: Json | None = None
    """``dir``, ``set_aside`` (broken files moved), ``samples_from_cache``, ``disabled`` (why)."""
    thresholds: str | None = None
    """The thresholds file."""
    data_sha256: str | None = None
    """A hash of every case's ``data_sha256``."""
    extras: dict[str, object] = field(default_factory=dict)
    """The extras' settings, by slot name (``records/slots.py``), such as ``--sequential``'s."""


@dataclass(frozen=True)
class ReportSection:
    """An extra's part of the report, which every form renders: the terminal and the Markdown
    report list its ``lines`` among the notes and draw its ``table`` after the report's own; the
    HTML page shows both under ``title``; the junit file's ``<testsuite>`` gets each of its
    ``properties`` as ``ctxgate.<name>``."""

    extra: str
    """The extra that wrote it."""
    title: str
    """What it is about, in a few words (the HTML page's heading)."""
    lines: tuple[str, ...] = ()
    """Notes, each a sentence or two."""
    table: tuple[tuple[str, ...], ...] = ()
    """A table's header row, then its rows; empty: none."""
    properties: dict[str, str] = field(default_factory=dict)
    """Named values for a CI server (junit), each name under ``ctxgate.``."""


@dataclass(frozen=True)
class Report:
    """The report ``--report`` writes (``run.json``)."""

    __pydantic_config__ = DESCRIBED
    ctxgate_version: str
    """The version of ctxgate that wrote it."""
    created: str
    """UTC time, ISO 8601."""
    complete: bool
    """Every selected case finished (passed, failed, skipped, or waits for a judge); false after an
    error, a crashed worker, an interrupt, or a checkpoint that could not load."""
    run: RunInfo
    """What ran."""
    cases: tuple[CaseRecord, ...]
    """Every selected case."""
    by_length: dict[str, dict[str, GroupScore]]
    """Per length (a key in plain digits, as JSON keys are strings; ``0``: the bare form) the
    summaries that ran: ``ruler``, ``helmet_recall``, ``helmet_rag``, ``helmet_rerank``,
    ``helmet_icl``, ``helmet_longqa``, ``mrcr``, ``babilong``, ``nolima``... A reader refuses any
    other key, naming it."""
    overall: Overall
    """RULER's averages over the lengths."""
    effective_length: EffectiveLength | None
    """RULER's effective length; null when no RULER case ran."""
    gates: tuple[Gate, ...]
    """The gates and their verdicts."""
    relative_effective_length: dict[str, RelativeEffectiveLength] = field(default_factory=dict)
    """Each summary with a base."""
    long_score: dict[str, LongScore] = field(default_factory=dict)
    """Each summary with a full score at some length."""
    schema_version: Literal[2] = SCHEMA_VERSION
    """The report format's version: readers read 1 as 2 (``records/migrate.py``), refuse another."""
    session_complete: bool = True
    """The session itself finished (not interrupted); cases may still lack scores."""
    error: RunError | None = None
    """What stopped the whole run; null when nothing did."""
    baseline: BaselineRun | None = None
    """The ``--baseline`` run, when one was given."""
    predictions: str | None = None
    """The ``.predictions.jsonl`` beside the report, by bare file name."""
    cost: RunCost | None = None
    """What the run cost; null: an older report."""
    sections: tuple[ReportSection, ...] = ()
    """The extras' parts of every report form (``hookspec.ctxgate_report_sections``), as each
    form renders them."""
    extras: dict[str, object] = field(default_factory=dict)
    """The extras' data, by slot name (``records/slots.py``): ``search`` (how
    ``--search-effective-length`` ran the lengths), ``reference`` (the papers' published
    numbers)..."""

    @property
    def length_summaries(self) -> dict[int, dict[str, GroupScore]]:
        """``by_length`` keyed by the length in tokens, shortest first: read this, never it."""
        by_length = sorted(self.by_length.items(), key=lambda item: int(item[0]))
        return {int(L): groups for L, groups in by_length}


def is_length_key(key: str) -> bool:
    """A ``by_length`` key as the runner writes it: a length in tokens, in plain digits."""
    return key == "0" or (key.isascii() and key.isdigit() and not key.startswith("0"))


def to_json(record: Any) -> Any:
    """A record as plain JSON values, every field written (null where it has none)."""
    return adapter_for(type(record)).dump_python(record, mode="json")


_ADAPTERS: dict[type, Any] = {}


def adapter_for(kind: type[T]) -> TypeAdapter[T]:
    """Reads and writes a record (pydantic, imported only when used); built once per type."""
    if kind not in _ADAPTERS:
        from pydantic import TypeAdapter

        _ADAPTERS[kind] = TypeAdapter(kind)
    return _ADAPTERS[kind]
