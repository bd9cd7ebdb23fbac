"""The tokenizers ctxgate reads through: what it needs of one (``RawTokenizer``) and transformers'
(``HFTokenizer``, with fast paths for many short texts)."""

from __future__ import annotations

import hashlib
import itertools
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

from ctxgate.tokens.chat import ChatTemplateError, ChatTurns, brief, turns_of
from ctxgate.tokens.ids import Spans, packing_separator, spans

_SENTINEL = "\u27e6CTXGATE-USER-TURN\u27e7"


class RawTokenizer(Protocol):
    """What ctxgate needs from a tokenizer; adapters below provide it."""

    def encode_batch(self, texts: Sequence[str]) -> list[list[int]]: ...
    def encode(self, text: str) -> list[int]: ...
    def decode(self, ids: Sequence[int]) -> str: ...
    def prefix_ids(self) -> list[int]: ...
    def chat_parts(self) -> tuple[str, str] | None: ...
    def chat_turns(self) -> ChatTurns | None: ...
    def eos_ids(self) -> list[int]: ...
    def identity(self) -> str: ...


class HFTokenizer:
    """Adapter over a ``transformers`` tokenizer (imported by the caller, never here)."""

    def __init__(self, tokenizer: Any, model_template: str | None = None) -> None:
        """``model_template``: the model's own chat template, where ``tokenizer`` was given another
        (a chat API's server renders the model's)."""
        self.tok = tokenizer
        self.model_template = model_template or getattr(tokenizer, "chat_template", None)
        # the template's arguments every rendering gets (a reasoning model's switch)
        self.template_kwargs: dict[str, object] = {}
        # The Rust backend's encode_batch_fast tokenizes a 128K prompt's haystacks 1.5-1.7x faster
        # (bench/datagen.py). It is trusted only after it matched the wrapper on a real batch: some
        # wrappers pre-process text in Python, and a backend with padding or truncation differs.
        backend = getattr(tokenizer, "backend_tokenizer", None)
        usable = (
            backend is not None
            and hasattr(backend, "encode_batch_fast")
            and backend.truncation is None
            and backend.padding is None
        )
        self._backend = backend if usable else None
        self._backend_checked = False
        # Each text the backend returns costs some 2.5 us besides its tokens, 40% of the time for
        # the short pieces of a 1M-token haystack: texts are tokenized PACK at a time as one, joined
        # by an added special token the backend splits at first, and the ids split at its id; where
        # a part's ids differ from its text's alone (a pre-tokenizer that marks a text's first
        # word), ``_packed``'s checks find it, and texts are never packed again.
        self._separator = packing_separator(backend) if usable else None
        self._packing_checked = False

    PACK = 64  # texts tokenized as one
    PACK_SPOT = 4  # texts of a later packed batch checked against their own tokenization
    # packed texts per call of the backend: its Encoding objects took 100 MB for a 234K-word list
    PACKED_AT_ONCE = 128

    def encode_batch(self, texts: Sequence[str]) -> list[list[int]]:
        if not texts:
            return []
        texts = list(texts)
        if self._backend is not None and self._backend_checked:
            packed = self._packed(texts)
            if packed is None:
                return self._fast(texts)
            ids = packed[0].tolist()
            return [ids[a : a + n] for a, n in zip(packed[1].tolist(), packed[2].tolist())]
        slow = [list(ids) for ids in self.tok(texts, add_special_tokens=False)["input_ids"]]
        if self._backend is not None:
            if self._fast(texts) != slow:
                self._backend = None
            elif len(texts) >= 8:
                self._backend_checked = True
        return slow

    def encode(self, text: str) -> list[int]:
        """A whole text's ids (no special tokens added), through the backend once it matched the
        wrapper: a 1M-token text then takes half the time and a third of the memory."""
        if self._backend is not None and not self._backend_checked:
            step = max(1, len(text) // 8)
            self.encode_batch([text[i : i + 2000] for i in range(0, 8 * step, step)])
        if self._backend is not None and self._backend_checked:
            return list(self._fast([text])[0])
        return list(self.tok(text, add_special_tokens=False)["input_ids"])

    def _fast(self, texts: list[str]) -> list[list[int]]:
        backend = self._backend
        assert backend is not None  # called only where the backend is used
        return [e.ids for e in backend.encode_batch_fast(texts, add_special_tokens=False)]

    def encode_flat(self, texts: Sequence[str]) -> Spans:
        """``encode_batch``'s ids as one array, with each text's start and size: packed texts' ids
        are not cut into a list per text."""
        texts = list(texts)
        found = self._packed(texts) if self._backend is not None and self._backend_checked else None
        return found if found is not None else spans(self.encode_batch(texts))

    def _packed(self, texts: list[str]) -> Spans | None:
        """The texts' ids, tokenized PACK texts at a time, as spans of one array; None where they
        are too few, a text holds the separator or the check failed."""
        if self._separator is None or len(texts) <= self.PACK:
            return None
        import numpy as np

        separator, separator_id = self._separator
        groups = [texts[i : i + self.PACK] for i in range(0, len(texts), self.PACK)]
        joined: list[list[int]] = []
        for i in range(0, len(groups), self.PACKED_AT_ONCE):
            chunk = groups[i : i + self.PACKED_AT_ONCE]
            joined.extend(self._fast([separator.join(g) for g in chunk]))
        # each group's ids with a separator after it: every text is then followed by exactly one
        mark = [separator_id]
        flat = np.fromiter(
            itertools.chain.from_iterable(
                itertools.chain.from_iterable(zip(joined, itertools.repeat(mark)))
            ),
            dtype=np.int64,
            count=sum(map(len, joined)) + len(joined),
        )
        ends = np.flatnonzero(flat == separator_id)
        if len(ends) != len(texts):
            return None
        starts = np.concatenate([[0], ends[:-1] + 1])
        # checked against the texts' own ids: the first group's (all but its first tokenized after
        # the separator), and once that held, the last text of each of the first groups
        if self._packing_checked:
            spots = range(min(self.PACK_SPOT, len(groups)))
            check = [min(len(texts), (g + 1) * self.PACK) - 1 for g in spots]
        else:
            check = list(range(self.PACK))
        got = [flat[starts[i] : ends[i]].tolist() for i in check]
        if self._fast([texts[i] for i in check]) != got:
            self._separator = None
            return None
        self._packing_checked = True
        return flat, starts, ends - starts

    def decode(self, ids: Sequence[int]) -> str:
        return str(self.tok.decode(list(ids), skip_special_tokens=False))

    def prefix_ids(self) -> list[int]:
        with_special = list(self.tok("a", add_special_tokens=True)["input_ids"])
        bare = list(self.tok("a", add_special_tokens=False)["input_ids"])
        head = with_special[: len(with_special) - len(bare)]
        return head if with_special[-len(bare) :] == bare else []

    def chat_parts(self) -> tuple[str, str] | None:
        if not getattr(self.tok, "chat_template", None):
            return None
        try:
            text = self.render([{"role": "user", "content": _SENTINEL}])
        except Exception as exc:  # noqa: BLE001 - jinja and templates raise many types
            raise ChatTemplateError(
                f"the chat template ({self._template_source()}) fails on a one-message chat "
                f"({brief(exc)}): fix the template, or pass --chat-template off"
            ) from None
        head, _, tail = text.partition(_SENTINEL)
        return head, tail

    def chat_turns(self) -> ChatTurns | None:
        if not getattr(self.tok, "chat_template", None):
            return None
        return turns_of(self.render, self._template_source())

    def render(self, messages: list[dict[str, str]], template: str | None = None) -> str:
        """The messages as the chat template (or ``template``) renders them, with the generation
        prompt and the run's template arguments."""
        return str(
            self.tok.apply_chat_template(
                messages,
                add_generation_prompt=True,
                tokenize=False,
                chat_template=template,
                **self.template_kwargs,
            )
        )

    def _template_source(self) -> Path:
        where = Path(str(getattr(self.tok, "name_or_path", "") or "."))
        jinja = where / "chat_template.jinja"
        return jinja if jinja.is_file() else where / "tokenizer_config.json"

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


# A reasoning model's thought is read from what its tokenizer and template hold: the spine's answers
# for any tokenizer, the adapters' where they keep it, nothing where they keep none.


def model_template(tokenizer: RawTokenizer) -> str:
    """The model's own chat template (empty: none, or a tokenizer that keeps none): where a
    reasoning model's switch and its thought's markers are read."""
    return str(getattr(tokenizer, "model_template", None) or "")


def vocabulary(tokenizer: RawTokenizer) -> tuple[frozenset[str], frozenset[str]]:
    """The tokenizer's added tokens and its special tokens, as text: where a thought's markers
    are; both empty for a tokenizer that keeps no vocabulary of its own."""
    tok = getattr(tokenizer, "tok", None)
    if tok is None:
        return frozenset(), frozenset()
    added = {str(t) for t in getattr(tok, "get_added_vocab", dict)()}
    decoder = getattr(tok, "added_tokens_decoder", {}) or {}
    special = {str(t.content) for t in decoder.values() if getattr(t, "special", False)}
    special |= {str(t) for t in getattr(tok, "all_special_tokens", ())}
    return frozenset(added), frozenset(special)


def set_template_kwargs(tokenizer: RawTokenizer, kwargs: dict[str, object]) -> bool:
    """The chat template's arguments every rendering of the run's prompts gets (a reasoning
    model's switch: ``enable_thinking``, ``reasoning_effort``); False where the tokenizer renders
    no template of its own."""
    if not isinstance(tokenizer, HFTokenizer):
        return False
    tokenizer.template_kwargs = kwargs
    return True


def render(tokenizer: RawTokenizer, messages: list[dict[str, str]], template: str) -> str | None:
    """The messages as ``template`` renders them with the run's arguments and the generation
    prompt; None where the tokenizer renders no template."""
    return tokenizer.render(messages, template) if isinstance(tokenizer, HFTokenizer) else None
