"""The report written by ``--report``, declared once as frozen records: the runner fills them, the
gates, the renderers and every verb that reads a report file read them, and the JSON Schema
(``ctxgate schema``) is derived from them. Bump SCHEMA_VERSION on breaking changes."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Annotated, Any, Final, Literal, TypeVar, get_args

from annotated_types import Ge

if TYPE_CHECKING:
    from pydantic import TypeAdapter

SCHEMA_VERSION: Final = 2  # of the report file; readers read 1 (records/migrate.py), refuse others

# RULER's, HELMET's, or a family's an extra registers (docs/tasks.md): a registered suite's name,
# checked against the task registry when a run starts, never a closed list
Suite = str
Verdict = Literal["pass", "fail", "skip", "error"]
ThoughtEnd = Literal["model", "forced", "never"]  # how a reasoning model's thought ended
# Why a selected case has no score, in the report's words; which fail the gates is gate.verdicts'.
# the task cannot be built at this length; --search-effective-length decided before it
ByDesign = Literal["too_short", "search_stopped"]
NotGiven = Literal["data_not_given", "judge_not_given"]  # an optional input the run was not given
# the checkpoint or an input prevents the case (data_short: the input ran out before the length)
Broken = Literal["window", "data_unreadable", "data_short", "judge_failed"]
# the case errored, its worker died, the session never reached it
RunFailure = Literal["error", "crash", "not_run"]
BY_DESIGN: tuple[str, ...] = get_args(ByDesign)
NOT_GIVEN: tuple[str, ...] = get_args(NotGiven)
BROKEN: tuple[str, ...] = get_args(Broken)

T = TypeVar("T")
Json = dict[str, object]  # a part whose shape belongs to another piece (a backend's description)
# pydantic's config for the schema's root records: a field's docstring is its description
DESCRIBED: Final = {"use_attribute_docstrings": True}


@dataclass(frozen=True)
class Comparison:
    """A case against the ``--baseline`` run: paired over the samples both scored."""

    score: float
    """The baseline's score, percent."""
    delta: float
    """This run's score less the baseline's, percentage points."""
    interval: tuple[float, float]
    """The interval of ``delta`` at ``confidence``, each end one-sided, points."""
    method: str
    """``tango-score`` (0/1 scores: Tango's interval, corrected) or ``paired-bootstrap``."""
    n: int
    """Samples paired (the same prompt, checked by its hash)."""
    tolerance: float
    """The drop allowed, points (``[regression]`` in thresholds.toml)."""
    confidence: float
    """One-sided confidence of each end of ``interval`` (``[regression] confidence``)."""
    regressed: bool
    """The interval lies below ``-tolerance`` (or ``--sequential``'s paired test said so)."""
    message: str
    """The comparison in words, as the terminal shows it."""
    baseline_stopped_early: bool = False
    """The baseline's ``--sequential`` stopped this case early: fewer samples, a biased mean."""


@dataclass(frozen=True)
class QuestionTest:
    """One question a ``--sequential`` case tested (its floor, its drop against the baseline): what
    it became certain of, if anything, and its confidence sequence at stopping."""

    decided: Literal["above", "below"] | None
    """Certain the score is above or below the floor (a drop: within tolerance); null: neither."""
    interval: tuple[float, float]
    """The confidence sequence at stopping: percent (floor) or points of delta (baseline)."""
    tolerance: float | None = None
    """The baseline question's tolerance, points."""


@dataclass(frozen=True)
class StopRecord:
    """How a case that may stop once its verdict is certain ran (``hookspec.ctxgate_case_stop``,
    which the search extra answers for ``--sequential``): samples used, why it stopped, what it was
    certain of. The verdicts read it; the test that stopped it is the extra's."""

    alpha: float
    """The case's error rate: how often a certain verdict may be wrong (``--sequential-alpha``)."""
    min_samples: int
    """No decision before this many samples (``--sequential-min``)."""
    used: int
    """Samples the test used; the case is scored on these."""
    budget: int
    """The case's fixed-n sample count."""
    decided: Literal["pass", "fail"] | None
    """What the test was certain of; null: it spent its budget undecided (the fixed-n rule)."""
    stopped: str
    """``certain it passes``, ``certain it fails`` or ``budget``; for a judged case with no judge
    in the run, why it ran its full count."""
    claim_alpha: float | None = None
    """Each question's share of ``alpha`` (alpha over the questions asked)."""
    floor: QuestionTest | None = None
    """The floor question: is the true score above the floor?"""
    baseline: QuestionTest | None = None
    """The baseline question (paired): did the score drop by more than the tolerance?"""
    by_summary: bool = False
    """Stopped with its summary's verdict (``--search-effective-length``), having no question of
    its own; ``stopped`` says which."""

    @property
    def early(self) -> bool:
        """Stopped before its sample count: the case's mean is biased by the stopping."""
        return (self.decided is not None or self.by_summary) and self.used < self.budget


@dataclass(frozen=True)
class FailedVerdict:
    """A sample whose judge verdict failed."""

    index: int
    """The sample's index in its case."""
    error: str
    """Why its verdict failed."""


@dataclass(frozen=True)
class JudgeUsage:
    """What judging a case cost."""

    requests: int = 0
    """Requests sent to the judge."""
    cache_hits: int = 0
    """Verdicts the judge cache had."""
    retries: int = 0
    """Requests sent again after a transient failure or an unusable reply."""
    prompt_tokens: int = 0
    """As the judge's API counts them."""
    completion_tokens: int = 0
    """As the judge's API counts them."""
    verdicts: int = 0
    """Verdicts asked for (a sample may need several)."""
    failed_verdicts: int = 0
    """Verdicts still failed after retries."""
    seconds: float = 0.0
    """Time spent in requests to the judge."""
    cost_usd: float | None = None
    """Null: no price known for the judge model."""


@dataclass(frozen=True)
class JudgeRecord:
    """A judged case's judging: pending (no judge in the run), judged, or failed."""

    status: Literal["pending", "judged", "failed"]
    """``pending`` (no judge in the run), ``judged``, or ``failed`` (no verdict usable)."""
    reason: str | None = None
    """Why it is pending: ``ctxgate judge`` judges it later from the stored inputs."""
    failed: int = 0
    """Samples whose verdict failed after retries."""
    failure_rate: float = 0.0
    """``failed`` over the samples."""
    max_failure_rate: float | None = None
    """Past this rate the case fails (``[judge] max_failure_rate``)."""
    failed_samples: tuple[FailedVerdict, ...] = ()
    """The samples whose verdict failed."""
    usage: JudgeUsage | None = None
    """What the judging cost."""
    seconds: float | None = None
    """Time spent judging the case."""
    llm: dict[str, object] | None = None
    """The LLM judge's settings (model, sampling, base URL without credentials, price), no key."""
    entailment: dict[str, object] | None = None
    """The citation judge: the NLI model (``--nli-model``), or the LLM judge."""

    @property
    def too_many_failed(self) -> bool:
        return self.status == "failed" or (
            self.status == "judged" and self.failure_rate > (self.max_failure_rate or 0.0)
        )


@dataclass(frozen=True)
class SampleOutcome:
    """One sample of a case as it was generated and scored."""

    __pydantic_config__ = DESCRIBED
    index: int
    """The sample's index in its case."""
    score: float | None
    """0-1; null: a judged sample not (yet, or not successfully) judged."""
    prediction: str
    """The output; a reasoning model's answer, without its ``thought``."""
    scored_text: str
    """What the metric looked at: the output cleaned or parsed."""
    answers: tuple[str, ...]
    """The references."""
    input_tokens: int
    """The prompt's ids as sent, BOS and chat template included."""
    output_tokens: int
    """Tokens generated."""
    finish_reason: str
    """``stop`` (EOS or a stop string) or ``length`` (the generation budget)."""
    sample_sha256: str
    """A hash of the task, length, index, answers, answer prefix and prompt ids (same prompt)."""
    parts: dict[str, float] = field(default_factory=dict)
    """A metric's components, each 0-1 (a judge's; ``nolima_one_name``'s ``named_others``)."""
    judge_input: Json | None = None
    """What the judge reads (question and answers, gold summary and key points, the documents
    cited), so that ``ctxgate judge`` needs no data."""
    judge_error: str | None = None
    """Why the sample's verdict failed."""
    excerpts: Json | None = None
    """Why the sample scored as it did, without its whole prompt: ``needles`` (each needle's
    ``needle``, its ``depth`` in percent of the context and the ``text`` around it) and ``end``
    (the prompt's last tokens)."""
    seconds: float | None = None
    """From sending the prompt to its output back; null when the cache had it."""
    thought: str | None = None
    """A reasoning model's thought, removed from the ``prediction`` before scoring; null: none."""
    thought_tokens: int = 0
    """Tokens of the thought, its markers included, up to the last closing one."""
    thought_end: ThoughtEnd | None = None
    """How the thought ended: ``model`` (it closed it), ``forced`` (``--thinking-budget`` closed
    it), ``never`` (it never closed, so the answer is empty)."""


@dataclass(frozen=True, kw_only=True)
class SampleCase:
    """A sample's case, and whether its prompt had the chat template (how HELMET scores it)."""

    __pydantic_config__ = DESCRIBED
    task: str
    """The task's name."""
    length: int
    """In tokens."""
    metric: str
    """The metric that scored the sample."""
    chat_template: bool | None
    """Whether the prompt had the model's chat template."""


@dataclass(frozen=True, kw_only=True)
class Prediction(SampleOutcome, SampleCase):
    """A line of the ``.predictions.jsonl`` beside a report: the sample's case, then the sample
    (the base classes in that order put the case's fields first)."""


@dataclass(frozen=True)
class Cost:
    """What the engine spent on a verdict in this run. Each case's fixed plan, its sample count (at
    a selected length), is ``generations`` + ``cached_generations`` + ``saved_generations``."""

    generations: int = 0
    """Samples the engine generated in this run."""
    prompt_tokens: int = 0
    """Tokens it prefilled for them, every request's prompt ids (budget forcing sends two)."""
    generated_tokens: int = 0
    """Tokens it generated for them: as a server's usage reported them where it did and they can
    be right (``reported_tokens``), else counted here from the ids or the text."""
    engine_seconds: float = 0.0
    """Seconds of generation (a case's time less building prompts and judging), summed over
    cases: cases a server or cluster runs at once each count their own."""
    cached_generations: int = 0
    """Samples the generation cache had: nothing prefilled or generated."""
    saved_generations: int = 0
    """Samples neither generated nor cached: ``--sequential`` stopped a case once certain, or
    ``--search-effective-length`` skipped its length."""
    saved_prompt_tokens: int = 0
    """Their prompt tokens, estimated: the case's ``prompt_tokens`` per generation (none: per
    sample as sent; a skipped case: its length)."""
    thinking_tokens: int = 0
    """Of ``generated_tokens``, a reasoning model's thought."""
    reported_tokens: int = 0
    """Of ``generated_tokens``, those a server's usage reported (checked against its text and the
    request's budget); the rest, and every prompt token, were counted here."""
    overruns: int = 0
    """Generations whose text ran past the request's budget (the server ignored ``max_tokens``):
    cut to the budget before scoring, and counted so."""
    cached_prompt_tokens: int = 0
    """Of ``prompt_tokens``, those the engine served from its prefix cache instead of computing
    them, as its usage reported them (``prompt_tokens_details.cached_tokens``)."""
    cache_reported: int = 0
    """Of ``generations``, those whose engine reported its cached prompt tokens (the HF engine:
    none, it computes every one); for the others the split is unknown."""

    def __add__(self, other: Cost) -> Cost:
        return Cost(*(getattr(self, f.name) + getattr(other, f.name) for f in fields(Cost)))


@dataclass(frozen=True)
class RunCost:
    """The run's cost: its cases' summed, with the device it was paid in."""

    total: Cost
    """Over every case."""
    device: str | None = None
    """What generated: the GPU's name and count (``NVIDIA H100 80GB HBM3 x2``), ``cpu``, or the
    server's URL; null: nothing was generated."""
    gpu_seconds: float | None = None
    """``engine_seconds`` times the GPUs the model held; null: not on GPUs this process held."""
    by_length: dict[str, Cost] = field(default_factory=dict)
    """Per length (a key in plain digits)."""


@dataclass(frozen=True)
class ThinkingRecord:
    """A reasoning model's thought over a case's samples (null on the case: no sample had one)."""

    samples: int
    """Samples with a thought."""
    tokens_mean: float
    """Thought tokens per sample with a thought."""
    tokens_max: int
    """The longest thought, in tokens."""
    thought_cut: int
    """Thoughts cut by ``--thinking-budget`` or, without one, by the task's budget."""
    answer_cut: int
    """Answers after a thought that the task's answer budget cut."""
    never_ended: int
    """Thoughts never closed: their answers are empty, scored as such."""
    cut: int
    """Samples cut by either budget."""
    answer_budget: int
    """The task's own answer budget, in tokens."""
    budget: int | None = None
    """``--thinking-budget``; null: thought and answer shared the task's budget."""
    max_cut_share: float | None = None
    """Past this share of cut samples the case fails (``[thinking] max_cut_share``)."""
    unclosed: int = 0
    """Of ``never_ended``, outputs the model ended inside its thought, before any closing marker."""
    end: str | None = None
    """The closing marker thoughts were split at; null: an older report."""
    end_given: bool = False
    """``end`` is ``--think-end``'s, not the model's own (found in its tokenizer or template)."""

    @property
    def too_many_cut(self) -> bool:
        return self.cut > (self.max_cut_share or 0.0) * self.samples


@dataclass(frozen=True)
class CaseRecord:
    """One task at one length, from the runner (plugins/cases.py) through the gates (gate/) to the
    report (report/) and back from a report file (``ctxgate judge``, ``diff``, ``--baseline``).
    Until it runs it is an error, kept if it never reports. Every selected case is in the report."""

    task: str
    """The task's name (``ctxgate tasks`` lists them)."""
    suite: Suite
    """The suite the task belongs to."""
    length: Annotated[int, Ge(0)]
    """In tokens; 0: the bare form (BABILong's 0k)."""
    category: str = ""
    """The task's category (a HELMET category, or RULER's niah, vt, aggregation, qa)."""
    metric: str = ""
    """The metric its scores come from (``--helmet-compat`` may swap it for HELMET's own)."""
    verdict: Verdict = "error"
    """``skip``: no score and none expected (``skip_kind``); ``error``: no score, which fails the
    gates (``error_kind``)."""
    message: str = ""
    """Why the verdict is what it is, in one line."""
    score: float | None = None
    """Percent: the mean of the samples' scores."""
    n: int = 0
    """Samples scored."""
    chance: float | None = None
    """Percent: a random answer's expected score at the case's length; null: an older report."""
    floor: float | None = None
    """The floor thresholds.toml sets for the case, percent."""
    ci: tuple[float, float] | None = None
    """The score's interval, percent."""
    samples_from_cache: int = 0
    """Samples whose output the generation cache had."""
    error_kind: RunFailure | NotGiven | Broken | None = None
    """Why an ``error`` has no score: it raised (``error``), its worker died (``crash``), the run
    stopped first (``not_run``), an input it needs was not given while a floor or baseline expected
    its score, or the checkpoint or an input prevents it (docs/gates.md)."""
    skip_kind: ByDesign | NotGiven | None = None
    """Why it was skipped: it cannot be built at this length, or an optional input was not given."""
    seconds: float | None = None
    """Wall time of the case."""
    build_seconds: float | None = None
    """Of ``seconds``, building prompts."""
    input_tokens_mean: float | None = None
    """Prompt tokens per sample, as sent."""
    input_tokens_max: int | None = None
    """The longest prompt, in tokens as sent."""
    fill_min: float | None = None
    """The smallest (input + generation budget) / length over the samples."""
    output_tokens: int | None = None
    """Tokens generated over the samples."""
    data_sha256: str | None = None
    """A hash of its samples' ``sample_sha256``: the same prompts in two runs."""
    parts: dict[str, float] = field(default_factory=dict)
    """A metric's components, means over the samples scored, percent."""
    judge: JudgeRecord | None = None
    """Judged tasks only."""
    throughput: dict[str, float] | None = None
    """``prompt_tokens_per_s`` and ``generated_tokens_per_s`` over the samples generated in this
    run, per second of generation (``seconds`` less building and judging); null: all cached."""
    chat_template: bool | None = None
    """Whether its prompts had the model's chat template."""
    sample_cap: dict[str, int] | None = None
    """``requested`` and ``pool``: the data held fewer distinct samples; each ran once."""
    stop: StopRecord | None = None
    """How it stopped once its verdict was certain (``--sequential``): with a floor or a baseline
    only."""
    built_from: str | None = None
    """How its prompts were built where a task has two ways: ``helmet_file`` or ``helmet`` (HELMET's
    own files or sampling, at its lengths), ``placed`` or ``generated`` (ctxgate's fit); several
    joined by commas."""
    baseline: Comparison | None = None
    """Against ``--baseline``, when the baseline scored the case."""
    cost: Cost | None = None
    """What the case cost in this run; null: it did not run."""
    thinking: ThinkingRecord | None = None
    """A reasoning model's thought over its samples; null: none had one."""
    extras: dict[str, object] = field(default_factory=dict)
    """The extras' data, by slot name (``records/slots.py``): a slot of an extra not installed
    where the report is read is kept as written."""

    @property
    def name(self) -> str:
        return f"{self.task}-{self.length}"

    @property
    def judge_status(self) -> str | None:
        return self.judge.status if self.judge else None


@dataclass(frozen=True)
class GroupScore:
    """A summary's score at one length (RULER's average, a HELMET category, a task family),
    present when one of its members ran or errored."""

    score: float | None
    """The mean over ``members`` that have a score, percent; a family's official data, where it
    ran, stands in for the generated task it replaces."""
    members: tuple[str, ...]
    """The tasks that count in it at this length."""
    missing: tuple[str, ...] = ()
    """Members not selected in this run."""
    errored: tuple[str, ...] = ()
    """Members selected but without a score."""
    early: tuple[str, ...] = ()
    """Members stopped early by ``--sequential``: their means are biased."""
    partial: bool = False
    """``missing`` is not empty (written for readers of the file; derived)."""
    incomplete: bool = False
    """``errored`` is not empty (derived)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "partial", bool(self.missing))
        object.__setattr__(self, "incomplete", bool(self.errored))


@dataclass(frozen=True)
class EffectiveLength:
    """RULER's effective length over the tested lengths (docs/gates.md)."""

    value: int
    """The largest length above ``threshold`` with every shorter one; 0: the shortest fails."""
    max_passing: int
    """The largest passing length, gaps allowed (the looser reading)."""
    threshold: float
    """The bar a length's RULER average must pass, percent."""
    per_length: dict[int, bool] = field(default_factory=dict)
    """Whether each tested length passed."""
    partial: bool = False
    """A RULER task was not selected: the value is over fewer than 13 tasks."""
    incomplete: tuple[int, ...] = ()
    """Lengths with a RULER task that produced no score: counted as failing."""
    early: tuple[int, ...] = ()
    """Lengths with a RULER task stopped early by ``--sequential``: counted as failing."""
    decided: dict[int, bool] = field(default_factory=dict)
    """Lengths whose average its own test decided before every case there ran
    (``--search-effective-length``), passing or failing: early-stopped members or not."""


@dataclass(frozen=True)
class RelativeEffectiveLength:
    """A summary's effective length against the model's own short-context score (NoLiMa's rule)."""

    value: int
    """The longest length that, with every shorter one, keeps ``share`` of ``base``; 0: none."""
    base: float
    """The summary's mean over ``base_lengths``, percent."""
    base_lengths: tuple[int, ...]
    """The run's lengths up to ``[relative_effective_length] base_up_to`` (NoLiMa: up to 1K)."""
    share: float
    """The share of ``base`` a length must keep (``[relative_effective_length] share``)."""
    per_length: dict[int, bool] = field(default_factory=dict)
    """Whether each length kept the share."""
    incomplete: tuple[int, ...] = ()
    """Lengths with a member that produced no score: counted as failing."""
    early: tuple[int, ...] = ()
    """Lengths with a member stopped early by ``--sequential``: counted as failing."""
    chance: float = 0.0
    """The base's chance score: a length keeps ``share`` of what the base scores above chance,
    ``score - its chance >= share * (base - chance)``."""
    why: str | None = None
    """Why there is none (``value`` 0): the base is not above chance."""
    partial: bool = False
    """A member missing at a length (each averages what all had), or lengths a search skipped."""


@dataclass(frozen=True)
class LongScore:
    """100-LongBench's LongScore of a summary, percent (a length a member lacks counts nowhere)."""

    value: float | None
    """The mean of ``per_length``; null: see ``why``."""
    base: float | None
    """The summary's mean over ``base_lengths``."""
    base_lengths: tuple[int, ...]
    """The run's lengths of 2K, 4K and 6K (100-LongBench's 0-8K bucket)."""
    per_length: dict[int, float] = field(default_factory=dict)
    """Each length of 8K or more: 100 * (score - base) / base, each above its chance."""
    why: str | None = None
    """No length of 2K, 4K or 6K, none of 8K or more, or a base not above chance."""
    chance: float = 0.0
    """The base's chance score (the mean of its lengths' means over the members)."""
    partial: bool = False
    """As ``RelativeEffectiveLength.partial``."""


@dataclass(frozen=True)
class Overall:
    """RULER's averages over the tested lengths."""

    ruler_avg: float | None = None
    """RULER's average over the tested lengths, percent."""
    ruler_wavg_inc: float | None = None
    """Weighted by length rank, 1..n from the shortest."""
    ruler_wavg_dec: float | None = None
    """Weighted by length rank, 1..n from the longest."""
    incomplete: bool = False
    """A length's RULER average is incomplete."""
    early: bool = False
    """A RULER case stopped early by ``--sequential``."""
    partial: bool = False
    """A length's RULER average is partial (a task missing), or a length search skipped lengths."""


@dataclass(frozen=True)
class Gate:
    """One gate: ``cases`` (every selected case finished, one ran), ``floors`` (a case without a
    score counts as failing), ``baseline``, ``min_effective_length``,
    ``min_relative_effective_length.SUMMARY``."""

    name: str
    """Which gate."""
    verdict: Literal["pass", "fail"]
    """Whether it passed."""
    message: str
    """What it found, in one line."""


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
