"""The report written by ``--report``, declared once as frozen records: the runner fills them, the gates read them,
the renderers and every verb that reads a report file use their attributes, and the JSON Schema
(``ctxgate schema``) is derived from them. Bump SCHEMA_VERSION on breaking changes."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Annotated, Any, Final, Literal, TypeVar, get_args

from annotated_types import Ge

if TYPE_CHECKING:
    from pydantic import TypeAdapter

SCHEMA_VERSION: Final = 1  # of the report file; readers refuse another (records.io.read_report)

# RULER, HELMET, and the task families beyond them (MRCR-, BABILong- and NoLiMa-style; docs/tasks.md)
Suite = Literal["ruler", "helmet", "mrcr", "babilong", "nolima"]
Verdict = Literal["pass", "fail", "skip", "error"]
# Why a selected case has no score: the report's words for it. Which of them fail the gates is gate.verdicts' rule.
ByDesign = Literal["too_short"]  # the task cannot be built at this length
NotGiven = Literal["data_not_given", "judge_not_given"]  # an optional input the run was not given
# the checkpoint or an input prevents the case (data_short: the input ran out before the prompt reached the length)
Broken = Literal["window", "data_unreadable", "data_short", "judge_failed"]
RunFailure = Literal["error", "crash", "not_run"]  # the case errored, its worker died, the session never reached it
BY_DESIGN: tuple[str, ...] = get_args(ByDesign)
NOT_GIVEN: tuple[str, ...] = get_args(NotGiven)
BROKEN: tuple[str, ...] = get_args(Broken)

T = TypeVar("T")
Json = dict[str, object]  # a part whose shape belongs to another piece (a backend's description, a test's state)


@dataclass(frozen=True)
class Comparison:
    """A case against the ``--baseline`` run: paired over the samples both scored."""

    score: float  # the baseline's
    delta: float
    interval: tuple[float, float]
    method: str
    n: int
    tolerance: float
    confidence: float
    regressed: bool
    message: str
    baseline_stopped_early: bool = False  # a --sequential baseline's samples, fewer than this run's


@dataclass(frozen=True)
class QuestionTest:
    """One question a ``--sequential`` case tested (its floor, its drop against the baseline): what it became
    certain of, if anything, and its confidence sequence at stopping (percent; points of delta for the baseline)."""

    decided: Literal["above", "below"] | None
    interval: tuple[float, float]
    tolerance: float | None = None  # the baseline question's, points


@dataclass(frozen=True)
class SequentialRecord:
    """How ``--sequential`` ran a case: how many of its samples the test used and why it stopped."""

    alpha: float  # the case's error rate
    min_samples: int
    used: int
    budget: int
    decided: Literal["pass", "fail"] | None
    stopped: str
    claim_alpha: float | None = None  # each question's share of alpha
    floor: QuestionTest | None = None
    baseline: QuestionTest | None = None

    @property
    def early(self) -> bool:
        """Stopped before its sample count: the case's mean is biased by the stopping."""
        return self.decided is not None and self.used < self.budget


@dataclass(frozen=True)
class FailedVerdict:
    index: int
    error: str


@dataclass(frozen=True)
class JudgeUsage:
    requests: int = 0
    cache_hits: int = 0
    retries: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    verdicts: int = 0
    failed_verdicts: int = 0
    seconds: float = 0.0
    cost_usd: float | None = None  # None: no price known for the judge model


@dataclass(frozen=True)
class JudgeRecord:
    """A judged case's judging: pending (no judge in the run, and why), judged, or failed (no verdict usable)."""

    status: Literal["pending", "judged", "failed"]
    reason: str | None = None
    failed: int = 0
    failure_rate: float = 0.0
    max_failure_rate: float | None = None
    failed_samples: tuple[FailedVerdict, ...] = ()
    usage: JudgeUsage | None = None
    seconds: float | None = None
    llm: dict[str, object] | None = None  # the LLM judge's settings, never its key
    entailment: dict[str, object] | None = None  # the entailment judge: the NLI model, or the LLM judge

    @property
    def too_many_failed(self) -> bool:
        return self.status == "failed" or (
            self.status == "judged" and self.failure_rate > (self.max_failure_rate or 0.0)
        )


@dataclass(frozen=True)
class SampleOutcome:
    """One sample of a case as it was generated and scored."""

    index: int
    score: float | None  # None: a judged sample not (yet, or not successfully) judged
    prediction: str
    scored_text: str
    answers: tuple[str, ...]
    input_tokens: int
    output_tokens: int
    finish_reason: str
    sample_sha256: str
    parts: dict[str, float] = field(default_factory=dict)  # a judged metric's components
    judge_input: Json | None = None
    judge_error: str | None = None
    # what a reader needs to see why the sample scored as it did, without its whole prompt: the text around each
    # needle (with the needle and its depth, percent of the context) and the prompt's end (see ``excerpts``)
    excerpts: Json | None = None
    seconds: float | None = None  # from sending the prompt to its output back; None when the cache had it


@dataclass(frozen=True, kw_only=True)
class SampleCase:
    """The case a sample belongs to, and whether its prompt had the chat template (which decides how HELMET scores
    the output)."""

    task: str
    length: int
    metric: str
    chat_template: bool | None


@dataclass(frozen=True, kw_only=True)
class Prediction(SampleOutcome, SampleCase):
    """A line of the ``.predictions.jsonl`` beside a report: the sample's case, then the sample (the base classes
    in that order put the case's fields first in the line)."""


@dataclass(frozen=True)
class CaseRecord:
    """One task at one length, as it travels from the runner (plugins/cases.py) through the gates (gate/) to the
    report (report/) and back from a report file (``ctxgate judge``, ``diff``, ``--baseline``). Until the case
    runs it is an error: a case that never reports keeps that verdict."""

    task: str
    suite: Suite
    length: Annotated[int, Ge(0)]  # 0: the bare form (BABILong's 0k)
    category: str = ""
    metric: str = ""
    verdict: Verdict = "error"
    message: str = ""
    score: float | None = None  # percent
    n: int = 0
    chance: float | None = None  # percent: a random answer's expected score (TaskSpec.chance); None: an older report
    floor: float | None = None
    ci: tuple[float, float] | None = None
    samples_from_cache: int = 0
    error_kind: RunFailure | NotGiven | Broken | None = None  # why it has no score
    skip_kind: ByDesign | NotGiven | None = None  # why it was skipped
    seconds: float | None = None
    build_seconds: float | None = None
    input_tokens_mean: float | None = None
    input_tokens_max: int | None = None
    fill_min: float | None = None
    output_tokens: int | None = None
    data_sha256: str | None = None
    parts: dict[str, float] = field(default_factory=dict)
    judge: JudgeRecord | None = None
    throughput: dict[str, float] | None = None
    chat_template: bool | None = None
    sample_cap: dict[str, int] | None = None
    sequential: SequentialRecord | None = None
    built_from: str | None = None
    baseline: Comparison | None = None

    @property
    def name(self) -> str:
        return f"{self.task}-{self.length}"

    @property
    def judge_status(self) -> str | None:
        return self.judge.status if self.judge else None


@dataclass(frozen=True)
class GroupScore:
    """A summary's score at one length (RULER's average, a HELMET category): the mean over its members that have
    a score. ``partial``: a member was not selected; ``incomplete``: a member was selected but has no score."""

    score: float | None
    members: tuple[str, ...]
    missing: tuple[str, ...] = ()  # not selected in this run
    errored: tuple[str, ...] = ()  # selected, but no score
    early: tuple[str, ...] = ()  # scored, but stopped early by --sequential: their means are biased
    partial: bool = False  # written for readers of the file; always derived from the fields above
    incomplete: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "partial", bool(self.missing))
        object.__setattr__(self, "incomplete", bool(self.errored))


@dataclass(frozen=True)
class EffectiveLength:
    """``value``: the largest tested length such that it and every shorter tested length score > threshold
    (0 if the shortest fails). ``max_passing``: the largest passing length, gaps allowed (the looser reading)."""

    value: int
    max_passing: int
    threshold: float
    per_length: dict[int, bool] = field(default_factory=dict)
    partial: bool = False
    incomplete: tuple[int, ...] = ()  # lengths with a RULER task that produced no score: counted as failing
    early: tuple[int, ...] = ()  # lengths with a RULER task stopped early by --sequential: counted as failing


@dataclass(frozen=True)
class RelativeEffectiveLength:
    """A summary's effective length against the model's own short-context score (NoLiMa's rule): ``base`` is the
    summary's mean over the run's lengths up to the base's limit (NoLiMa: 250, 500 and 1K tokens); a length is
    effective when its score is at least ``share`` of the base, and ``value`` is the longest length with it and every
    shorter one effective (0: the shortest is not)."""

    value: int
    base: float
    base_lengths: tuple[int, ...]
    share: float
    per_length: dict[int, bool] = field(default_factory=dict)
    incomplete: tuple[int, ...] = ()  # lengths with a member that produced no score: counted as failing
    early: tuple[int, ...] = ()  # lengths with a member stopped early by --sequential: counted as failing


@dataclass(frozen=True)
class LongScore:
    """100-LongBench's LongScore of a summary, in percent: ``base`` is its mean over the run's lengths below 8K
    (100-LongBench's 0-8K bucket, ``base_lengths``), ``per_length`` each length of 8K or more's change from the base,
    100 * (score - base) / base, and ``value`` their mean. ``value`` None: ``why`` (no length below 8K, none of 8K
    or more, or a base of 0). A length where a member has no score is in neither."""

    value: float | None
    base: float | None
    base_lengths: tuple[int, ...]
    per_length: dict[int, float] = field(default_factory=dict)
    why: str | None = None


@dataclass(frozen=True)
class Overall:
    ruler_avg: float | None = None
    ruler_wavg_inc: float | None = None
    ruler_wavg_dec: float | None = None
    incomplete: bool = False
    early: bool = False


@dataclass(frozen=True)
class Gate:
    name: str
    verdict: Literal["pass", "fail"]
    message: str


@dataclass(frozen=True)
class BaselineRun:
    """The ``--baseline`` run: its path and the ``task-length`` names it scored."""

    path: str
    scored: tuple[str, ...]
    not_selected: tuple[str, ...] = ()


@dataclass(frozen=True)
class RunError:
    message: str


@dataclass(frozen=True)
class RunInfo:
    """What ran: the checkpoint, how it was loaded and prompted, and the selection."""

    model: str
    backend: Json | None
    seed: int
    samples: int | None
    lengths: tuple[int, ...]
    chat_template: Literal["task", "on", "off"]
    model_fingerprint: Json | None = None
    model_dir: str | None = None
    base_model: str | None = None
    model_overrides: Json | None = None
    ignore_remote_code: bool = False
    weights_mismatch: str | None = None
    helmet_compat: bool = False
    helmet_length_tokenizer: str | None = None
    chat_template_sha256: str | None = None
    tokenizer_sha256: str | None = None
    haystack: str | None = None
    haystack_sha256: str | None = None
    packages: dict[str, str] = field(default_factory=dict)
    python: str | None = None
    sequential: Json | None = None
    judge: Json | None = None
    cache: Json | None = None
    thresholds: str | None = None
    data_sha256: str | None = None


@dataclass(frozen=True)
class PublishedLength:
    """A published score at one length against this run's: ``verdict`` is within/outside the band (the measured
    interval widened by the table's allowance), settings differ (``differs`` says how), or not measured."""

    length: int
    published: float
    verdict: Literal["within", "outside", "settings differ", "not measured"]
    differs: tuple[str, ...] = ()
    measured: float | None = None
    ci: tuple[float, float] | None = None
    difference: float | None = None
    band: tuple[float, float] | None = None


@dataclass(frozen=True)
class PublishedRow:
    """One published row (a model's numbers for one measure, from one table) with the lengths this run has."""

    measure: str
    label: str
    source: str
    paper: str
    table: str
    model_label: str
    allowance: float
    allowance_source: str
    chat_template: str
    lengths: tuple[PublishedLength, ...]
    claimed: str | None = None
    effective: str | None = None
    effective_bar: str | None = None


@dataclass(frozen=True)
class Reference:
    """``--reference``: the run against a paper's published numbers (information, never a gate)."""

    model: str
    matched: str
    rows: tuple[PublishedRow, ...]


@dataclass(frozen=True)
class Report:
    ctxgate_version: str
    created: str
    complete: bool
    run: RunInfo
    cases: tuple[CaseRecord, ...]
    by_length: dict[str, dict[str, GroupScore]]  # keys: lengths in tokens, as JSON writes them (is_length_key)
    overall: Overall
    effective_length: EffectiveLength | None
    gates: tuple[Gate, ...]
    # each summary (``by_length``'s keys) with a base: its effective length relative to its own short-context score
    relative_effective_length: dict[str, RelativeEffectiveLength] = field(default_factory=dict)
    long_score: dict[str, LongScore] = field(default_factory=dict)  # each summary with a score at a full length
    schema_version: Literal[1] = SCHEMA_VERSION
    session_complete: bool = True  # the session itself finished (cases may still lack scores)
    error: RunError | None = None  # what stopped the whole run (the model could not be loaded)
    baseline: BaselineRun | None = None
    reference: Reference | None = None
    predictions: str | None = None  # the .predictions.jsonl beside the report, by bare file name

    @property
    def length_summaries(self) -> dict[int, dict[str, GroupScore]]:
        """``by_length`` keyed by the length in tokens, shortest first: read this, never ``by_length`` (its keys
        are strings because JSON's are; records.io.read_report refuses a key that is no length)."""
        return {int(L): groups for L, groups in sorted(self.by_length.items(), key=lambda item: int(item[0]))}


def is_length_key(key: str) -> bool:
    """A ``by_length`` key as the runner writes it: a length in tokens, in plain decimal digits."""
    return key == "0" or (key.isascii() and key.isdigit() and not key.startswith("0"))


def report_schema(predictions: bool = False) -> dict[str, object]:
    """The report's JSON Schema, or with ``predictions`` that of a line of its ``.predictions.jsonl``."""
    schema = adapter_for(Prediction if predictions else Report).json_schema()
    title = "ctxgate prediction line" if predictions else "ctxgate run report"
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", **schema, "title": title}


def to_json(record: Any) -> Any:
    """A record as plain JSON values, every field written (null where it has none)."""
    return adapter_for(type(record)).dump_python(record, mode="json")


_ADAPTERS: dict[type, Any] = {}


def adapter_for(kind: type[T]) -> TypeAdapter[T]:
    """Reads and writes a record (pydantic, imported only by what reads or writes one); built once per type."""
    if kind not in _ADAPTERS:
        from pydantic import TypeAdapter

        _ADAPTERS[kind] = TypeAdapter(kind)
    return _ADAPTERS[kind]
