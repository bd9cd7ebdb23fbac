"""HELMET's application metrics: label EM, ROUGE-L F1, NDCG@10 of a parsed ranking, multiple choice.
Pure functions of strings; the registry takes the better of the raw and the parsed output."""

from __future__ import annotations

import math
import re
import string
from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Any

from ctxgate.metrics.text import helmet_normalize

_PUNCT = str.maketrans("", "", string.punctuation)
_RANK_NOISE = re.compile(r"[\[\]:]")
_CHAIN = re.compile(r"(\d+)(?:\s*>\s*(\d+))*")


def exact_match(prediction: str, references: Sequence[str]) -> float:
    """HELMET EM: the normalized prediction is a normalized reference ("1" does not match "10")."""
    pred = helmet_normalize(prediction)
    return max(float(pred == helmet_normalize(r)) for r in references)


@lru_cache(maxsize=1)
def _rouge() -> Any:
    from rouge_score import rouge_scorer  # imports nltk's stemmer: only when a ROUGE task is scored

    return rouge_scorer.RougeScorer(["rougeL"], use_stemmer=True)


def rouge_l_f1(prediction: str, references: Sequence[str]) -> float:
    """rouge-score's rougeL F-measure, Porter-stemmed, best over the references (as HELMET)."""
    scorer = _rouge()
    return max(scorer.score(target=r, prediction=prediction)["rougeL"].fmeasure for r in references)


def parse_rankings(output: str) -> dict[str, int]:
    """HELMET's ranking parser: brackets, colons and every "id" go, lowercased; the longest
    ``n > n > ...`` chain wins (the first of equal length); scores fall with the position, a
    duplicate keeps its first; with no digits, the whole cleaned text is one unmatched id."""
    cleaned = _RANK_NOISE.sub("", output).lower().replace("id", "")
    longest = max((match.group(0) for match in _CHAIN.finditer(cleaned)), key=len, default="")
    ranked = [n.strip() for n in longest.split(">") if n.strip().isdigit()]
    ranked = ranked if longest else [cleaned]
    scores: dict[str, int] = {}
    for position, pid in enumerate(ranked):
        scores.setdefault(pid, len(ranked) - position)
    return scores


def ndcg_at(scores: Mapping[str, float], qrels: Mapping[str, int], k: int = 10) -> float:
    """trec_eval's ndcg_cut_k as pytrec_eval computes it: documents by falling score (ties: larger
    id first), gain = label, discount log2(rank + 1), ideal: every judged document by label."""
    by_id = sorted(scores.items(), key=lambda kv: kv[0], reverse=True)
    ranked = sorted(by_id, key=lambda kv: -kv[1])[:k]  # stable: ties keep the larger id first
    dcg = sum(qrels.get(pid, 0) / math.log2(rank + 2) for rank, (pid, _) in enumerate(ranked))
    ideal = sorted((rel for rel in qrels.values() if rel > 0), reverse=True)[:k]
    idcg = sum(rel / math.log2(rank + 2) for rank, rel in enumerate(ideal))
    return dcg / idcg if idcg > 0 else 0.0


def qrels_from_references(references: Sequence[str]) -> dict[str, int]:
    """Re-rank references are the passages' relevance judgments, written ``ID:LABEL``."""
    qrels: dict[str, int] = {}
    for ref in references:
        pid, sep, label = ref.rpartition(":")
        if not sep or not label.lstrip("-").isdigit():
            raise ValueError(f"re-rank reference {ref!r} is not ID:LABEL (e.g. '7:2')")
        qrels[pid] = int(label)
    return qrels


def _plain(text: str) -> str:
    # Like HELMET's normalization without dropping articles: "A" must stay "a" to name an option.
    return " ".join(text.lower().translate(_PUNCT).split())


def choice_correct(outputs: Sequence[str], letter: str, option: str) -> float:
    """Multiple choice, fixed: an output (raw or parsed) that is the gold letter or option, or holds
    the lettered option ("B. text"). An empty output is never correct."""
    wanted = {_plain(letter), _plain(option)}
    if any(o.strip() and _plain(o) in wanted for o in outputs):
        return 1.0
    return float(any(option.lower() in o.lower() for o in outputs if o.strip()))


def choice_correct_helmet(outputs: Sequence[str], letter: str, option: str) -> float:
    """HELMET's multiple-choice rule, bug included: EM after its normalization, which deletes the
    article "a", so gold "A" and an empty output both normalize to "" and match."""
    em = max(exact_match(o, [letter, option]) for o in outputs)
    return float(em or any(option.lower() in o.lower() for o in outputs))
