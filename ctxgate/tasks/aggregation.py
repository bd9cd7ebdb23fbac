"""RULER aggregation: common words (CWE) and frequent words (FWE) extraction, fit to the length by
searching the word count, each step a sum of cached per-word token counts."""

from __future__ import annotations

import bisect
import functools
import itertools
import math
import random
import string
import threading
import weakref
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, TypeAlias

from ctxgate.data import words
from ctxgate.metrics.registry import STRING_MATCH_ALL
from ctxgate.tasks.base import BuildContext, Builder, Job, Sample, TaskSpec, distinct, shuffle
from ctxgate.tasks.registration import register_all
from ctxgate.tokens.codec import PieceEncoder
from ctxgate.tokens.ids import Spans, gather, id_list

if TYPE_CHECKING:
    import numpy as np

# word positions in a word list
Order: TypeAlias = "Sequence[int] | np.ndarray"

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
    "\nQuestion: Do not provide any explanation. Please ignore the dots '....'. What are the "
    "three most frequently appeared words in the above coded text?"
)
FWE_PREFIX = (
    " Answer: According to the coded text above, the three most frequently appeared words are:"
)
ZETA_2 = math.pi**2 / 6


def largest_fitting(cost: Callable[[int], int], lo: int, hi: int, budget: int) -> int:
    """Largest n in [lo, hi] with cost(n) <= budget (cost non-decreasing), or lo - 1."""
    return lo - 1 + bisect.bisect_right(range(lo, hi + 1), budget, key=cost)


def _numbered(items: Sequence[str]) -> str:
    return " ".join(f"{i + 1}. {w}" for i, w in enumerate(items))


class _Pieces:
    """One encoder's ids of CWE's index pieces and " word"s, as flat arrays for numpy."""

    def __init__(self, enc: PieceEncoder) -> None:
        import numpy as np

        self.enc = enc
        self.index_ids = np.zeros(0, dtype=np.int64)  # the ids of pieces 1, 2, ...
        self.prefix = [0]  # piece k is index_ids[prefix[k - 1]:prefix[k]]
        self.words: dict[tuple[str, ...], Spans] = {}
        self.lock = threading.Lock()
        self._prefix_array: np.ndarray | None = None

    def index_upto(self, m: int) -> int:
        import numpy as np

        with self.lock:
            while len(self.prefix) <= m:
                start = len(self.prefix)
                stop = max(m + 1, start * 2)
                batch = [f"{k}." if k == 1 else f" {k}." for k in range(start, stop)]
                flat, starts, sizes = self.enc.encode_spans(batch)
                self.index_ids = np.concatenate([self.index_ids, gather(flat, starts, sizes)])
                last = self.prefix[-1]
                self.prefix.extend(last + n for n in itertools.accumulate(sizes.tolist()))
                self._prefix_array = None
        return self.prefix[m]

    def word_ids(self, vocab: tuple[str, ...]) -> Spans:
        """The " word" ids: word i is ``flat[starts[i]:starts[i] + sizes[i]]``."""
        with self.lock:
            if vocab not in self.words:
                self.words[vocab] = self.enc.encode_spans([" " + w for w in vocab])
            return self.words[vocab]

    def body(self, vocab: tuple[str, ...], items: Order) -> list[int]:
        """The ids of "1. w 2. w ...", the words given by their positions in ``vocab``."""
        import numpy as np

        m = len(items)
        self.index_upto(m)
        word_flat, word_starts, word_sizes = self.word_ids(vocab)
        with self.lock:
            if self._prefix_array is None:
                self._prefix_array = np.array(self.prefix, dtype=np.int64)
            index_ids, prefix = self.index_ids, self._prefix_array
        at = np.asarray(items, dtype=np.int64)
        # index k then word k, as where each starts in ``source`` and its size
        source = np.concatenate([index_ids[: prefix[m]], word_flat])
        starts, sizes = np.empty(2 * m, dtype=np.int64), np.empty(2 * m, dtype=np.int64)
        starts[0::2], sizes[0::2] = prefix[:m], np.diff(prefix[: m + 1])
        starts[1::2], sizes[1::2] = word_starts[at] + prefix[m], word_sizes[at]
        return id_list(gather(source, starts, sizes))


_PIECES: weakref.WeakKeyDictionary[PieceEncoder, _Pieces] = weakref.WeakKeyDictionary()


def build_cwe(ctx: BuildContext, job: Job) -> Sample:
    enc, rng, length = ctx.encoder, job.rng, job.length
    pieces = _PIECES.get(enc) or _PIECES.setdefault(enc, _Pieces(enc))
    vocab = words.vocabulary()
    short = length < 4096  # RULER: counts 6/1 and a 20-word example under 4K
    # below RULER's lengths: drop the example, then fewer repeats, before giving up
    if short:
        plans = [(20, 3, 1, 6, 1)] + [(0, 0, 0, f, 1) for f in (6, 5, 4, 3, 2)]
    else:
        plans = [(40, 10, 3, 30, 3)]
    for ex_words, ex_cw, ex_ucw, cw, ucw in plans:
        example = ""
        if ex_words:
            ex_chosen = rng.sample(vocab, ex_words)
            ex_items = list(ex_chosen[:NUM_CW]) * ex_cw + list(ex_chosen[NUM_CW:]) * ex_ucw
            rng.shuffle(ex_items)
            answer = _numbered(ex_chosen[:NUM_CW])
            example = f"{CWE_HEAD}{_numbered(ex_items)}{CWE_TAIL}{CWE_PREFIX} {answer}\n"
        frame = ctx.frame(example + CWE_HEAD, CWE_TAIL, CWE_PREFIX)
        budget = frame.budget(length, job.gen)
        word_list = vocab
        # the words by their positions: sampling the positions draws as sampling the words does
        order: Order = rng.sample(range(len(vocab)), len(vocab))
        n, cost = _fit_words(pieces, vocab, order, budget, cw, ucw)
        if n == len(vocab) and not short:
            # RULER: a length that takes every word draws from a larger English list instead, its
            # 234K words shuffled by numpy (Python's shuffle costs a fifth of a second a sample)
            word_list = words.english()
            order = _numpy_rng(rng).permutation(len(word_list))
            n, cost = _fit_words(pieces, word_list, order, budget, cw, ucw)
        if n >= NUM_CW:
            break
    else:
        raise job.too_short(f"not even {NUM_CW} words fit")
    items: list[int] | np.ndarray
    if word_list is vocab:
        items = list(order[:NUM_CW]) * cw + list(order[NUM_CW:n]) * ucw
        shuffle(rng, items)
    else:
        import numpy as np

        tiled = np.concatenate([np.tile(order[:NUM_CW], cw), np.tile(order[NUM_CW:n], ucw)])
        items = tiled[_numpy_rng(rng).permutation(len(tiled))]
    listed = items if isinstance(items, list) else items.tolist()
    return job.sample(
        frame.around(pieces.body(word_list, items), _numbered([word_list[i] for i in listed])),
        tuple(word_list[i] for i in order[:NUM_CW]),
        CWE_PREFIX,
        num_words=n,
        freq_cw=cw,
        freq_ucw=ucw,
        example_words=ex_words,
        word_list="wonderwords" if word_list is vocab else "web2",
        # every word is in the prompt, and one more with its repeats would have fit
        pool_exhausted=n == len(order) and budget - cost(n) >= ucw * 16,
    )


def _numpy_rng(rng: random.Random) -> np.random.Generator:
    import numpy as np  # not on the start-up path

    return np.random.default_rng(rng.getrandbits(64))


def _fit_words(
    pieces: _Pieces, vocab: tuple[str, ...], order: Order, budget: int, cw: int, ucw: int
) -> tuple[int, Callable[[int], int]]:
    """The most words of ``order`` whose list fits ``budget``, and the cost function."""
    import numpy as np

    _, _, sizes = pieces.word_ids(vocab)
    word_cost = np.concatenate([[0], np.cumsum(sizes[np.asarray(order, dtype=np.int64)])]).tolist()

    def word_tokens(n: int) -> int:
        return cw * word_cost[NUM_CW] + ucw * (word_cost[n] - word_cost[NUM_CW])

    def words_only(n: int) -> int:  # a bound below the cost: at least one token per index piece
        return NUM_CW * cw + (n - NUM_CW) * ucw + word_tokens(n)

    def cost(n: int) -> int:
        return pieces.index_upto(NUM_CW * cw + (n - NUM_CW) * ucw) + word_tokens(n)

    most = largest_fitting(words_only, NUM_CW, len(order), budget)  # no more than this can fit
    return largest_fitting(cost, NUM_CW, max(most, NUM_CW), budget), cost


def build_fwe(ctx: BuildContext, job: Job, alpha: float = 2.0) -> Sample:
    enc, rng, length = ctx.encoder, job.rng, job.length
    vocab_size = max(5, (length - 50) // 50)
    letters, draw = string.ascii_lowercase, rng.random

    def coded_word() -> str:
        # ``"".join(rng.choices(string.ascii_lowercase, k=6))``'s draws, without its checks
        return "".join([letters[int(draw() * 26.0)] for _ in range(6)])  # int: floor, non-negative

    vocab = sorted(distinct(coded_word, vocab_size))
    shuffle(rng, vocab)
    vocab[0] = "..."  # the top-ranked "word" is noise
    # the head's last space goes with the first word, as tokenizers split it: every word is " word"
    frame = ctx.frame(FWE_HEAD.removesuffix(" "), FWE_TAIL, FWE_PREFIX)
    budget = frame.budget(length, job.gen)
    most = 4 * max(budget, 1)  # the most words the search below tries
    weights = _zipf(vocab_size, alpha)
    # Only the leading words (the ranks with most * w >= 1) have a copy at the most words tried
    # (int(n * w) is 0 past them, weights falling with rank): only those are tokenized, some 1,600
    # of 21,000 at 1M tokens.
    seen = max(5, bisect.bisect_right(weights, -1.0, key=lambda w: -(most * w)))
    piece_ids = dict(zip(vocab[:seen], enc.encode_fresh([" " + w for w in vocab[:seen]])))
    cost = _weighted_cost(weights[:seen], [len(piece_ids[w]) for w in vocab[:seen]])
    num_words = largest_fitting(cost, 1, most, budget)
    cnt = [int(num_words * w) for w in weights[:seen]]  # the rest are 0
    if num_words < 1 or min(cnt[1:4]) < 1 or cnt[3] == cnt[4]:
        raise job.too_short("too few words fit to rank the top three")
    items = [w for w, c in zip(vocab, cnt) for _ in range(c)]
    shuffle(rng, items)
    context = list(itertools.chain.from_iterable(map(piece_ids.__getitem__, items)))
    prompt = frame.around(context, " " + " ".join(items))
    return job.sample(
        prompt, tuple(vocab[1:4]), FWE_PREFIX, num_words=num_words, counts_top5=cnt[:5]
    )


@functools.lru_cache(maxsize=16)
def _zipf(vocab_size: int, alpha: float) -> tuple[float, ...]:
    """FWE's word frequencies by rank, k^-alpha / zeta(2)."""
    return tuple(k**-alpha / ZETA_2 for k in range(1, vocab_size + 1))


def _weighted_cost(weights: Sequence[float], sizes: list[int]) -> Callable[[int], int]:
    """Tokens of ``int(n * weight)`` copies of each word (numpy truncates as Python)."""
    import numpy as np

    w, size = np.asarray(weights, dtype=np.float64), np.asarray(sizes, dtype=np.int64)

    def cost(num_words: int) -> int:
        return int(np.dot((num_words * w).astype(np.int64), size))

    return cost


def _spec(name: str, gen: int, build: Builder, description: str) -> TaskSpec:
    return TaskSpec(
        name=name,
        suite="ruler",
        chat_template=True,
        category="aggregation",
        metric=STRING_MATCH_ALL,
        tokens_to_generate=gen,
        build=build,
        # a guess among the prompt's words: their number grows with the length, so it is measured
        # per band of lengths (bench/chance.py; docs/tasks.md)
        chance=name,
        description=description,
    )


register_all(
    __name__,
    [
        _spec("cwe", 120, build_cwe, "10 common words (30x) among uncommon ones (3x)"),
        _spec("fwe", 50, build_fwe, "three most frequent coded words, zeta(2) frequencies"),
    ],
)
