"""HELMET's model-judged metrics as pure functions of verdicts, and ALCE's citation and
correctness metrics as pure functions of an entailment callable: the judge supplies the verdicts.

NarrativeQA: fluency (0/1) x correctness (0-3) / 3. Summaries: fluency x F1 of recall (supported
key points / key points) and precision (supported sentences / the judge's sentence count); zero
denominators give 0, as the reference. ALCE, as the reference evaluates it: newlines become spaces,
``<|im_end|>`` is dropped, and correctness reads the output without citations. A sentence's citation
recall is 1 when its first 3 citations jointly entail it (a repeated one reads its document twice);
its precision credits each citation unless the sentence has several, is jointly entailed, the
citation alone does not entail it and the others still do without that one occurrence. ``[0]`` is
out of range; the reference reads it as the last document, which ``helmet_compat`` reproduces.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from ctxgate.metrics.text import helmet_normalize

AT_MOST_CITATIONS = 3
MIN_SENTENCE_CHARS = 5

# premise, hypothesis -> entailed?
Entails = Callable[[str, str], bool]
Documents = Mapping[int, tuple[str, str]]  # (title, text) by 0-based position


def narrativeqa_score(fluency: int, correctness: int) -> float:
    return fluency * correctness / 3


@dataclass(frozen=True)
class SummaryScore:
    fluency: int
    recall_found: int
    keypoints: int
    precision_found: int
    sentence_count: int

    @property
    def recall(self) -> float:
        return self.recall_found / self.keypoints if self.keypoints else 0.0

    @property
    def precision(self) -> float:
        return self.precision_found / self.sentence_count if self.sentence_count else 0.0

    @property
    def f1(self) -> float:
        r, p = self.recall, self.precision
        return 2 * r * p / (r + p) if r + p else 0.0

    @property
    def score(self) -> float:
        return self.fluency * self.f1


def clean_alce_output(output: str) -> str:
    return re.sub(r"\n+", " ", output).replace("<|im_end|>", "")


def remove_citations(text: str) -> str:
    """ALCE's rule: drop ``[N`` (and one space before it), the `` |`` separators, every ``]``."""
    return re.sub(r" ?\[\d+", "", text).replace(" |", "").replace("]", "")


def asqa_str_em(output: str, short_answers: Sequence[Sequence[str]]) -> float:
    if not short_answers:
        return 0.0
    text = helmet_normalize(remove_citations(clean_alce_output(output)))
    hits = [any(helmet_normalize(a) in text for a in pair) for pair in short_answers]
    return sum(hits) / len(hits)


def qampari_items(output: str) -> list[str]:
    text = clean_alce_output(output).rstrip().rstrip(".").rstrip(",")
    return [x.strip() for x in text.split(",")]


def qampari_rec_top5(output: str, answers: Sequence[Sequence[str]]) -> float:
    if not answers:
        return 0.0
    items = qampari_items(remove_citations(clean_alce_output(output)))
    preds = {p for p in map(helmet_normalize, items) if p}
    found = sum(any(helmet_normalize(alias) in preds for alias in aliases) for aliases in answers)
    return min(5, found) / min(5, len(answers))


_ABBREV = re.compile(
    r"(?:\b(?:Mr|Mrs|Ms|Dr|Prof|St|Jr|Sr|vs|etc|No|Inc|Ltd|Co|Gen|Gov|Sen|Rep|Jan|Feb|Mar|Apr|Jun|"
    r"Jul|Aug|Sep|Sept|Oct|Nov|Dec)|\b[A-Z]|(?:[A-Za-z]\.){1,}[A-Za-z])\.$"
)


def split_sentences(text: str) -> list[str]:
    """Sentences split in the spirit of NLTK's Punkt (the reference's, whose model cannot be
    downloaded here): after . ! or ? (and closing quotes or citations) before whitespace, except
    after common abbreviations and initials."""
    pieces = re.split(r"(?<=[.!?])((?:[\"')\]]|\[\d+\])*)\s+", text.strip())
    out: list[str] = []
    buf = ""
    for i in range(0, len(pieces), 2):
        chunk = pieces[i] + (pieces[i + 1] if i + 1 < len(pieces) else "")
        buf = f"{buf} {chunk}" if buf else chunk
        if not _ABBREV.search(pieces[i]):
            out.append(buf)
            buf = ""
    return [s for s in [*out, buf] if s]


def citation_sentences(output: str, question: str, qampari: bool) -> list[str]:
    text = clean_alce_output(output)
    if qampari:
        return [f"{question} {x}" for x in qampari_items(text)]
    return [s for s in split_sentences(text) if len(s.strip()) >= MIN_SENTENCE_CHARS]


def cited(sentence: str, n_docs: int | None = None, helmet_compat: bool = False) -> list[int]:
    """0-based document indices in citation order (``[3]`` is 2); ``[0]`` is -1, or under
    ``helmet_compat`` the last of ``n_docs``, as the reference's Python indexing reads it."""
    refs = [int(m) - 1 for m in re.findall(r"\[(\d+)", sentence)]
    return [n_docs - 1 if r == -1 and helmet_compat and n_docs else r for r in refs]


@dataclass(frozen=True)
class CitationScore:
    recall: float
    precision: float
    sentences: int
    citations: int


def cited_documents(output: str, question: str, qampari: bool) -> set[int]:
    """The documents a citation check can read (a stored prediction keeps them for the judge): the
    first 3 citations of each sentence; -1 is ``[0]``, the last one under --helmet-compat."""
    sentences = citation_sentences(output, question, qampari)
    return {r for s in sentences for r in cited(s)[:AT_MOST_CITATIONS]}


def citation_scores(
    sents: list[str], docs: Documents, n_docs: int, entails: Entails, helmet_compat: bool = False
) -> CitationScore:
    """``sents``: the output's ``citation_sentences``; ``docs``: the record's ``n_docs`` documents,
    at least those cited. No sentence scores 0 (the reference leaves it out; docs/decisions.md)."""
    if not sents:
        return CitationScore(0.0, 0.0, 0, 0)

    def passage(ids: Sequence[int]) -> str:
        return "\n".join(f"Title: {title}\n{text}" for title, text in (docs[i] for i in ids))

    supported = credited = total = 0
    for sent in sents:
        claim = remove_citations(sent).strip()
        refs = cited(sent, n_docs, helmet_compat)
        if not refs or any(r < 0 or r >= n_docs for r in refs):
            continue  # no citation, or one out of range: recall 0 and no citation counted
        refs = refs[:AT_MOST_CITATIONS]
        total += len(refs)
        joint = entails(passage(refs), claim)
        supported += joint
        if joint and len(refs) > 1:
            for i, r in enumerate(refs):
                alone = entails(passage([r]), claim)
                # needed unless the others entail it with this occurrence left out
                if alone or not entails(passage(refs[:i] + refs[i + 1 :]), claim):
                    credited += 1
        else:
            credited += joint
    precision = credited / total if total else 0.0
    return CitationScore(supported / len(sents), precision, len(sents), total)
