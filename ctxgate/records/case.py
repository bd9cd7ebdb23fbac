"""One case's record and the records it holds: its samples as generated and scored, its judging,
how it stopped, its thought, and its comparison with a baseline."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, Literal

from annotated_types import Ge

from ctxgate.records.cost import Cost
from ctxgate.records.vocabulary import (
    DESCRIBED,
    Broken,
    ByDesign,
    Json,
    NotGiven,
    RunFailure,
    Suite,
    ThoughtEnd,
    Verdict,
)


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
