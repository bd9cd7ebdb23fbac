"""A prompt's token ids are what the model's tokenizer gives for the prompt's rendered text, as
RULER and HELMET tokenize a prompt whole and MRCR's card tokenizes the chat template's rendering:
for every task, on byte-level BPE (the shipped tokenizer's GPT-2 split, Llama-3's split) and
SentencePiece (Llama-2's shape, byte fallback), each plain and under the Llama-2/Mistral, Llama-3,
ChatML and Gemma templates."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import pytest
from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st

from ctxgate.refusal import Refusal
from ctxgate.seeding import sample_rng
from ctxgate.tasks import BuildContext, all_tasks, get_task
from ctxgate.tasks.base import Job
from ctxgate.tasks.build import WHOLE_UP_TO, build_sample, task_context
from ctxgate.tasks.helmet_compat import COMPAT_TASKS
from ctxgate.tokens.codec import PieceEncoder
from ctxgate.tokens.tokenizers import HFTokenizer
from fixtures.tokenizer_shapes import TEMPLATES, llama3_tokenizer, with_template
from tests.conftest import HELMET_DATA, HOTPOT, SQUAD
from tests.scripted import ByteTokenizer

TASKS = [t.name for t in all_tasks()]
SHAPES = ("gpt2-bpe", "llama3-bpe", "llama2-sp")


@pytest.fixture(scope="module")
def tokenizers(
    hf_tokenizer: Any, sp_tokenizer: Any
) -> dict[tuple[str, str | None], tuple[Any, PieceEncoder]]:
    """Each shape under each template (None: none), with its encoder: built once, as a worker builds
    one."""
    base = {"gpt2-bpe": hf_tokenizer, "llama3-bpe": llama3_tokenizer(), "llama2-sp": sp_tokenizer}
    found = {}
    for shape, tok in base.items():
        for template in (None, *TEMPLATES):
            copy = with_template(tok, template)
            found[shape, template] = copy, PieceEncoder(HFTokenizer(copy))
    return found


def oracle(tok: Any, text: str, bos: bool) -> list[int]:
    """The tokenizer's ids for the text: ``tokenizer(text)`` (its special tokens added), except
    where the text spells BOS out (a template that writes it) or the prompt is a chat rendering
    tokenized as ``apply_chat_template`` tokenizes (``bos`` False)."""
    spelled = bool(tok.bos_token) and text.startswith(tok.bos_token)
    return list(tok(text, add_special_tokens=bos and not spelled)["input_ids"])


DATA = {"dir": str(HELMET_DATA)}


@pytest.fixture(autouse=True, scope="module")
def _with_long_documents(helmet_data_long: Any) -> None:
    """The fixtures plus long NarrativeQA / Multi-LexSum documents, which HELMET's length selection
    keeps."""
    DATA["dir"] = str(helmet_data_long)


def context(enc: PieceEncoder, chat: bool, compat: bool) -> BuildContext:
    return BuildContext(
        encoder=enc,
        chat=chat,
        chat_by_task=chat,
        squad_source=str(SQUAD),
        hotpotqa_source=str(HOTPOT),
        data_dir=DATA["dir"],
        helmet_compat=compat,
    )


@settings(
    max_examples=400,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    task=st.sampled_from(TASKS),
    length=st.one_of(st.integers(1, 8192), st.sampled_from([1024, 2048, 4096, 8192])),
    index=st.integers(0, 40),
    shape=st.sampled_from(SHAPES),
    template=st.sampled_from([None, *TEMPLATES]),
    compat=st.booleans(),
)
@example(task="niah_single_1", length=2048, index=0, shape="llama2-sp", template=None, compat=False)
@example(
    task="niah_single_1", length=2048, index=0, shape="llama2-sp", template="inst", compat=False
)
@example(task="fwe", length=4096, index=0, shape="llama3-bpe", template="llama3", compat=False)
@example(task="ctx_mrcr_2", length=8192, index=0, shape="gpt2-bpe", template="inst", compat=False)
@example(task="mrcr_2needle", length=4096, index=0, shape="llama2-sp", template=None, compat=False)
@example(task="babilong_qa1", length=0, index=0, shape="llama2-sp", template="gemma", compat=False)
@example(
    task="narrativeqa", length=8192, index=1, shape="llama2-sp", template="chatml", compat=True
)
def test_every_prompt_is_its_texts_own_ids(
    tokenizers: dict[tuple[str, str | None], tuple[Any, PieceEncoder]],
    task: str,
    length: int,
    index: int,
    shape: str,
    template: str | None,
    compat: bool,
) -> None:
    tok, enc = tokenizers[shape, template]
    spec = get_task(task)
    compat = compat and task in COMPAT_TASKS
    try:
        s = build_sample(spec, context(enc, template is not None, compat), length, index, 42)
    except Refusal as exc:
        event(f"refused: {exc.cause}")
        # a length too short for the task, or data the fixtures do not hold: refused by design
        return
    event("built")
    assert list(s.input_ids) == oracle(tok, s.text, s.bos)
    assert len(s.input_ids) + spec.held_in_length <= length or not length


@pytest.mark.parametrize("task", TASKS)
@pytest.mark.parametrize("chat", [False, True], ids=["plain", "chat"])
def test_the_text_is_what_the_pieces_spell(hf_tokenizer: Any, task: str, chat: bool) -> None:
    """The rendered text a builder gives is its pieces' texts joined: a byte-level tokenizer decodes
    the pieces' joined ids back to exactly it, where the shipped tokenizer's pieces join to the
    text's own ids."""
    tok = with_template(hf_tokenizer, "chatml" if chat else None)
    enc = PieceEncoder(HFTokenizer(tok))
    spec = get_task(task)
    length = (
        2048 if task.startswith("helmet_") else 4096
    )  # the lengths HELMET's RULER fixture files are for
    ctx = task_context(spec, context(enc, chat, False))
    try:
        s = spec.build(
            ctx, Job(task, length, 0, spec.held_in_length, sample_rng(task, length, 0, 42))
        )
    except Refusal:
        pytest.skip(f"{task} is refused at {length} on the fixture data")
    assert tok.decode(list(s.input_ids)) == s.text


class _OpeningTokenizer(ByteTokenizer):
    """Bytes, with a word-start id before a text's first byte, as SentencePiece marks a text's
    start: a prompt's pieces, each tokenized behind an anchor, never have it, so the whole text
    takes one token more than they."""

    START = 300

    def encode_batch(self, texts: Sequence[str]) -> list[list[int]]:
        return [[self.START, *ids] if ids else [] for ids in super().encode_batch(texts)]

    def encode(self, text: str) -> list[int]:
        return self.encode_batch([text])[0]


@pytest.mark.parametrize("length", [2048, WHOLE_UP_TO + 4096])
@pytest.mark.parametrize(
    "task", ["niah_single_1", "niah_multikey_2", "vt", "cwe", "fwe", "ctx_babi_qa1"]
)
def test_a_text_that_takes_more_than_its_pieces_is_built_again_within_the_length(
    task: str, length: int
) -> None:
    """The whole text's count is the one the length rule holds to: a prompt filled to the length by
    its pieces' counts is built again with the excess held back. Past ``WHOLE_UP_TO`` the case's
    pieces are found not to join to the whole text's ids, so every prompt is tokenized whole there
    too."""
    tok = _OpeningTokenizer()
    enc = PieceEncoder(tok)
    spec = get_task(task)
    ctx = BuildContext(encoder=enc, chat=False)
    for index in range(3):
        s = build_sample(spec, ctx, length, index, 42)
        assert list(s.input_ids) == tok.encode(s.text) and s.input_ids[0] == tok.START
        assert len(s.input_ids) + spec.held_in_length <= length


def test_past_the_whole_length_joined_ids_stand_only_where_they_are_the_texts(
    hf_encoder: PieceEncoder,
) -> None:
    """Where the pieces join to the whole text's ids (the shipped tokenizer), a long case keeps its
    joined ids, which are its text's own; the same case on a copy that marks a text's start is
    tokenized whole."""
    spec = get_task("niah_single_1")
    length = WHOLE_UP_TO + 4096
    ctx = BuildContext(encoder=hf_encoder, chat=False)
    s = build_sample(spec, ctx, length, 1, 42)
    assert s.input_ids == hf_encoder.whole(s.text)
    assert (
        spec.build(
            ctx, Job(spec.name, length, 1, 128, sample_rng(spec.name, length, 1, 42))
        ).input_ids
        == s.input_ids
    )
    marked = build_sample(
        spec, replace(ctx, encoder=PieceEncoder(_OpeningTokenizer())), length, 1, 42
    )
    assert marked.input_ids[0] == _OpeningTokenizer.START
