"""RULER aggregation: common words extraction (CWE) and frequent words extraction (FWE).

Both fit the length by searching the word count. A prompt's token count does not depend on the order of its
words, only on which words and how often, so each search step is a sum over cached per-word token counts instead
of a re-tokenization of the whole text.
"""

from __future__ import annotations

import itertools
import math
import random
import string
import weakref
from collections.abc import Callable, Sequence

from ctxgate.data import words
from ctxgate.metrics.registry import STRING_MATCH_ALL
from ctxgate.tasks.base import BuildContext, Sample, TaskSpec, TaskTooShort, make_frame
from ctxgate.tasks.registry import register
from ctxgate.textcodec import PieceEncoder

CWE_HEAD = (
    "Below is a numbered list of words. In these words, some appear more often than others. "
    "Memorize the ones that appear most often.\n"
)
CWE_TAIL = "\nQuestion: What are the 10 most common words in the above list?"
CWE_PREFIX = " Answer: The top 10 words that appear most often in the list are:"
NUM_CW = 10

FWE_HEAD = (
    "Read the following coded text and track the frequency of each coded word. Find the three most "
    "frequently appeared coded words. "
)
FWE_TAIL = (
    "\nQuestion: Do not provide any explanation. Please ignore the dots '....'. What are the three most "
    "frequently appeared words in the above coded text?"
)
FWE_PREFIX = " Answer: According to the coded text above, the three most frequently appeared words are:"
ZETA_2 = math.pi**2 / 6


def largest_fitting(cost: Callable[[int], int], lo: int, hi: int, budget: int) -> int:
    """Largest n in [lo, hi] with cost(n) <= budget (cost non-decreasing), or lo - 1 if none."""
    if cost(lo) > budget:
        return lo - 1
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if cost(mid) <= budget:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _numbered(items: Sequence[str]) -> list[str]:
    """Pieces of "1. w 2. w ...": index pieces and word pieces, each cacheable on its own."""
    pieces = []
    for i, w in enumerate(items):
        pieces.append(f"{i + 1}." if i == 0 else f" {i + 1}.")
        pieces.append(" " + w)
    return pieces


class _IndexCosts:
    """Prefix sums of the token counts of " 1.", " 2.", ... for one encoder, grown on demand."""

    def __init__(self) -> None:
        self.prefix = [0]

    def upto(self, enc: PieceEncoder, m: int) -> int:
        while len(self.prefix) <= m:
            start = len(self.prefix)
            batch = [f"{k}." if k == 1 else f" {k}." for k in range(start, max(m + 1, start * 2))]
            sums = itertools.accumulate(map(len, enc.encode_many(batch)), initial=self.prefix[-1])
            self.prefix.extend(list(sums)[1:])
        return self.prefix[m]


_INDEX_COSTS: weakref.WeakKeyDictionary[PieceEncoder, _IndexCosts] = weakref.WeakKeyDictionary()


def _cwe_list(rng: random.Random, chosen: Sequence[str], cw: int, ucw: int) -> list[str]:
    items = list(chosen[:NUM_CW]) * cw + list(chosen[NUM_CW:]) * ucw
    rng.shuffle(items)
    return items


def build_cwe(ctx: BuildContext, length: int, index: int, rng: random.Random) -> Sample:
    enc = ctx.encoder
    gen = 120
    index_costs = _INDEX_COSTS.setdefault(enc, _IndexCosts())
    vocab = words.vocabulary()
    short = length < 4096  # RULER: counts 6/1 and a 20-word example under 4K
    plans = [(40, 10, 3, 30, 3)] if not short else [(20, 3, 1, 6, 1)]
    if short:  # below RULER's lengths: drop the example, then fewer repeats, before giving up
        plans += [(0, 0, 0, f, 1) for f in (6, 5, 4, 3, 2)]
    for ex_words, ex_cw, ex_ucw, cw, ucw in plans:
        example = ""
        if ex_words:
            ex_chosen = rng.sample(vocab, ex_words)
            ex_items = _cwe_list(rng, ex_chosen, ex_cw, ex_ucw)
            example = (
                CWE_HEAD
                + "".join(_numbered(ex_items))
                + CWE_TAIL
                + CWE_PREFIX
                + " "
                + " ".join(f"{i + 1}. {w}" for i, w in enumerate(ex_chosen[:NUM_CW]))
                + "\n"
            )
        frame = make_frame(ctx, [example, CWE_HEAD] if example else [CWE_HEAD], [CWE_TAIL], CWE_PREFIX)
        budget = frame.budget(length, gen)
        order = rng.sample(vocab, len(vocab))
        word_cost = list(itertools.accumulate(map(len, enc.encode_many([" " + w for w in order])), initial=0))

        def cost(n: int, cw: int = cw, ucw: int = ucw) -> int:
            m = NUM_CW * cw + (n - NUM_CW) * ucw
            return index_costs.upto(enc, m) + cw * word_cost[NUM_CW] + ucw * (word_cost[n] - word_cost[NUM_CW])

        n = largest_fitting(cost, NUM_CW, len(vocab), budget)
        if n >= NUM_CW:
            break
    else:
        raise TaskTooShort(f"cwe cannot be built at length {length}: not even 10 words fit; choose a longer --lengths")
    items = _cwe_list(rng, order[:n], cw, ucw)
    ids = frame.pre + tuple(i for p in enc.encode_many(_numbered(items)) for i in p) + frame.post
    return Sample(
        "cwe",
        length,
        index,
        ids,
        tuple(order[:NUM_CW]),
        CWE_PREFIX,
        {"num_words": n, "freq_cw": cw, "freq_ucw": ucw, "example_words": ex_words},
    )


def build_fwe(ctx: BuildContext, length: int, index: int, rng: random.Random, alpha: float = 2.0) -> Sample:
    enc = ctx.encoder
    gen = 50
    vocab_size = max(5, (length - 50) // 50)
    found: set[str] = set()
    while len(found) < vocab_size:
        found.add("".join(rng.choices(string.ascii_lowercase, k=6)))
    vocab = sorted(found)
    rng.shuffle(vocab)
    vocab[0] = "..."  # the top-ranked "word" is noise
    frame = make_frame(ctx, [FWE_HEAD], [FWE_TAIL], FWE_PREFIX)
    budget = frame.budget(length, gen)
    sizes = [len(ids) for ids in enc.encode_fresh([" " + w for w in vocab])]
    weights = [k**-alpha / ZETA_2 for k in range(1, vocab_size + 1)]

    def counts(num_words: int) -> list[int]:
        return [int(num_words * w) for w in weights]

    def cost(num_words: int) -> int:
        return sum(c * s for c, s in zip(counts(num_words), sizes))

    num_words = largest_fitting(cost, 1, 4 * max(budget, 1), budget)
    cnt = counts(num_words)
    if num_words < 1 or min(cnt[1:4]) < 1 or cnt[3] == cnt[4]:
        raise TaskTooShort(
            f"fwe cannot be built at length {length}: too few words fit to rank the top three; "
            "choose a longer --lengths"
        )
    items = [w for w, c in zip(vocab, cnt) for _ in range(c)]
    rng.shuffle(items)
    piece_ids = dict(zip(vocab, enc.encode_fresh([" " + w for w in vocab])))
    first = enc.encode_fresh([items[0]])[0]
    context = list(first) + [i for w in items[1:] for i in piece_ids[w]]
    ids = frame.pre + tuple(context) + frame.post
    return Sample(
        "fwe", length, index, ids, tuple(vocab[1:4]), FWE_PREFIX, {"num_words": num_words, "counts_top5": cnt[:5]}
    )


@register
def cwe() -> TaskSpec:
    return TaskSpec(
        name="cwe",
        suite="ruler",
        chat_template=True,
        category="aggregation",
        metric=STRING_MATCH_ALL,
        tokens_to_generate=120,
        build=build_cwe,
        description="10 common words (30x) among uncommon ones (3x)",
    )


@register
def fwe() -> TaskSpec:
    return TaskSpec(
        name="fwe",
        suite="ruler",
        chat_template=True,
        category="aggregation",
        metric=STRING_MATCH_ALL,
        tokens_to_generate=50,
        build=build_fwe,
        description="three most frequent coded words, zeta(2) frequencies",
    )
