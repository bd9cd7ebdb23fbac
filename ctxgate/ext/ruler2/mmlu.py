"""``prepare_mmlu.py`` on MMLU (mk_niah easy/medium/hard, mv_niah easy/medium/hard): auxiliary_train
questions under random 7-digit indexes, a test question among them, and a request to copy or solve
the question of one index (``num_order``: each index shared by that many, asked by its rank)."""

from __future__ import annotations

import functools
import math
import random
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from .counting import Measure, Tally, Unsplit, is_cut
from .fitting import (
    Fitted,
    Repeated,
    fit_each,
    ordinal,
    random_number,
    repeats,
    search_units,
    shuffle,
)

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
    return Item(collapse(text), LETTERS[answer])


def collapse(text: str) -> str:
    """``re.sub(r"\\s+", " ", text)``, the reference's, some 10x faster (the 100,000 records of
    MMLU's auxiliary_train took 5 s): ``str.split`` and ``\\s`` take the same characters for
    whitespace (``str.isspace``), and a run at either end becomes a space."""
    words = text.split()
    joined = " ".join(words)
    if text[:1].isspace():
        joined = " " + joined
    if words and text[-1:].isspace():
        joined += " "
    return joined


@dataclass(frozen=True)
class MmluTask:
    fewshot: int
    num_order: int
    task: str  # retrieve | solve | niah
    algo: str  # single | 2steps

    def example(self) -> str:
        shot = EXAMPLES["retrieve"] if self.task == "retrieve" else EXAMPLES[(self.task, self.algo)]
        return PROBLEMS[(self.task, self.algo)] + shot


TEST = -1  # the test question's place among the haystack's


@dataclass(eq=False)
class MmluDraw:
    """A draw: each question's number and item (a haystack place, or ``TEST``), the context's head
    and what follows the questions; its text is written where it is read."""

    order: list[tuple[str, int]]
    head: str
    after: str
    answers: tuple[str, ...]
    items: tuple[Sequence[Item], Item]  # the haystack, the test item

    def question(self, place: int) -> str:
        haystack, test = self.items
        return (test if place == TEST else haystack[place]).question

    @functools.cached_property
    def text(self) -> str:
        needles = "\n\n".join(NEEDLE.format(i=i, question=self.question(x)) for i, x in self.order)
        return self.head + needles + self.after


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
        shuffle(self.rng, numbers)
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
        shuffle(self.rng, picked)
        shots = self.rng.sample(picked, self.task.fewshot)
        where = self.rng.randint(0, len(picked))
        ids[TEST] = numbers[-1]
        order = [*picked[:where], TEST, *picked[where:]]
        ranks: dict[int, str] = {}
        seen: defaultdict[str, int] = defaultdict(int)
        for x in order:
            seen[ids[x]] += 1
            ranks[x] = ordinal(seen[ids[x]]) + " (1 indexed) " if self.task.num_order > 0 else ""
        true = self.needles[index]
        problem = PROBLEMS[(self.task.task, self.task.algo)].format(i=ids[TEST], order=ranks[TEST])
        if self.task.task == "retrieve":
            answers: tuple[str, ...] = (true.question,)
        elif self.task.task == "niah":
            answers = tuple(
                (true if x == TEST else self.haystack[x]).question
                for x in order
                if ids[x] == ids[TEST]
            )
        else:
            answers = (true.answer,)
        return MmluDraw(
            [(ids[x], x) for x in order],
            CONTEXTS[self.task.task].format(needles=""),  # the context leads the prompt
            TOTAL.format(context="", example=self._example(shots, ids, ranks), problem=problem),
            answers,
            (self.haystack, true),
        )

    def _example(self, shots: Sequence[int], ids: dict[int, str], ranks: dict[int, str]) -> str:
        if self.task.fewshot <= 0:
            return ""
        shot = self.task.example()
        return SHOTS.format(
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


class MmluParts:
    """A draw's tokens from its parts, cut before each number and after it: the head, each
    question with the next one's "Question" (counted once per item), the numbers (encoded together)
    and the last question with what follows."""

    def __init__(self, tally: Tally, task: MmluTask, haystack: Sequence[Item]) -> None:
        self.tally = tally
        lead, self.rest = NEEDLE.split(" {i}")
        self.form = self.rest.replace("{question}", "{0.question}") + "\n\n" + lead
        head = CONTEXTS[task.task].format(needles="") + lead
        joins = [head, " 1", self.form.format(Item("Q", "A")), " 1", self.rest.format(question="Q")]
        if not all(map(is_cut, joins, joins[1:])):
            raise Unsplit("the template's parts do not meet at cuts")
        self.first = tally.count(head)
        self.table = tally.table(haystack, self.form)

    def __call__(self, drawn: MmluDraw) -> int:
        *before, (_, last) = drawn.order
        tokens = self.first + self.tally.fresh([" " + i for i, _ in drawn.order])
        tokens += self.table.total([x for _, x in before if x != TEST])
        tests = sum(1 for _, x in before if x == TEST)
        if tests:
            tokens += tests * self.tally.count(self.form.format(drawn.items[1]))
        return tokens + self.tally.count(
            self.rest.format(question=drawn.question(last)) + drawn.after
        )


def mmlu_set(
    task: MmluTask,
    data: tuple[Sequence[Item], Sequence[Item]],
    seed: int,
    count: Callable[[str], int],
    fit: tuple[int, int],
    tally: Tally | None = None,
) -> Iterator[Fitted]:
    """``generate_samples``: ``n`` samples within ``limit`` tokens (``fit``: limit, n), as
    ``count`` counts them (``tally``: from the draws' parts, the same counts), each drawn when
    asked for."""
    limit, n = fit
    stream = MmluStream(task, data[0], data[1], seed)
    parts = None if tally is None else MmluParts(tally, task, data[1])
    measure = Measure(count, lambda d: d.text, parts)
    step = max(10, task.fewshot)
    units = search_units(lambda k: stream.draw(0, k), measure, limit, step)
    chosen = stream.rng.sample(list(range(len(data[0]))), min(len(data[0]), n))
    draws = (functools.partial(stream.draw, i) for i in chosen)
    yield from fit_each(draws, measure, (units, step, limit))
