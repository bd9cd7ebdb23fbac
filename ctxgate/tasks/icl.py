"""HELMET many-shot ICL, labels remapped to shuffled integers. At HELMET's lengths its own prompts
(``data.py`` HEAD: test items, per-item seeded demos and mapping, the demos' end cut); elsewhere
each sample's own mapping and demos, as many whole as fit the interpolated shot count."""

from __future__ import annotations

import bisect
import hashlib
import math
import random
from collections.abc import Sequence

from ctxgate.memo import memo
from ctxgate.metrics.registry import LABEL_EM
from ctxgate.seeding import derive_seed
from ctxgate.sources import DataUnavailable
from ctxgate.sources.helmet_files import shuffled
from ctxgate.sources.icl import SOURCES, ICLData, load_icl
from ctxgate.tasks.base import BuildContext, Job, Sample, TaskSpec, interleave
from ctxgate.tasks.fitting import FitSpec, fit_context, fit_units
from ctxgate.tasks.registration import register_all

INSTRUCTION = (
    "Use the provided mapping from the text to label to assign a label to the text. Only output "
    '"label: {label}" and nothing else. \n\n'
)
ANSWER_PREFIX = "label:"
LENGTHS = (4096, 8192, 16384, 32768, 65536, 131072)
SHOTS = {  # HELMET's shots per length
    "icl_trec_coarse": (200, 400, 800, 1600, 3300, 6600),
    "icl_trec_fine": (200, 400, 800, 1600, 3200, 6400),
    "icl_banking77": (180, 360, 720, 1450, 2900, 5900),
    "icl_clinic150": (220, 440, 880, 1750, 3525, 7050),
    "icl_nlu": (250, 510, 1020, 2040, 4080, 8296),
}
Example = tuple[str, int]  # a text and its label


def target_shots(task: str, length: int) -> int:
    """HELMET's count at its lengths; linear in L between them, proportional outside."""
    table = SHOTS[task]
    if length <= LENGTHS[0]:
        return max(1, round(table[0] * length / LENGTHS[0]))
    if length >= LENGTHS[-1]:
        return round(table[-1] * length / LENGTHS[-1])
    i = bisect.bisect_left(LENGTHS, length)  # LENGTHS[i - 1] < length <= LENGTHS[i]
    (l0, s0), (l1, s1) = (LENGTHS[i - 1], table[i - 1]), (LENGTHS[i], table[i])
    return round(s0 + (s1 - s0) * (length - l0) / (l1 - l0))


@memo(16)
def balanced_order(task: str, data_dir: str | None, seed: int) -> tuple[int, ...]:
    """Test indices round-robin over labels (labels and their items in a seeded order)."""
    data = load_icl(task, data_dir, seed)
    rng = random.Random(derive_seed("test-order", task, seed))
    by_label: dict[int, list[int]] = {}
    for i, (_, label) in enumerate(data.test):
        by_label.setdefault(label, []).append(i)
    labels = sorted(by_label)
    rng.shuffle(labels)
    for lab in labels:
        rng.shuffle(by_label[lab])
    return tuple(interleave([by_label[lab] for lab in labels]))


def demo_rounds(data: ICLData, question: str, count: int, rng: random.Random) -> list[Example]:
    """``count`` demos in rounds of one per label, each label's without replacement."""
    by_label: dict[int, list[Example]] = {}
    for text, label in data.train:
        if text.strip() != question.strip():  # never the test item itself
            by_label.setdefault(label, []).append((text, label))
    if not by_label:
        raise DataUnavailable(
            "the ICL train split has no example besides the test item itself; "
            "give the full train split with --data-dir"
        )
    decks: dict[int, list[Example]] = {lab: [] for lab in by_label}
    demos: list[Example] = []
    while len(demos) < count:
        round_ = []
        for lab in sorted(by_label):
            if not decks[lab]:
                decks[lab] = list(by_label[lab])
                rng.shuffle(decks[lab])
            round_.append(decks[lab].pop())
        rng.shuffle(round_)
        demos.extend(round_)
    return demos[:count]


MAX_TEST = 500  # HELMET's max_test_samples for ICL


def balance_labels(items: Sequence[Example], shots: int, seed: int) -> list[Example]:
    """HELMET's ``balance_labels``: rounds of one example per label (in order of first
    appearance, redrawn when short), each shuffled, the first ``shots`` kept."""
    rand = random.Random(seed)
    by_label: dict[int, list[Example]] = {}
    for item in items:
        by_label.setdefault(item[1], []).append(item)
    rounds: list[list[Example]] = [[] for _ in range(math.ceil(shots / len(by_label)))]
    for examples in by_label.values():
        picks = rand.sample(range(len(examples)), len(rounds) % len(examples))
        while len(picks) < len(rounds):
            more = min(len(rounds) - len(picks), len(examples))
            picks += rand.sample(range(len(examples)), more)
        for r, i in zip(rounds, picks):
            r.append(examples[i])
    for r in rounds:
        rand.shuffle(r)
    return [x for r in rounds for x in r][:shots]


@memo(16)
def helmet_test_items(task: str, data_dir: str | None, seed: int) -> tuple[Example, ...]:
    test = load_icl(task, data_dir, seed).test
    if len(test) <= MAX_TEST:
        return test
    return tuple(balance_labels([test[i] for i in shuffled(len(test), seed)], MAX_TEST, seed))


def build_icl(ctx: BuildContext, job: Job) -> Sample:
    """HELMET's prompt at its lengths; elsewhere the sample's own mapping and demos."""
    task, helmet = job.task, job.length in LENGTHS
    data = load_icl(task, ctx.data_dir, ctx.seed)
    if helmet:
        items = helmet_test_items(task, ctx.data_dir, ctx.seed)
        question, label = items[job.index % len(items)]
        digest = int(hashlib.sha256(question.encode("utf-8")).hexdigest(), 16)
        local_seed = (digest + ctx.seed) % 2**31
        target = SHOTS[task][LENGTHS.index(job.length)]
        demos = balance_labels(data.train, target, local_seed)
        mapping = list(range(SOURCES[task].num_labels))
        random.Random(local_seed).shuffle(mapping)
    else:
        order = balanced_order(task, ctx.data_dir, ctx.seed)
        question, label = data.test[order[job.index % len(order)]]
        rng = random.Random(derive_seed("sample", task, job.index, ctx.seed))
        mapping = list(range(data.num_labels))
        rng.shuffle(mapping)
        target = target_shots(task, job.length)
        demos = demo_rounds(data, question, target, rng)
    units = [f"{text}\nlabel: {mapping[lab]}" for text, lab in demos]
    tail = f"\n\n{question}"
    if helmet:
        prompt, cut = fit_context(ctx, job, INSTRUCTION, tail, ANSWER_PREFIX, "\n\n".join(units))
        how: dict[str, object] = {"demos": "helmet", "context_cut": cut}
    else:
        spec = FitSpec(INSTRUCTION, tail, ANSWER_PREFIX, "\n", 1, "demos")
        prompt, k = fit_units(ctx, job, spec, units)
        how = {"shots": k, "rounds": k / data.num_labels, "demos": "placed"}
    return job.sample(
        prompt,
        (str(mapping[label]),),
        ANSWER_PREFIX,
        shots_target=target,
        label=label,
        mapped_label=mapping[label],
        data_sha256=data.sha256,
        **how,
    )


def _spec(name: str, description: str) -> TaskSpec:
    return TaskSpec(
        name=name,
        suite="helmet",
        category="icl",
        metric=LABEL_EM,
        tokens_to_generate=20,
        build=build_icl,
        chance=100 / SOURCES[name].num_labels,  # one of its labels drawn at random
        scoring_prefix=ANSWER_PREFIX,
        default_samples=500,
        description=description,
        pool_size=lambda ctx, length: len(
            helmet_test_items(name, ctx.data_dir, ctx.seed)
            if length in LENGTHS
            else balanced_order(name, ctx.data_dir, ctx.seed)
        ),
    )


TASKS = {
    "icl_trec_coarse": "TREC question type, 6 labels, many-shot",
    "icl_trec_fine": "TREC fine question type, 50 labels, many-shot",
    "icl_banking77": "BANKING77 intents, 77 labels, many-shot",
    "icl_clinic150": "CLINC150 intents, 151 labels, many-shot",
    "icl_nlu": "NLU intents, 68 labels, many-shot",
}
register_all(__name__, map(_spec, TASKS, TASKS.values()))
