"""The tokenizers ctxgate reads through: what it needs of one (``RawTokenizer``), transformers'
(``HFTokenizer``, with fast paths for many short texts) and a byte tokenizer for plumbing tests."""

from __future__ import annotations

import hashlib
import itertools
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol

from ctxgate.tokens.chat import ChatTemplateError, ChatTurns, brief, turns_of
from ctxgate.tokens.ids import Spans, packing_separator, spans, split_at

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

    def __init__(self, tokenizer: Any) -> None:
        self.tok = tokenizer
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
        # the short pieces of a 1M-token haystack. Texts are therefore tokenized PACK at a time as
        # one, joined by an added special token the backend splits at before anything else, and the
        # ids split at its id. Where a part's ids could still differ from its text's alone (a
        # pre-tokenizer that marks a text's first word), the checks find it (``_packing_check``),
        # and texts are never packed again.
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
            if self._separator is not None and len(texts) > self.PACK:
                packed = self._packed(texts, *self._separator)
                if packed is not None:
                    return packed
            return self._fast(texts)
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
            # checks it on eight slices
            step = max(1, len(text) // 8)
            self.encode_batch([text[i : i + 2000] for i in range(0, 8 * step, step)])
        if self._backend is not None and self._backend_checked:
            return list(self._fast([text])[0])
        return list(self.tok(text, add_special_tokens=False)["input_ids"])

    def _fast(self, texts: list[str]) -> list[list[int]]:
        backend = self._backend
        assert backend is not None  # called only where the backend is used
        return [e.ids for e in backend.encode_batch_fast(texts, add_special_tokens=False)]

    def _packed(
        self, texts: list[str], separator: str, separator_id: int
    ) -> list[list[int]] | None:
        """Each text's ids, tokenized PACK texts at a time; None where the check failed."""
        groups, joined = self._joined(texts, separator)
        out: list[list[int]] = []
        for group, ids in zip(groups, joined):
            parts = split_at(ids, separator_id, len(group))
            # None: a text that holds the separator
            out.extend(parts if parts is not None else self._fast(group))
        return out if self._packing_check(texts, len(groups), out.__getitem__) else None

    def encode_flat(self, texts: Sequence[str]) -> Spans:
        """``encode_batch``'s ids as one array, with each text's start and size: packed texts' ids
        are not cut into a list per text."""
        texts = list(texts)
        if self._backend is not None and self._backend_checked and self._separator is not None:
            if len(texts) > self.PACK:
                found = self._packed_flat(texts, *self._separator)
                if found is not None:
                    return found
        return spans(self.encode_batch(texts))

    def _packed_flat(self, texts: list[str], separator: str, separator_id: int) -> Spans | None:
        """``_packed``'s ids left in one array; None where a text holds the separator or the check
        failed."""
        import numpy as np

        groups, joined = self._joined(texts, separator)
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
        if not self._packing_check(
            texts, len(groups), lambda i: flat[starts[i] : ends[i]].tolist()
        ):
            return None
        return flat, starts, ends - starts

    def _joined(self, texts: list[str], separator: str) -> tuple[list[list[str]], list[list[int]]]:
        """The texts in groups of PACK, and each group joined by the separator, tokenized as one."""
        groups = [texts[i : i + self.PACK] for i in range(0, len(texts), self.PACK)]
        joined: list[list[int]] = []
        for i in range(0, len(groups), self.PACKED_AT_ONCE):
            chunk = groups[i : i + self.PACKED_AT_ONCE]
            joined.extend(self._fast([separator.join(g) for g in chunk]))
        return groups, joined

    def _packing_check(
        self, texts: list[str], groups: int, got: Callable[[int], list[int]]
    ) -> bool:
        """Whether packed ids (``got``: a text's) are the texts' own, for the first group's texts
        (all but its first tokenized after the separator) and, once that held, the last text of
        each of the first groups; else packing is given up."""
        if self._packing_checked:
            n = len(texts)
            check = [min(n, (g + 1) * self.PACK) - 1 for g in range(min(self.PACK_SPOT, groups))]
        else:
            check = list(range(self.PACK))
        if self._fast([texts[i] for i in check]) != [got(i) for i in check]:
            self._separator = None
            return False
        self._packing_checked = True
        return True

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
            text = self._render([{"role": "user", "content": _SENTINEL}])
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
        return turns_of(self._render, self._template_source())

    def _render(self, messages: list[dict[str, str]]) -> str:
        tok = self.tok
        return str(tok.apply_chat_template(messages, add_generation_prompt=True, tokenize=False))

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


class ByteTokenizer:
    """One token per UTF-8 byte (ids 0-255, EOS 256): a dependency-free tokenizer for tests."""

    EOS = 256

    def encode_batch(self, texts: Sequence[str]) -> list[list[int]]:
        return [list(t.encode("utf-8")) for t in texts]

    def encode(self, text: str) -> list[int]:
        return list(text.encode("utf-8"))

    def decode(self, ids: Sequence[int]) -> str:
        return bytes(i for i in ids if i < 256).decode("utf-8", errors="replace")

    def prefix_ids(self) -> list[int]:
        return []

    def chat_parts(self) -> tuple[str, str] | None:
        return ("<user>\n", "\n</user>\n<assistant>\n")

    def chat_turns(self) -> ChatTurns | None:
        return ChatTurns(
            "<user>\n",
            "\n</user>\n<assistant>\n",
            "\n</assistant>\n<user>\n",
            "\n</user>\n<user>\n",
            "\n</user>\n<assistant>\n",
        )

    def eos_ids(self) -> list[int]:
        return [self.EOS]

    def identity(self) -> str:
        return "byte-tokenizer-v1"
