"""The chance score of each generated task, measured: random answers drawn as the task draws its
distractors, scored by the task's own metric, beside the chance its spec declares
(``TaskSpec.chance``, percent).

    python bench/chance.py [--length 8k] [--samples 100] [--draws 20] [--tasks cwe,ctx_mrcr_2]

``--samples`` samples of each task are built at ``--length`` (the shipped tokenizer, seed 42, no
chat template), and each is answered ``--draws`` times at random:

- RULER's needles: a value drawn as the distractor needles' values are (a 7-digit number or a UUID)
  for each one asked; JSON KV: a UUID, as its other pairs' values; VT: five names drawn as its
  chain's are;
- CWE: 10 words of the prompt's list, FWE: 3 of the prompt's coded words (a guess among the words
  shown);
- MRCR-style: the random string and an answer to a distractor request, drawn by the conversation
  writer; and, in its own column, another answer to the needle's request (the wrong needle);
- BABILong-style: one of the task's labels the question does not name (BABILong's rule ignores
  those);
- NoLiMa-style: one of the record's characters.

A line per task: the declared chance, the measured one with its standard error over the samples, and
the difference. ``tests/test_chance.py`` runs it on a few samples and holds each declaration to its
measurement.
"""

from __future__ import annotations

import json
import random
import re
import statistics
import string
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench import arguments  # noqa: E402
from ctxgate.ext.families import conversations as conv  # noqa: E402
from ctxgate.ext.families.metrics import TASK_LABELS  # noqa: E402
from ctxgate.ext.families.nolima_files import load_project  # noqa: E402
from ctxgate.lengths import parse_length  # noqa: E402
from ctxgate.metrics.registry import score_prediction  # noqa: E402
from ctxgate.tasks.base import BuildContext, Sample, TaskSpec, TaskTooShort  # noqa: E402
from ctxgate.tasks.build import build_sample  # noqa: E402
from ctxgate.tasks.chance import Chance, chance_at  # noqa: E402
from ctxgate.tasks.registry import get_task, task_names  # noqa: E402
from ctxgate.tokens.codec import PieceEncoder  # noqa: E402

Guess = Callable[[Sample, random.Random], str]
# The task modules (niah, aggregation) are imported where used, after the registry has loaded them:
# importing one first would register its tasks first, and reorder the suite.


def needle_values(s: Sample, rng: random.Random) -> str:
    from ctxgate.tasks.niah import make_value

    return " ".join(make_value(rng, "uuids" if "-" in a else "numbers") for a in s.answers)


def chain_names(s: Sample, rng: random.Random) -> str:
    return " ".join("".join(rng.choices(string.ascii_uppercase, k=len(a))) for a in s.answers)


def json_value(s: Sample, rng: random.Random) -> str:
    from ctxgate.tasks.niah import uuid4_text

    return " " + uuid4_text(rng.getrandbits(128))


def _between(text: str, head: str, tail: str) -> str:
    return text.rsplit(head, 1)[1].split(tail, 1)[0]


def prompt_words(k: int, words: Callable[[str], list[str]]) -> Callable[[PieceEncoder], Guess]:
    """``k`` distinct words of those the prompt lists, read back from its text."""

    def guess_with(enc: PieceEncoder) -> Guess:
        read: dict[tuple[str, int, int], list[str]] = {}  # a prompt decoded once, not each draw

        def guess(s: Sample, rng: random.Random) -> str:
            key = (s.task, s.length, s.index)
            if key not in read:
                read[key] = words(enc.decode(s.input_ids))
            return " " + " ".join(rng.sample(read[key], min(k, len(read[key]))))

        return guess

    return guess_with


def cwe_words(text: str) -> list[str]:
    from ctxgate.tasks.aggregation import CWE_HEAD, CWE_TAIL

    listed = _between(text, CWE_HEAD, CWE_TAIL)  # the task's list, after its example's
    return sorted(set(re.findall(r"(?:^|\s)\d+\. (\S+)", listed)))


def fwe_words(text: str) -> list[str]:
    from ctxgate.tasks.aggregation import FWE_HEAD, FWE_TAIL

    return sorted(set(_between(text, FWE_HEAD, FWE_TAIL).split()) - {"..."})


def _needle(s: Sample) -> conv.Request:
    form, topic = s.meta["request"].removeprefix("write a ").rsplit(" about ", 1)
    return conv.Request(next(f for f in conv.FORMS if f.name == form), topic)


def mrcr_distractor(s: Sample, rng: random.Random) -> str:
    """An answer to a request drawn as the conversation's distractors are, from a pool of 32 topics
    that holds the needle's, as the sample's does."""
    needle = _needle(s)
    pool = (needle.topic, *rng.sample([t for t in conv.topics() if t != needle.topic], 31))
    request = conv.distractor_request(rng, needle, pool)
    return s.meta["random_string"] + conv.answer(rng, request, conv.units()).text


def mrcr_wrong_needle(s: Sample, rng: random.Random) -> str:
    needle, gold = _needle(s), s.answers[0]
    while (text := s.meta["random_string"] + conv.answer(rng, needle, conv.units()).text) == gold:
        pass
    return text


def babi_label(s: Sample, rng: random.Random) -> str:
    split = s.task.rsplit("_", 1)[1]
    question = s.meta["question"].lower()
    return rng.choice([label for label in TASK_LABELS[split] if label.lower() not in question])


def nolima_character(s: Sample, rng: random.Random) -> str:
    cases = {c.name: c for latent in (True, False) for c in load_project().of_kind(latent)}
    return rng.choice(cases[s.meta["case"]].characters)


PREFIXES = ("niah_", "vt", "cwe", "fwe", "json_kv", "ctx_mrcr_", "ctx_babi_", "ctx_nolima")


def guessed_tasks() -> list[str]:
    """The generated tasks, each with its random answer in ``guesses``."""
    return [t for t in task_names() if t.startswith(PREFIXES)]


def guesses(enc: PieceEncoder) -> dict[str, Guess]:
    """Each generated task's random answer, in the registry's order."""
    by_prefix: dict[str, Guess] = {
        "niah_": needle_values,
        "vt": chain_names,
        "cwe": prompt_words(10, cwe_words)(enc),
        "fwe": prompt_words(3, fwe_words)(enc),
        "json_kv": json_value,
        "ctx_mrcr_": mrcr_distractor,
        "ctx_babi_": babi_label,
        "ctx_nolima": nolima_character,
    }
    assert tuple(by_prefix) == PREFIXES
    return {t: g for t in guessed_tasks() for p, g in by_prefix.items() if t.startswith(p)}


@dataclass(frozen=True)
class Measured:
    task: str
    length: int
    declared: Chance | None
    measured: float  # percent
    stderr: float  # of the mean over the samples, percent
    samples: int
    draws: int  # random answers to each sample
    wrong_needle: float | None = None  # MRCR: another answer to the needle's own request


def _mean_and_error(per_sample: list[float]) -> tuple[float, float]:
    error = statistics.stdev(per_sample) / len(per_sample) ** 0.5 if len(per_sample) > 1 else 0.0
    return 100 * statistics.fmean(per_sample), 100 * error


def measure(
    spec: TaskSpec, guess: Guess, ctx: BuildContext, length: int, samples: int, draws: int
) -> Measured | None:
    """A random guesser's score on the first ``samples`` prompts at ``length``; None where the task
    does not fit there."""
    rng = random.Random(f"chance:{spec.name}:{length}")
    metric, prefix = spec.metric.name, spec.scoring_prefix

    def mean_score(s: Sample, answer: Guess) -> float:
        return statistics.fmean(
            score_prediction(metric, answer(s, rng), s.answers, prefix)[0] for _ in range(draws)
        )

    try:
        built = [build_sample(spec, ctx, length, i, 42) for i in range(samples)]
    except TaskTooShort:
        return None
    measured, stderr = _mean_and_error([mean_score(s, guess) for s in built])
    wrong = None
    if spec.name.startswith("ctx_mrcr_"):
        wrong = _mean_and_error([mean_score(s, mrcr_wrong_needle) for s in built])[0]
    try:
        declared: Chance | None = chance_at(spec, length)
    except KeyError:  # being measured
        declared = None
    return Measured(spec.name, length, declared, measured, stderr, samples, draws, wrong)


def shipped_context() -> BuildContext:
    from transformers import AutoTokenizer

    from ctxgate.tokens.tokenizers import HFTokenizer

    tokenizer = AutoTokenizer.from_pretrained(ROOT / "fixtures" / "tiny-llama-niah")
    return BuildContext(encoder=PieceEncoder(HFTokenizer(tokenizer)), chat=False)


def run(length: int, samples: int, draws: int, tasks: list[str] | None = None) -> list[Measured]:
    ctx = shipped_context()
    found = guesses(ctx.encoder)
    built = (measure(get_task(t), found[t], ctx, length, samples, draws) for t in tasks or found)
    return [m for m in built if m is not None]


# Where the measured tasks' bands start: each power of two from 16 and the point half way up; CWE's
# and FWE's answer space grows with the length, the others' (a distractor's answer, a label, a
# character) does not, so they have one band measured at a few lengths.
STARTS = sorted({int(2**k * f) for k in range(4, 18) for f in (1, 1.5)} - {196608})
BY_LENGTH = ("cwe", "fwe")
FLAT_AT = (1024, 2048, 4096, 8192)


def band(
    spec: TaskSpec, guess: Guess, ctx: BuildContext, lengths: list[int], samples: int, draws: int
) -> list[float] | None:
    """One row of data/chance.json: the band's start, the mean of its lengths' chance, the lowest
    and highest (two standard errors out), and the prompts built; None where none fits."""
    found = [m for L in lengths if (m := measure(spec, guess, ctx, L, samples, draws))]
    if not found:
        return None
    low = max(0.0, min(m.measured - 2 * m.stderr for m in found))
    high = min(100.0, max(m.measured + 2 * m.stderr for m in found))
    mean = statistics.fmean(m.measured for m in found)
    return [lengths[0], round(mean, 2), round(low, 2), round(high, 2), samples * len(found)]


def band_lengths(start: int) -> list[int]:
    """Lengths spread over the band from ``start``: 16 of them up to 8K, 4 above."""
    stop = next((s for s in STARTS if s > start), start * 2)
    count = 16 if start < 8192 else 4
    return sorted({start + (stop - start) * i // count for i in range(count)})


def write(samples: int, draws: int) -> Path:
    """Measures every task whose spec names itself as its chance's row into data/chance.json."""
    ctx = shipped_context()
    found = guesses(ctx.encoder)
    tasks: dict[str, list[list[float]]] = {}
    for name, guess in found.items():
        spec = get_task(name)
        if spec.chance != name:
            continue
        spans = [band_lengths(s) for s in STARTS] if name in BY_LENGTH else [list(FLAT_AT)]
        rows = [band(spec, guess, ctx, lengths, samples, draws) for lengths in spans]
        tasks[name] = [r for r in rows if r]
        if name not in BY_LENGTH:
            tasks[name][0][0] = 0  # one band: every length
        print(f"{name}: {len(tasks[name])} band(s)", flush=True)
    about = (
        "written by `python bench/chance.py --write`: per task, rows of [band start, chance, low, "
        f"high, prompts built]; {samples} samples x {draws} random answers at each length"
    )
    path = ROOT / "ctxgate" / "data" / "chance.json"
    path.write_text(json.dumps({"about": about, "tasks": tasks}, indent=1) + "\n", "utf-8")
    return path


def parser() -> arguments.Parser:
    ap = arguments.Parser(__file__, description=__doc__.splitlines()[0])
    ap.add_argument("--length", type=arguments.as_written(arguments.length), default="8k")
    ap.add_argument("--samples", type=arguments.whole(1, example=100), default=100)
    ap.add_argument("--draws", type=arguments.whole(1, example=20), default=20)
    ap.add_argument(
        "--tasks",
        type=arguments.tasks_or_all,
        default="",
        help="comma-separated; default: every generated task",
    )
    ap.add_argument(
        "--write", action="store_true", help="measure the bands into ctxgate/data/chance.json"
    )
    return ap


def main(argv: Sequence[str] | None = None) -> None:
    ap = parser()
    args = ap.parse_args(argv)
    if unguessed := [t for t in args.tasks if t not in guessed_tasks()]:
        ap.error(
            f"--tasks {','.join(args.tasks)} holds {', '.join(unguessed)}, not a generated task "
            f"(no random answer is drawn for it): choose from {', '.join(guessed_tasks())}"
        )
    if args.write:
        print(f"wrote {write(args.samples, args.draws)}")
        return
    length = parse_length(args.length)
    print(f"chance at {args.length}: {args.samples} samples x {args.draws} random answers, percent")
    print(
        f"{'task':<20} {'declared':>8} {'low-high':>13} {'measured':>8} {'± s.e.':>7} "
        f"{'wrong needle':>13}"
    )
    for m in run(length, args.samples, args.draws, list(args.tasks) or None):
        wrong = "" if m.wrong_needle is None else f"{m.wrong_needle:>13.2f}"
        said = m.declared or Chance(float("nan"), float("nan"), float("nan"))
        span = f"{said.low:.1f}-{said.high:.1f}"
        print(
            f"{m.task:<20} {said.score:>8.2f} {span:>13} {m.measured:>8.2f} "
            f"{m.stderr:>7.2f} {wrong}"
        )


if __name__ == "__main__":
    main()
