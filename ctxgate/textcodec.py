"""Token-level text assembly with the model's own tokenizer.

Generators build prompts from *pieces* (instruction, haystack lines, needles, answer prefix). Each distinct piece
is tokenized once and cached; a prompt's token ids are the concatenation of its pieces' ids. That is what makes
128K-token generation cheap: a haystack is tokenized once per tokenizer, never per sample.

Pieces are encoded behind a fixed anchor (``ANCHOR + piece``, anchor ids stripped) so that a SentencePiece
tokenizer does not add its word-start marker to every piece, and pieces are designed to start at whitespace, where
byte-level BPE never merges across. The decoded text of the ids re-tokenizes to the same count, or within a few
tokens of it; tests state and check that margin.
"""

from __future__ import annotations

import hashlib
import itertools
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

ANCHOR = "\u00a7"
_SENTINEL = "\u27e6CTXGATE-USER-TURN\u27e7"


class RawTokenizer(Protocol):
    """What ctxgate needs from a tokenizer; adapters below provide it."""

    def encode_batch(self, texts: Sequence[str]) -> list[list[int]]: ...

    def decode(self, ids: Sequence[int]) -> str: ...

    def prefix_ids(self) -> list[int]: ...

    def chat_parts(self) -> tuple[str, str] | None: ...

    def eos_ids(self) -> list[int]: ...

    def identity(self) -> str: ...


class HFTokenizer:
    """Adapter over a ``transformers`` tokenizer (imported by the caller, never here)."""

    def __init__(self, tokenizer: Any) -> None:
        self.tok = tokenizer
        # The Rust backend's encode_batch_fast (no offsets, no Python-side conversion) tokenizes the random-content
        # haystacks of a 128K prompt 1.5-1.7x faster (bench/datagen.py). It is trusted only after it matched the
        # wrapper on a real batch: some wrappers pre-process text in Python, and a backend with padding or
        # truncation set differs.
        backend = getattr(tokenizer, "backend_tokenizer", None)
        usable = (
            backend is not None
            and hasattr(backend, "encode_batch_fast")
            and backend.truncation is None
            and backend.padding is None
        )
        self._backend = backend if usable else None
        self._backend_checked = False

    def encode_batch(self, texts: Sequence[str]) -> list[list[int]]:
        if not texts:
            return []
        texts = list(texts)
        if self._backend is not None and self._backend_checked:
            return [e.ids for e in self._backend.encode_batch_fast(texts, add_special_tokens=False)]
        slow = [list(ids) for ids in self.tok(texts, add_special_tokens=False)["input_ids"]]
        if self._backend is not None:
            fast = [e.ids for e in self._backend.encode_batch_fast(texts, add_special_tokens=False)]
            if fast != slow:
                self._backend = None
            elif len(texts) >= 8:
                self._backend_checked = True
        return slow

    def decode(self, ids: Sequence[int]) -> str:
        return str(self.tok.decode(list(ids), skip_special_tokens=False))

    def prefix_ids(self) -> list[int]:
        with_special = list(self.tok("a", add_special_tokens=True)["input_ids"])
        bare = list(self.tok("a", add_special_tokens=False)["input_ids"])
        return with_special[: len(with_special) - len(bare)] if with_special[-len(bare) :] == bare else []

    def chat_parts(self) -> tuple[str, str] | None:
        if not getattr(self.tok, "chat_template", None):
            return None
        try:
            text = self.tok.apply_chat_template(
                [{"role": "user", "content": _SENTINEL}], add_generation_prompt=True, tokenize=False
            )
        except Exception as exc:  # noqa: BLE001 - jinja raises many types, and templates raise their own
            where = Path(str(getattr(self.tok, "name_or_path", "") or "."))
            jinja = where / "chat_template.jinja"
            source = jinja if jinja.is_file() else where / "tokenizer_config.json"
            message = " ".join(str(exc).split())[:200]
            raise ChatTemplateError(
                f"the chat template ({source}) fails on a one-message chat ({type(exc).__name__}"
                f": {message}): fix the template, or pass --chat-template off"
            ) from None
        head, _, tail = str(text).partition(_SENTINEL)
        return head, tail

    def eos_ids(self) -> list[int]:
        eos = self.tok.eos_token_id
        if eos is None:
            return []
        return list(eos) if isinstance(eos, (list, tuple)) else [int(eos)]

    def identity(self) -> str:
        parts = [
            type(self.tok).__name__,
            str(len(self.tok)),
            str(getattr(self.tok, "chat_template", "") or ""),
            self.tok.backend_tokenizer.to_str() if hasattr(self.tok, "backend_tokenizer") else "",
        ]
        return hashlib.sha256("\n".join(parts).encode("utf-8")).hexdigest()


class ChatTemplateError(ValueError):
    """The tokenizer's chat template cannot render a plain user message; the message names its file."""


class ByteTokenizer:
    """One token per UTF-8 byte (ids 0-255, EOS 256): a dependency-free tokenizer for plumbing tests."""

    EOS = 256

    def encode_batch(self, texts: Sequence[str]) -> list[list[int]]:
        return [list(t.encode("utf-8")) for t in texts]

    def decode(self, ids: Sequence[int]) -> str:
        return bytes(i for i in ids if i < 256).decode("utf-8", errors="replace")

    def prefix_ids(self) -> list[int]:
        return []

    def chat_parts(self) -> tuple[str, str] | None:
        return ("<user>\n", "\n</user>\n<assistant>\n")

    def eos_ids(self) -> list[int]:
        return [self.EOS]

    def identity(self) -> str:
        return "byte-tokenizer-v1"


class PieceEncoder:
    """Caches piece -> ids for one tokenizer. Cheap to share across all tasks of a worker."""

    def __init__(self, raw: RawTokenizer) -> None:
        self.raw = raw
        self._cache: dict[str, tuple[int, ...]] = {}
        self._anchor = tuple(raw.encode_batch([ANCHOR])[0])
        self.prefix: tuple[int, ...] = tuple(raw.prefix_ids())
        self._chat = raw.chat_parts()
        self.identity = raw.identity()
        self._joins: dict[str, bool] = {}  # shape -> whether joined piece ids equal the whole text's, as checked
        self._runs: dict[str, tuple[int, ...]] = {}  # runs of one-off pieces (encode_joined), tokenized once

    @property
    def has_chat_template(self) -> bool:
        return self._chat is not None

    def chat_parts(self) -> tuple[str, str]:
        if self._chat is None:
            raise ValueError(
                "the tokenizer has no chat template, so --chat-template on cannot be honoured: "
                "use --chat-template off (or auto)"
            )
        return self._chat

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
        """Encode one-off pieces (random needles) without growing the cache."""
        n = len(self._anchor)
        out = []
        for piece, ids in zip(pieces, self.raw.encode_batch([ANCHOR + p for p in pieces])):
            # where the anchor merged with the piece, the piece is encoded plainly
            out.append(tuple(ids[n:]) if tuple(ids[:n]) == self._anchor else tuple(self.raw.encode_batch([piece])[0]))
        return out

    JOIN_CHECK = 64  # rows of a new shape checked whole against the joined pieces; later batches check a few
    JOIN_SPOT = 4
    RUNS_KEPT = 1 << 20  # memo of runs (below) emptied past this many entries

    def encode_joined(
        self, rows: Sequence[Sequence[str]], fresh: Sequence[bool | re.Pattern[str]], shape: str
    ) -> list[tuple[int, ...]]:
        """Ids of texts given as pieces (a template's parts, a key, a value), one-off like ``encode_fresh``. Where
        the tokenizer splits each text at its piece boundaries, a text's ids are its pieces' ids joined: pieces that
        recur (``fresh`` False: template parts, words of a word list) come from the cache; one-off pieces (True:
        numbers) are tokenized once per distinct value in the batch; a pattern (a UUID's letter and digit runs)
        cuts a one-off piece into runs that recur, each tokenized once. That the joined ids are the text's own is
        checked on the first rows of each ``shape`` and on a few of every batch, against the texts encoded whole; a
        shape that fails once is encoded whole from then on, this batch included."""
        texts = ["".join(r) for r in rows]
        if not rows or self._joins.get(shape) is False:
            return self.encode_fresh(texts)
        columns = []  # per piece position, each row's ids for it
        for j, how in enumerate(fresh):
            pieces = [r[j] for r in rows]
            values = list(dict.fromkeys(pieces))
            if how is False:
                encoded = self.encode_many(values)
            elif how is True:
                encoded = self.encode_fresh(values)
            else:
                encoded = self._encode_runs(values, how)
            ids = dict(zip(values, encoded))
            columns.append([ids[p] for p in pieces])
        joined = [tuple(itertools.chain.from_iterable(parts)) for parts in zip(*columns)]
        check = self.JOIN_CHECK if shape not in self._joins else self.JOIN_SPOT
        if self.encode_fresh(texts[:check]) != joined[:check]:
            self._joins[shape] = False
            return self.encode_fresh(texts)
        self._joins[shape] = True
        return joined

    def _encode_runs(self, values: Sequence[str], pattern: re.Pattern[str]) -> list[tuple[int, ...]]:
        split = [pattern.findall(v) for v in values]
        split = [runs if "".join(runs) == v else [v] for v, runs in zip(values, split)]  # never a piece lost
        if len(self._runs) > self.RUNS_KEPT:
            self._runs.clear()
        new = list({run for runs in split for run in runs if run not in self._runs})
        self._runs.update(zip(new, self.encode_fresh(new)))
        get = self._runs.__getitem__
        return [tuple(itertools.chain.from_iterable(map(get, runs))) for runs in split]

    def decode(self, ids: Sequence[int]) -> str:
        return self.raw.decode(ids)
