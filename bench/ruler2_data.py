"""Writes stand-in MMLU and HotpotQA files as large as the real ones, for timing RULERv2's builds
at full size where the hub cannot be reached.

    python bench/ruler2_data.py out/ruler2-data
    python bench/datagen.py --suite ruler2 --baseline none --data-dir out/ruler2-data

The files go where ``--data-dir`` finds them (``ruler2/mmlu/{test,auxiliary_train}.jsonl``,
``ruler2/hotpotqa/{validation,train}.jsonl``) with the real splits' record counts and columns:
MMLU's 14,042 test and 99,842 auxiliary_train questions with four choices; HotpotQA distractor's
7,405 validation and 90,447 train records, each ten paragraphs of a few sentences, two of them the
supporting facts. The words are wonderwords' (shipped with ctxgate for RULERv2's keys), drawn at
seed 0; the sizes follow the real sets' shape as their cards describe it (an auxiliary_train
question is mostly a RACE passage of some 250 words, a test question some 40, a paragraph four
sentences of some 20 words), not measured from them. ``--fraction`` scales every count, for a
quick run. Peak memory and time of the write are the script's own, printed at the end."""

from __future__ import annotations

import functools
import json
import random
import resource
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from importlib import resources
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import arguments  # noqa: E402

# the real splits' record counts (cais/mmlu "all"; hotpotqa/hotpot_qa "distractor")
MMLU = {"test": 14_042, "auxiliary_train": 99_842}
HOTPOTQA = {"validation": 7_405, "train": 90_447}
QUESTION_WORDS = {"test": (10, 70), "auxiliary_train": (40, 460)}  # a range, drawn uniformly
PARAGRAPHS, GOLD, SENTENCES, SENTENCE_WORDS = 10, 2, (2, 6), (8, 32)


def vocabulary() -> list[str]:
    folder = resources.files("ctxgate.ext.ruler2").joinpath("data")
    words: list[str] = []
    for name in ("wonderwords_nouns.txt", "wonderwords_adjectives.txt"):
        words += folder.joinpath(name).read_text("utf-8").split()
    return words


class Writer:
    """Random sentences of the vocabulary's words, from one seeded generator."""

    def __init__(self, seed: int) -> None:
        self.rng, self.words = random.Random(seed), vocabulary()

    def words_of(self, low: int, high: int) -> str:
        return " ".join(self.rng.choices(self.words, k=self.rng.randint(low, high)))

    def sentence(self) -> str:
        return self.words_of(*SENTENCE_WORDS).capitalize() + ". "

    def mmlu(self, split: str, index: int) -> dict[str, Any]:
        question = self.words_of(*QUESTION_WORDS[split]).capitalize() + "?"
        choices = [self.words_of(1, 12) for _ in range(4)]
        return {"question": question, "choices": choices, "answer": self.rng.randrange(4)}

    def hotpotqa(self, index: int) -> dict[str, Any]:
        titles = [f"{self.words_of(1, 3).title()} {index}-{k}" for k in range(PARAGRAPHS)]
        sentences = [[self.sentence() for _ in range(self.rng.randint(*SENTENCES))] for _ in titles]
        gold = self.rng.sample(titles, GOLD)
        return {
            "question": self.words_of(8, 24).capitalize() + "?",
            "answer": self.words_of(1, 3),
            "context": {"title": titles, "sentences": sentences},
            "supporting_facts": {"title": gold, "sent_id": [0] * GOLD},
        }


def write(path: Path, records: Iterator[dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as out:
        out.writelines(json.dumps(record) + "\n" for record in records)


def parser() -> arguments.Parser:
    ap = arguments.Parser(__file__, description=__doc__.splitlines()[0])
    ap.add_argument(
        "folder", type=arguments.out_folder, help="the --data-dir to write (made if missing)"
    )
    ap.add_argument(
        "--fraction",
        type=arguments.number(0, 1, example=0.01, closed=True),
        default=1.0,
        help="of the real sets' record counts, for a quick run (default 1)",
    )
    return ap


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    start, writer = time.perf_counter(), Writer(0)
    makers: list[tuple[str, int, Callable[[int], dict[str, Any]]]] = [
        *((f"mmlu/{s}", n, functools.partial(writer.mmlu, s)) for s, n in MMLU.items()),
        *((f"hotpotqa/{s}", n, writer.hotpotqa) for s, n in HOTPOTQA.items()),
    ]
    for name, full, make in makers:
        n = max(1, round(full * args.fraction))
        path = args.folder / "ruler2" / f"{name}.jsonl"
        write(path, (make(i) for i in range(n)))
        print(f"{path}: {n} records, {path.stat().st_size / 2**20:.1f} MB")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"written in {time.perf_counter() - start:.1f} s, peak memory {peak:.0f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
