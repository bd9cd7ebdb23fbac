"""RULERv2's counts from parts (counting.py): for byte-level BPE under GPT-2's split (the shipped
tokenizer), Llama-3's and Qwen2's, each text cut at the module's cuts counts as its whole text
does, every draw of every builder counts as its text, and a set built from parts is the set built
from whole texts at every length tried, from 1 token up. A SentencePiece tokenizer, and any
pipeline the proof does not cover, is counted whole; a record that spells an added token makes its
set counted whole; a count found wrong counts the tokenizer whole from then on."""

from __future__ import annotations

import functools
import random
import re
from collections.abc import Sequence
from typing import Any
from unittest import mock

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from transformers import AutoTokenizer, PreTrainedTokenizerFast

from ctxgate.api import BuildContext, HFTokenizer, Job, PieceEncoder, get_task
from ctxgate.ext.ruler2 import tasks
from ctxgate.ext.ruler2.counting import (
    CUT,
    KEYS,
    SPLITS,
    WORDS,
    Tally,
    Unsplit,
    is_cut,
    splits_at_cuts,
    tally_for,
    text_ids,
)
from ctxgate.ext.ruler2.files import load_hotpotqa, load_mmlu
from ctxgate.ext.ruler2.fitting import TooShort
from ctxgate.ext.ruler2.mmlu import MmluParts, MmluStream, MmluTask
from ctxgate.ext.ruler2.niah import NiahParts, NiahSet
from ctxgate.ext.ruler2.qa import QaParts, QaStream
from ctxgate.ext.ruler2.words import key_words
from fixtures.tokenizer_shapes import llama3_tokenizer
from tests.conftest import TINY

SHAPES = ("gpt2-bpe", "llama3-bpe")
SPLITTING = (*SHAPES, "qwen2-bpe")  # and Qwen2's split (each digit alone) under NFC
# what the texts hold: ASCII of each class, whitespace runs, and what could blur a cut (letters of
# other scripts, a combining mark, spaces Unicode has beyond ASCII's, a separator Python alone
# calls whitespace, an added token's text)
PIECES = [
    *"aZ09-.:!'\"(#$_~|{ ",
    "  ", "\n", "\n\n", " \n", "\t", "\r\n", "\u00e9", "e\u0301", "\u0301", "\u4e2d", "\u00a0",
    "\u2028", "\u3000", "\x85", "\x1c", "\U0001f600", "'s", "'S", "n't", "'ll", "123456",
    "Question", " 1234567:", "-noun", "<|endoftext|>", "<|begin_of_text|>",
]  # fmt: skip
FEW = settings(max_examples=150, deadline=None)


@functools.cache
def tokenizer(shape: str) -> Any:
    if shape == "gpt2-bpe":
        return AutoTokenizer.from_pretrained(str(TINY))
    if shape == "llama3-bpe":
        return llama3_tokenizer()
    if shape == "qwen2-bpe":
        from tokenizers import Regex, normalizers, pre_tokenizers

        qwen2 = copy_of("llama3-bpe")
        pattern = next(p for p, digits in SPLITS.items() if digits == 1)
        qwen2.backend_tokenizer.pre_tokenizer = pre_tokenizers.Sequence(
            [
                pre_tokenizers.Split(Regex(pattern), behavior="isolated", invert=False),
                pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
            ]
        )
        qwen2.backend_tokenizer.normalizer = normalizers.NFC()
        return qwen2
    from fixtures.sp_tokenizer import build_sp_tokenizer

    return build_sp_tokenizer()


@functools.cache
def context(shape: str) -> BuildContext:
    return BuildContext(PieceEncoder(HFTokenizer(tokenizer(shape))), chat=False, seed=42)


def whole(shape: str, text: str) -> int:
    return len(context(shape).encoder.raw.encode(text))


def places(text: str, *patterns: re.Pattern[str]) -> set[int]:
    """Where any of ``patterns`` cuts ``text``."""
    return {m.start() for p in patterns for m in p.finditer(text)}


def tally(shape: str) -> Tally:
    found = tally_for(context(shape).encoder.raw)
    assert found is not None
    return found


def test_the_shapes_the_proof_covers() -> None:
    """GPT-2's split keeps a run of digits whole, Llama-3's cuts it in threes; SentencePiece's
    Metaspace joins what follows a newline to the word before it: counted whole."""
    found = {s: splits_at_cuts(context(s).encoder.raw) for s in (*SPLITTING, "llama2-sp")}
    assert {s: p.digits if p else None for s, p in found.items()} == {
        "gpt2-bpe": 0, "llama3-bpe": 3, "qwen2-bpe": 1, "llama2-sp": None,
    }  # fmt: skip


def copy_of(shape: str) -> PreTrainedTokenizerFast:
    from tokenizers import Tokenizer

    tok = tokenizer(shape)
    return PreTrainedTokenizerFast(
        tokenizer_object=Tokenizer.from_str(tok.backend_tokenizer.to_str()),
        eos_token=tok.eos_token,
    )


def test_a_pipeline_the_proof_does_not_cover_is_counted_whole() -> None:
    from tokenizers import normalizers, pre_tokenizers

    spaced = copy_of("gpt2-bpe")
    spaced.add_tokens(["two words"])  # could straddle a cut before a space
    lowered = copy_of("gpt2-bpe")
    lowered.backend_tokenizer.normalizer = normalizers.Lowercase()
    prefixed = copy_of("gpt2-bpe")
    prefixed.backend_tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=True)
    nfc = copy_of("gpt2-bpe")
    nfc.backend_tokenizer.normalizer = normalizers.NFC()  # Qwen2's: ASCII cuts stay as they are
    assert [splits_at_cuts(HFTokenizer(t)) is None for t in (spaced, lowered, prefixed, nfc)] == [
        True, True, True, False,
    ]  # fmt: skip


@FEW
@given(st.lists(st.sampled_from(PIECES), max_size=40), st.sampled_from(SPLITTING))
def test_a_text_counts_as_its_cut_pieces(pieces: list[str], shape: str) -> None:
    """The proof, tried: any text cut at every ``CUT`` counts as its whole text; the tally's
    counts (cut at its spaces) too, of one part or many, and its ids joined at its spaces, at
    every cut or at niah's are the whole text's, or, where the text holds an added token's, it is
    refused."""
    text = "".join(pieces)
    raw = context(shape).encoder.raw
    holds = any(added in text for added in tally(shape).pipeline.added)
    if not holds:
        assert sum(map(len, raw.encode_batch(CUT.split(text)))) == whole(shape, text)
    try:
        got = tally(shape).count(text)
        ids = [tally(shape).ids(text, cuts) for cuts in (WORDS, CUT, KEYS)]
    except Unsplit:
        assert holds
        return
    assert not holds and got == whole(shape, text)
    assert ids == [raw.encode(text)] * 3
    # many parts counted at once, each as alone, the empty one too
    many = [text, "", *pieces]
    assert tally(shape).counts(many) == [whole(shape, p) for p in many]
    # the patterns that cut fewer places cut only where ``CUT`` does
    assert places(text, WORDS, KEYS) <= places(text, CUT)


@FEW
@given(st.lists(st.integers(0, 10**12), max_size=30), st.sampled_from(SPLITTING))
def test_numbers_count_as_their_text(numbers: list[int], shape: str) -> None:
    """Numbers count as their text, and a text that holds them as words has its whole text's ids,
    whether they are the ones just counted (their ids kept from the count) or others."""
    parts = [f" {n}" for n in numbers]
    assert tally(shape).fresh(parts) == whole(shape, "".join(parts))
    raw = context(shape).encoder.raw
    for text in ("values:" + "".join(parts), "".join(parts[::-1]) + " and 7."):
        assert tally(shape).ids(text, KEYS) == raw.encode(text), text


def test_the_cuts() -> None:
    assert is_cut("for", " Key") and is_cut("7", ": Q") and is_cut("Key", "-noun")
    assert not is_cut("for ", " Key") and not is_cut("for", "  Key") and not is_cut("a", "b")
    assert not is_cut("for", "\nKey") and not is_cut("\u00e9", " Key") and not is_cut("-", ".")


def test_every_key_word_counts_as_its_text() -> None:
    words, rng = key_words(), random.Random(0)
    for shape in SPLITTING:
        places = [rng.randrange(len(words)) for _ in range(400)]
        places += [words.starts[b] for b, (_, w) in enumerate(words.blocks) if w is not None]
        counts = NiahParts(tally(shape), NiahSet(1, 42).form).keys
        assert counts.total(places) == sum(whole(shape, " " + words[p]) for p in places)


# two of the MMLU tasks' templates: several questions to an index, and examples with solutions
MMLU = {"mmlu": MmluTask(0, 4, "retrieve", "2steps"), "mmlu5": MmluTask(5, 0, "solve", "single")}


def parts_and_stream(kind: str, shape: str, seed: int) -> tuple[Any, Any]:
    """A builder's counts from parts and its draws, for a stream of ``seed``."""
    if kind in ("niah", "niah4"):
        stream = NiahSet(1 if kind == "niah" else 4, seed)
        return NiahParts(tally(shape), stream.form), stream.draw
    if kind in MMLU:
        test, aux = load_mmlu(None)
        mmlu = MmluStream(MMLU[kind], test, aux, seed)
        return MmluParts(tally(shape), MMLU[kind], aux), functools.partial(
            mmlu.draw, seed % len(test)
        )
    needles, haystack = load_hotpotqa(None)
    qa = QaStream(kind, needles, haystack, seed)
    return QaParts(tally(shape), kind, haystack), functools.partial(qa.draw, seed % len(needles))


@settings(max_examples=60, deadline=None)
@given(
    st.sampled_from(["niah", "niah4", "mmlu", "mmlu5", "doc", "question", "single", "2steps"]),
    st.sampled_from(SPLITTING),
    st.integers(0, 10**6),
    st.integers(5, 120),
)
def test_every_draw_counts_as_its_text(kind: str, shape: str, seed: int, units: int) -> None:
    parts, draw = parts_and_stream(kind, shape, seed)
    drawn = draw(units)
    assert parts(drawn) == whole(shape, drawn.text)


LENGTHS = (1, 2, 37, 300, 1500, 4000)


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("task", list(tasks.MAKERS))
def test_a_set_from_parts_is_the_set_from_whole_texts(task: str, shape: str) -> None:
    """At every length tried, from 1 token: the same samples, or too short both ways."""
    ctx, make = context(shape), tasks.MAKERS[task]
    for length in LENGTHS:
        built: list[Sequence[tasks.Drawn] | None] = []
        for fast in (True, False):
            try:
                built.append(list(make(ctx, length, 10, fast=fast)))
            except TooShort:
                built.append(None)
        assert built[0] == built[1], (task, shape, length)


@pytest.mark.parametrize("shape", SPLITTING)
@pytest.mark.parametrize("task", list(tasks.MAKERS))
def test_a_sent_sample_has_its_whole_texts_ids(task: str, shape: str) -> None:
    """The ids sent, joined at the set's cuts (niah's keys: at their hyphens too), are the ids of
    the whole text."""
    ctx = context(shape)
    for drawn in tasks.MAKERS[task](ctx, 6000, 3):
        text = drawn.text
        raw = ctx.encoder.raw
        assert text_ids(raw, text, drawn.cuts) == raw.encode(text), (task, shape)


def test_a_set_is_drawn_as_far_as_asked_and_a_short_one_whole() -> None:
    """Sample 0 of a long set draws that sample alone (the suite's first-sample check at 128K
    for a 1M case), and one let go is drawn again, the same; where a later sample could fail (its
    retries reach the fewest units), the first request draws all, so a set with one that cannot
    fit is refused whichever is asked."""
    ctx = context("gpt2-bpe")
    want = list(tasks.MAKERS["mk_niah_basic"](ctx, 16000, 10))
    with mock.patch.object(NiahSet, "draw", autospec=True, side_effect=NiahSet.draw) as draws:
        drawing = tasks.task_set("mk_niah_basic", ctx, 16000, 10)
        assert drawing.sample(1) == want[1] and drawing.made == 2
        first_two = draws.call_count
        assert drawing.sample(0) == want[0] and draws.call_count == first_two
        assert list(drawing) == want and drawing.sample(10) is None
        assert draws.call_count >= first_two + 8
        whole_set = draws.call_count  # it keeps its last two: sample 3 is drawn again, the same
        assert drawing.sample(9) == want[9] and draws.call_count == whole_set
        assert drawing.sample(3) == want[3] and draws.call_count > whole_set
    assert next(tasks.MAKERS["mk_niah_easy"](ctx, 1000, 1)).tokens <= 1000
    with pytest.raises(TooShort):
        tasks.task_set("mk_niah_easy", ctx, 1000, 100).sample(0)


def test_a_count_that_differs_from_the_whole_text_falls_back_for_good(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The first draw of a set is counted both ways: a difference builds the set from whole
    texts, and the tokenizer is counted whole from then on."""
    ctx = BuildContext(PieceEncoder(HFTokenizer(tokenizer("gpt2-bpe"))), chat=False, seed=42)
    want = list(tasks.MAKERS["mk_niah_basic"](ctx, 1500, 10, fast=False))
    monkeypatch.setattr(NiahParts, "__call__", lambda self, drawn: 1)
    assert tally_for(ctx.encoder.raw) is not None
    assert list(tasks.task_set("mk_niah_basic", ctx, 1500, 10)) == want
    assert tally_for(ctx.encoder.raw) is None


def test_a_sample_whose_count_differs_is_built_again_from_whole_texts(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A sample's ids are joined from its words to be sent: where their count differs from the
    one its set was fitted with, the set is built again from whole texts."""
    ctx = BuildContext(PieceEncoder(HFTokenizer(tokenizer("gpt2-bpe"))), chat=False, seed=42)
    spec = get_task("qa_hard")
    job = Job(spec.name, 2048, 3, spec.held_in_length, random.Random(3))
    want = spec.build(ctx, job)
    calls = []
    right = QaParts.__call__

    def one_off(self: QaParts, drawn: Any) -> int:
        calls.append(1)
        return right(self, drawn) + (len(calls) > 1)  # right on the checked first draw only

    ctx = BuildContext(PieceEncoder(HFTokenizer(tokenizer("gpt2-bpe"))), chat=False, seed=42)
    monkeypatch.setattr(QaParts, "__call__", one_off)
    assert spec.build(ctx, job) == want
    assert tally_for(ctx.encoder.raw) is None and calls


def test_a_part_holding_an_added_token_is_refused() -> None:
    with pytest.raises(Unsplit):
        tally("gpt2-bpe").count("Question 1: what is <|im_start|>?")


def test_a_set_whose_record_holds_an_added_token_is_counted_whole(tmp_path: Any) -> None:
    """A question that spells the tokenizer's added token is tokenized as that token: such a set
    is counted from whole texts, and the tokenizer's other sets from parts still."""
    import json
    from pathlib import Path

    data = Path(__file__).parents[3] / "ctxgate" / "ext" / "ruler2" / "data"
    folder = tmp_path / "ruler2" / "mmlu"
    folder.mkdir(parents=True)
    (folder / "test.jsonl").write_text((data / "mmlu_test_sample.jsonl").read_text())
    rows = [json.loads(r) for r in (data / "mmlu_auxiliary_train_sample.jsonl").open()]
    rows = [{**r, "question": r["question"] + " <|endoftext|>"} for r in rows]
    (folder / "auxiliary_train.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    raw = HFTokenizer(tokenizer("gpt2-bpe"))
    ctx = BuildContext(PieceEncoder(raw), chat=False, seed=42, data_dir=str(tmp_path))
    want = list(tasks.MAKERS["mk_niah_easy"](ctx, 3000, 10, fast=False))
    with pytest.raises(Unsplit):
        list(tasks.MAKERS["mk_niah_easy"](ctx, 3000, 10))
    assert list(tasks.task_set("mk_niah_easy", ctx, 3000, 10)) == want
    assert tally_for(raw) is not None
