"""``prepare_qa.py`` on HotpotQA (qa basic/easy/medium/hard): train paragraphs under random 7-digit
indexes, a validation question's gold and distractor paragraphs among them, and a request for the
index of a document, of the document that answers a question, or the answer itself."""

from __future__ import annotations

import functools
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from .fitting import Repeated, fit_draw, random_number, repeats, search_units

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


@dataclass(frozen=True)
class QaDraw:
    text: str
    answers: tuple[str, ...]


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
        gold = [(self._number(), t) for t in needle.gold]
        distractors = [(self._number(), t) for t in needle.distractors]
        remaining = len(self.haystack) - len(set(needle.gold + needle.distractors))
        pool = Repeated(range(len(self.haystack)), repeats(units, remaining))
        picked = self.rng.sample(pool, units)
        docs = [(self._number(), self.haystack[k]) for k in picked] + gold
        if units > 0:
            docs += distractors
        self.rng.shuffle(docs)
        needles = "\n\n".join(NEEDLE.format(i=i, text=t) for i, t in docs)
        context = CONTEXTS[self.kind if self.kind in CONTEXTS else "solve"].format(needles=needles)
        answers: tuple[str, ...]
        if self.kind == "doc":
            problem, answers = PROBLEMS["doc"].format(text=gold[0][1]), (gold[0][0],)
        elif self.kind == "question":
            problem = PROBLEMS["question"].format(question=needle.question)
            answers = tuple(i for i, _ in gold)
        else:
            problem, answers = PROBLEMS[self.kind].format(question=needle.question), needle.answers
        return QaDraw(TOTAL.format(context=context, problem=problem), answers)


def qa_set(
    kind: str,
    data: tuple[Sequence[Needle], Sequence[str]],
    seed: int,
    count: Callable[[str], int],
    fit: tuple[int, int],
) -> list[QaDraw]:
    """``generate_samples``: the first ``n`` validation records within ``limit`` tokens."""
    limit, n = fit
    stream = QaStream(kind, data[0], data[1], seed)
    step = 5
    units = search_units(lambda k: stream.draw(0, k).text, count, limit, step)
    return [
        fit_draw(functools.partial(stream.draw, i), lambda d: d.text, count, (units, step, limit))[
            0
        ]
        for i in range(n)
    ]
