"""``prepare_qa.py`` on HotpotQA (qa basic/easy/medium/hard): train paragraphs under random 7-digit
indexes, a validation question's gold and distractor paragraphs among them, and a request for the
index of a document, of the document that answers a question, or the answer itself."""

from __future__ import annotations

import functools
import random
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from .counting import Measure, Tally, Unsplit, is_cut
from .fitting import (
    Fitted,
    Repeated,
    fit_each,
    random_number,
    repeats,
    search_units,
    shuffle,
)

TOTAL = "{context}\n\n{problem}"
NEEDLE = "Document {i}:\n{text}"
CONTEXTS = {
    "doc": "Below are some documents. I will give you a text at the end. Please find the document "
    "index of the text. Only give me the index without any document contents.\n\n{needles}",
    "question": "Below are some documents. I will give you a question at the end. Please find the "
    "index of the most relevant document that can help answer the question. Only give me the index "
    "without any document contents.\n\n{needles}",
    "solve": "Below are some documents. I will ask you to answer a question based on the "
    "documents. Please answer the question.\n\n{needles}",
}
PROBLEMS = {
    "doc": "Text: {text}\nMost relevant document index:",
    "question": "Question: {question}\nIndex of the most relevant document that can help answer "
    "the question:",
    "single": "Please answer the following question based on the documents.\n\n"
    "Question: {question}",
    "2steps": "Please first find and copy paste the documents relevant to the following question "
    "and then answer it based on the documents you find.\n\nQuestion: {question}",
}


@dataclass(frozen=True)
class Needle:
    """A validation record: its question, answers, gold and distractor paragraphs' texts."""

    question: str
    answers: tuple[str, ...]
    gold: tuple[str, ...]
    distractors: tuple[str, ...]


@dataclass(eq=False)
class QaDraw:
    """A draw: each document's number, haystack place (-1: the record's own) and text, the
    context's head and the problem after the documents; its text is written where it is read."""

    docs: list[tuple[str, int, str]]
    head: str
    after: str
    answers: tuple[str, ...]

    @functools.cached_property
    def text(self) -> str:
        needles = "\n\n".join(NEEDLE.format(i=i, text=t) for i, _, t in self.docs)
        return self.head + needles + self.after


class QaStream:
    """The reference's one random stream; ``kind``: doc, question (retrieve) or single, 2steps."""

    def __init__(self, kind: str, needles: Sequence[Needle], haystack: Sequence[str], seed: int):
        self.kind, self.needles, self.haystack = kind, needles, haystack
        self.rng = random.Random(seed)

    def _number(self) -> str:
        return random_number(self.rng.randint)

    def draw(self, index: int, units: int) -> QaDraw:
        """``generate_input_output(index, units)`` with no examples."""
        needle = self.needles[index]
        gold = [(self._number(), -1, t) for t in needle.gold]
        distractors = [(self._number(), -1, t) for t in needle.distractors]
        remaining = len(self.haystack) - len(set(needle.gold + needle.distractors))
        pool = Repeated(range(len(self.haystack)), repeats(units, remaining))
        picked = self.rng.sample(pool, units)
        docs = [(self._number(), k, self.haystack[k]) for k in picked] + gold
        if units > 0:
            docs += distractors
        shuffle(self.rng, docs)
        head = CONTEXTS[self.kind if self.kind in CONTEXTS else "solve"].format(needles="")
        answers: tuple[str, ...]
        if self.kind == "doc":
            problem, answers = PROBLEMS["doc"].format(text=gold[0][2]), (gold[0][0],)
        elif self.kind == "question":
            problem = PROBLEMS["question"].format(question=needle.question)
            answers = tuple(i for i, _, _ in gold)
        else:
            problem, answers = PROBLEMS[self.kind].format(question=needle.question), needle.answers
        # the context leads the prompt: its head, then the documents, then the rest of TOTAL
        return QaDraw(docs, head, TOTAL.format(context="", problem=problem), answers)


class QaParts:
    """A draw's tokens from its parts, cut before each number and after it: the head, each
    document with the next one's "Document" (a haystack's counted once), the numbers (encoded
    together) and the last document with the problem."""

    def __init__(self, tally: Tally, kind: str, haystack: Sequence[str]) -> None:
        self.tally = tally
        lead, self.rest = NEEDLE.split(" {i}")
        self.form = self.rest.replace("{text}", "{0}") + "\n\n" + lead
        head = CONTEXTS[kind if kind in CONTEXTS else "solve"].format(needles="") + lead
        joins = [head, " 1", self.form.format("T"), " 1", self.rest.format(text="T")]
        if not all(map(is_cut, joins, joins[1:])):
            raise Unsplit("the template's parts do not meet at cuts")
        self.first = tally.count(head)
        self.table = tally.table(haystack, self.form)

    def __call__(self, drawn: QaDraw) -> int:
        *before, (_, _, last) = drawn.docs
        tokens = self.first + self.tally.fresh([" " + i for i, _, _ in drawn.docs])
        tokens += self.table.total([k for _, k, _ in before if k >= 0])
        tokens += sum(self.tally.counts([self.form.format(t) for _, k, t in before if k < 0]))
        return tokens + self.tally.count(self.rest.format(text=last) + drawn.after)


def qa_set(
    kind: str,
    data: tuple[Sequence[Needle], Sequence[str]],
    seed: int,
    count: Callable[[str], int],
    fit: tuple[int, int],
    tally: Tally | None = None,
) -> Iterator[Fitted]:
    """``generate_samples``: the first ``n`` validation records within ``limit`` tokens, as
    ``count`` counts them (``tally``: from the draws' parts, the same counts), each drawn when
    asked for."""
    limit, n = fit
    stream = QaStream(kind, data[0], data[1], seed)
    parts = None if tally is None else QaParts(tally, kind, data[1])
    measure = Measure(count, lambda d: d.text, parts)
    step = 5
    units = search_units(lambda k: stream.draw(0, k), measure, limit, step)
    draws = (functools.partial(stream.draw, i) for i in range(n))
    yield from fit_each(draws, measure, (units, step, limit))
