"""Token-level text assembly with the model's own tokenizer.

Generators build prompts from *pieces* (instruction, haystack lines, needles, answer prefix), each
distinct piece tokenized once and cached, so a haystack is tokenized once per tokenizer, never per
sample. Joined piece ids are counts to fill a length with; a prompt is sent as the tokenizer's ids
for its whole text (``whole``), as the references tokenize it, except where joining was found to
give exactly those (``joins_hold``). Pieces are encoded behind a fixed anchor (``ANCHOR + piece``,
anchor ids stripped) so that a SentencePiece tokenizer adds no word-start marker to each, and start
at whitespace, where byte-level BPE never merges across."""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Hashable, Sequence

from ctxgate.tokens.chat import ChatTurns
from ctxgate.tokens.ids import ONE_INT, RUN_END, JoinedIds, RunStore, Spans, gather, id_list, spans
from ctxgate.tokens.tokenizers import RawTokenizer

ANCHOR = "\u00a7"
_NO_TEMPLATE = (
    "the tokenizer has no chat template, so --chat-template on cannot be honoured: "
    "use --chat-template off (or auto)"
)


class PieceEncoder:
    """Caches piece -> ids for one tokenizer. Cheap to share across all tasks of a worker."""

    def __init__(self, raw: RawTokenizer) -> None:
        self.raw = raw
        self._cache: dict[str, tuple[int, ...]] = {}
        self._anchor = tuple(raw.encode_batch([ANCHOR])[0])
        self.prefix: tuple[int, ...] = tuple(raw.prefix_ids())
        self._chat = raw.chat_parts()
        self.identity = raw.identity()
        # shape -> whether joined piece ids equal the whole text's, as checked
        self._joins: dict[str, bool] = {}
        # a pattern's runs found in one pass (``_split_runs``)
        self._batched: dict[re.Pattern[str], re.Pattern[str] | None] = {}
        self._joins_hold: dict[Hashable, bool] = {}

    @property
    def has_chat_template(self) -> bool:
        return self._chat is not None

    def chat_parts(self) -> tuple[str, str]:
        if self._chat is None:
            raise ValueError(_NO_TEMPLATE)
        return self._chat

    @functools.cached_property
    def _runs(self) -> RunStore:
        """Runs of one-off pieces, made on first use (numpy is not imported before a sample is
        built). Two threads that both make one only tokenize some runs twice."""
        return RunStore()

    @functools.cached_property
    def _turns(self) -> ChatTurns | None:
        # found on first use: a task without conversations never renders one
        return self.raw.chat_turns()

    def chat_turns(self) -> ChatTurns:
        """The template's turns; ``ChatTemplateError`` where it cannot be split."""
        if self._turns is None:
            raise ValueError(_NO_TEMPLATE)
        return self._turns

    def encode_many(self, pieces: Sequence[str]) -> list[tuple[int, ...]]:
        missing = list(dict.fromkeys(p for p in pieces if p not in self._cache))
        if missing:
            self._cache.update(zip(missing, self.encode_fresh(missing)))
        return [self._cache[p] for p in pieces]

    def encode(self, piece: str) -> tuple[int, ...]:
        return self.encode_many([piece])[0]

    def count(self, piece: str) -> int:
        return len(self.encode(piece))

    def encode_fresh(self, pieces: Sequence[str]) -> list[tuple[int, ...]]:
        """One-off pieces (random needles) encoded without growing the cache, as ``ONE_INT``s."""
        flat, starts, sizes = self.encode_spans(pieces)
        ids = id_list(flat)
        return [tuple(ids[a : a + n]) for a, n in zip(starts.tolist(), sizes.tolist())]

    # rows of a new shape checked whole against the joined pieces; later batches check a few
    JOIN_CHECK = 64
    JOIN_SPOT = 4
    RUNS_KEPT = 1 << 20  # memo of runs (below) emptied past this many entries

    def encode_columns(
        self,
        rows: Sequence[Sequence[str]],
        fresh: Sequence[bool | re.Pattern[str]],
        shape: str,
        sep: str = "",
    ) -> JoinedIds:
        """Ids of texts given as pieces, as their pieces' ids joined, in one array with where each
        row ends: ``fresh`` False, from the cache (template parts, words); True, tokenized once per
        distinct value (numbers); a pattern, cut into runs that recur, each tokenized once (a UUID's
        letter and digit runs). Checked against the texts encoded whole on the first rows of each
        ``shape`` and a few of every batch; a shape that fails once is encoded whole from then on.
        ``sep`` goes before each row's first piece (added to its distinct values, not per row)."""
        import numpy as np

        if not rows or self._joins.get(shape) is False:
            return self._whole(rows, sep)
        # per piece position: its values' ids, each row's start and size in them
        sources, starts, sizes = [], [], []
        base = 0
        for j, (pieces, how) in enumerate(zip(zip(*rows), fresh)):
            values = list(dict.fromkeys(pieces))
            texts = [sep + v for v in values] if j == 0 and sep else values
            if how is False:
                flat, at, size = spans(self.encode_many(texts))
            elif how is True:
                flat, at, size = self.encode_spans(texts)
            else:
                flat, at, size = self._runs_spans(texts, how)
            which = dict(zip(values, range(len(values))))
            row = np.fromiter(map(which.__getitem__, pieces), dtype=np.int64, count=len(pieces))
            sources.append(flat)
            starts.append(at[row] + base)
            sizes.append(size[row])
            base += len(flat)
        if not sources:
            self._joins[shape] = False
            return self._whole(rows, sep)
        size = np.stack(sizes, axis=1)  # rows x pieces, read row by row
        ids = gather(np.concatenate(sources), np.stack(starts, axis=1).ravel(), size.ravel())
        joined = JoinedIds(ids, np.concatenate([[0], np.cumsum(size.sum(axis=1))]))
        check = self.JOIN_CHECK if shape not in self._joins else self.JOIN_SPOT
        if self.encode_fresh([sep + "".join(r) for r in rows[:check]]) != joined.tuples(check):
            self._joins[shape] = False
            return self._whole(rows, sep)
        self._joins[shape] = True
        return joined

    def _whole(self, rows: Sequence[Sequence[str]], sep: str) -> JoinedIds:
        import numpy as np

        flat, starts, sizes = self.encode_spans([sep + "".join(r) for r in rows])
        return JoinedIds(gather(flat, starts, sizes), np.concatenate([[0], np.cumsum(sizes)]))

    def encode_spans(self, pieces: Sequence[str]) -> Spans:
        """One-off pieces' ids as one array, with each piece's start and size: no tuple per piece
        (for the many one-off pieces of a long prompt, or a word list)."""
        import numpy as np

        texts = [ANCHOR + p for p in pieces]
        # HFTokenizer's, without a list per text
        encode_flat = getattr(self.raw, "encode_flat", None)
        flat, starts, sizes = (
            encode_flat(texts) if encode_flat is not None else spans(self.raw.encode_batch(texts))
        )
        n = len(self._anchor)
        ok = np.flatnonzero(sizes >= n)
        for k, anchor_id in enumerate(self._anchor):
            ok = ok[flat[starts[ok] + k] == anchor_id]
        starts[ok] += n
        sizes[ok] -= n
        # where the anchor merged with the piece: the piece plainly
        merged = np.setdiff1d(np.arange(len(pieces)), ok)
        if len(merged):
            plain, plain_starts, plain_sizes = spans(
                self.raw.encode_batch([pieces[i] for i in merged])
            )
            starts[merged], sizes[merged] = plain_starts + len(flat), plain_sizes
            flat = np.concatenate([flat, plain])
        return flat, starts, sizes

    def _runs_spans(self, values: Sequence[str], pattern: re.Pattern[str]) -> Spans:
        """Each value's ids as its runs' ids joined, as spans of one array: each run's ids come from
        the memo of runs, gathered for all values at once."""
        import numpy as np

        if not values:
            return spans([])
        runs = self._split_runs(values, pattern)
        store = self._runs
        with store.lock:
            if len(store.slot) > self.RUNS_KEPT:
                store.clear()
            new = list(set(runs).difference(store.slot))
            if new:
                flat, starts, sizes = self.encode_spans(new)
                store.add(new, gather(flat, starts, sizes), sizes)
            slots = np.fromiter(map(store.slot.__getitem__, runs), dtype=np.int64, count=len(runs))
            run_sizes = store.sizes[slots]
            flat = gather(store.ids, store.starts[slots], run_sizes)
        ends = np.cumsum(run_sizes)[slots == 0]  # a value ends at its end mark, which has no ids
        starts = np.concatenate([[0], ends[:-1]])
        return flat, starts, ends - starts

    def _split_runs(self, values: Sequence[str], pattern: re.Pattern[str]) -> list[str]:
        """Every value's runs (``pattern``'s matches, else the value), each value's then
        ``RUN_END``: found in one search of the values joined by ``RUN_END`` where that finds each
        value whole and the first few as alone (a pattern may look past a value's end), else value
        by value."""
        if pattern not in self._batched:
            self._batched[pattern] = re.compile(f"(?:{pattern.pattern})|{RUN_END}", pattern.flags)
        batched = self._batched[pattern]
        text = RUN_END.join(values) + RUN_END
        if batched is not None and text.count(RUN_END) == len(values):
            runs = batched.findall(text)
            if runs.count(RUN_END) == len(values) and len("".join(runs)) == len(text):
                alone = _runs_alone(values[: self.JOIN_SPOT], pattern)
                if runs[: len(alone)] == alone:
                    return runs
                self._batched[pattern] = None
        return _runs_alone(values, pattern)

    def decode(self, ids: Sequence[int]) -> str:
        return self.raw.decode(ids)

    def whole(self, text: str, bos: bool = True) -> tuple[int, ...]:
        """A prompt's ids: the tokenizer's for its whole text, behind the prefix (BOS) it adds,
        unless the text spells that out (a chat template that writes BOS) or ``bos`` is False."""
        ids = tuple(map(ONE_INT.__getitem__, self.raw.encode(text)))
        n = len(self.prefix)
        return ids if not bos or n and ids[:n] == self.prefix else self.prefix + ids

    def joins_hold(self, key: Hashable, probe: Callable[[], bool]) -> bool:
        """Whether prompts of ``key`` (a task in a build context) get the whole text's ids from
        their pieces' ids joined, as ``probe`` finds once for this tokenizer."""
        found = self._joins_hold.get(key)
        if found is None:
            found = self._joins_hold.setdefault(key, probe())
        return found


def _runs_alone(values: Sequence[str], pattern: re.Pattern[str]) -> list[str]:
    """Each value's runs, found value by value, then ``RUN_END``."""
    runs: list[str] = []
    for v, found in zip(values, map(pattern.findall, values)):
        runs.extend(found if "".join(found) == v else [v])  # never a piece lost
        runs.append(RUN_END)
    return runs
