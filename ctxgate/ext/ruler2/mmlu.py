"""``prepare_mmlu.py`` on MMLU (mk_niah easy/medium/hard, mv_niah easy/medium/hard): auxiliary_train
questions under random 7-digit indexes, a test question among them, and a request to copy or solve
the question of one index (``num_order``: each index shared by that many, asked by its rank)."""

from __future__ import annotations

import functools
import math
import random
import re
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from .fitting import Repeated, fit_draw, ordinal, random_number, repeats, search_units

TOTAL = "{context}\n\n{example}{problem}"
NEEDLE = "Question {i}: {question}"
CONTEXTS = {
    "retrieve": "Below are some questions. I will ask you to copy one of them. Please copy and "
    "paste the question you find.\n\n{needles}",
    "niah": "Below are some questions. I will ask you to copy some of them. Please copy and paste "
    "the questions you find.\n\n{needles}",
    "solve": "Below are some questions. I will ask you to solve one of them. Please solve the "
    "question you find and make sure to put the answer (and only answer) inside "
    "\\boxed\\{{\\}}.\n\n{needles}",
}
PROBLEMS = {
    ("retrieve", "single"): "Please copy the {order}Question {i} from the context.",
    ("retrieve", "2steps"): "Please first copy all the Question {i} from the context and then copy "
    "the {order}Question {i} at the end.",
    ("niah", "single"): "Please find and copy all the Question {i} from the context.",
    ("solve", "single"): "Please solve the Question {i} from the context with an answer from A, B, "
    "C, D.",
    ("solve", "2steps"): "Please copy the Question {i} from the context and then solve it with an "
    "answer from A, B, C, D.",
}
EXAMPLES = {
    "retrieve": "\nQuestion {i}: {question}",
    ("solve", "single"): "\nSolution:{solution}",
    ("solve", "2steps"): "\nQuestion {i}: {question}\nSolution:{solution}",
}
SHOTS = (
    "Here are some examples to help you understand the task:\n\n{example}\n\nHere is the actual "
    "task you need to solve:\n\n"
)
LETTERS = "ABCD"


@dataclass(frozen=True)
class Item:
    """A record as the reference holds it: the question with its choices, whitespace collapsed."""

    question: str
    answer: str  # the letter

    @property
    def solution(self) -> str:
        return f" \\boxed{{{self.answer}}}"


def item(question: str, choices: Sequence[str], answer: int) -> Item:
    text = question + "".join(f"\n{LETTERS[k]}. {choices[k]}" for k in range(4))
    return Item(re.sub(r"\s+", " ", text), LETTERS[answer])


@dataclass(frozen=True)
class MmluTask:
    fewshot: int
    num_order: int
    task: str  # retrieve | solve | niah
    algo: str  # single | 2steps

    def example(self) -> str:
        shot = EXAMPLES["retrieve"] if self.task == "retrieve" else EXAMPLES[(self.task, self.algo)]
        return PROBLEMS[(self.task, self.algo)] + shot


@dataclass(frozen=True)
class MmluDraw:
    text: str
    answers: tuple[str, ...]
    index: int  # the test record's


class MmluStream:
    """The reference's one random stream over the needles (test) and the haystack (auxiliary_train);
    an item's index and rank are the last given to it, as the reference's shared dicts keep them."""

    def __init__(
        self, task: MmluTask, needles: Sequence[Item], haystack: Sequence[Item], seed: int
    ):
        self.task, self.needles, self.haystack = task, needles, haystack
        self.rng = random.Random(seed)

    def _numbers(self, units: int) -> list[str]:
        draw = lambda: random_number(self.rng.randint)  # noqa: E731
        order = self.task.num_order
        if order > 0:
            numbers = [draw() for _ in range(math.ceil((units + 1) / order))] * order
        else:
            numbers = [draw() for _ in range(units + 1)]
        self.rng.shuffle(numbers)
        return numbers[: units + 1]

    def draw(self, index: int, units: int) -> MmluDraw:
        """``generate_input_output(index, units)``."""
        picked = self.rng.sample(
            Repeated(range(len(self.haystack)), repeats(units, len(self.haystack))), units
        )
        numbers = self._numbers(units)
        ids: dict[int, str] = {}  # a haystack item's index: the last one given wins
        for k, at in enumerate(picked):
            ids[at] = numbers[k]
        self.rng.shuffle(picked)
        shots = self.rng.sample(picked, self.task.fewshot)
        where = self.rng.randint(0, len(picked))
        order: list[object] = [*picked[:where], None, *picked[where:]]  # None: the test question
        true_id = numbers[-1]
        number_of = lambda x: true_id if x is None else ids[x]  # noqa: E731
        ranks: dict[object, str] = {}
        seen: defaultdict[str, int] = defaultdict(int)
        for x in order:
            seen[number_of(x)] += 1
            ranks[x] = (
                ordinal(seen[number_of(x)]) + " (1 indexed) " if self.task.num_order > 0 else ""
            )
        true = self.needles[index]
        item_of = lambda x: true if x is None else self.haystack[x]  # noqa: E731
        needles = "\n\n".join(
            NEEDLE.format(i=number_of(x), question=item_of(x).question) for x in order
        )
        problem = PROBLEMS[(self.task.task, self.task.algo)].format(i=true_id, order=ranks[None])
        example = ""
        if self.task.fewshot > 0:
            shot = self.task.example()
            example = SHOTS.format(
                example="\n\n".join(
                    shot.format(
                        i=ids[x],
                        question=self.haystack[x].question,
                        order=ranks[x],
                        solution=self.haystack[x].solution,
                    )
                    for x in shots
                )
            )
        text = TOTAL.format(
            context=CONTEXTS[self.task.task].format(needles=needles),
            example=example,
            problem=problem,
        )
        if self.task.task == "retrieve":
            answers: tuple[str, ...] = (true.question,)
        elif self.task.task == "niah":
            answers = tuple(item_of(x).question for x in order if number_of(x) == true_id)
        else:
            answers = (true.answer,)
        return MmluDraw(text, answers, index)


def mmlu_set(
    task: MmluTask,
    data: tuple[Sequence[Item], Sequence[Item]],
    seed: int,
    count: Callable[[str], int],
    fit: tuple[int, int],
) -> list[MmluDraw]:
    """``generate_samples``: ``n`` samples within ``limit`` tokens (``fit``: limit, n)."""
    limit, n = fit
    stream = MmluStream(task, data[0], data[1], seed)
    step = max(10, task.fewshot)
    units = search_units(lambda k: stream.draw(0, k).text, count, limit, step)
    chosen = stream.rng.sample(list(range(len(data[0]))), min(len(data[0]), n))
    return [
        fit_draw(functools.partial(stream.draw, i), lambda d: d.text, count, (units, step, limit))[
            0
        ]
        for i in chosen
    ]
