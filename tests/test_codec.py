"""Piece encoding: anchors, BOS handling (never double), chat template split."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from ctxgate.tasks import BuildContext, get_task
from ctxgate.tasks.build import build_sample
from ctxgate.tokens.codec import PieceEncoder
from ctxgate.tokens.tokenizers import HFTokenizer


@pytest.fixture(scope="module")
def bos_tokenizer(hf_tokenizer):
    """The tiny tokenizer, made to add a BOS like Llama tokenizers, with a template that spells BOS
    out too."""
    from tokenizers import processors
    from transformers import PreTrainedTokenizerFast

    backend = hf_tokenizer.backend_tokenizer.__class__.from_str(
        hf_tokenizer.backend_tokenizer.to_str()
    )
    bos_id = backend.token_to_id("<|im_start|>")
    backend.post_processor = processors.TemplateProcessing(
        single="<|im_start|> $A", special_tokens=[("<|im_start|>", bos_id)]
    )
    tok = PreTrainedTokenizerFast(
        tokenizer_object=backend, bos_token="<|im_start|>", eos_token="<|endoftext|>"
    )
    tok.chat_template = (
        "<|im_start|>{% for m in messages %}{{ m['content'] }}{% endfor %}\nASSISTANT:"
    )
    return tok, bos_id


def test_pieces_concatenate_like_the_whole_text(hf_encoder, hf_tokenizer):
    pieces = [
        "Some text.\n",
        "The grass is green.",
        "\nOne of the special magic numbers for a-b is: 1234567.",
    ]
    joined = [i for p in hf_encoder.encode_many(pieces) for i in p]
    assert joined == hf_tokenizer("".join(pieces), add_special_tokens=False)["input_ids"]


def test_bos_is_added_once_without_chat_template(bos_tokenizer):
    tok, bos_id = bos_tokenizer
    enc = PieceEncoder(HFTokenizer(tok))
    assert enc.prefix == (bos_id,)
    s = build_sample(get_task("niah_single_1"), BuildContext(enc, chat=False), 1024, 0, 1)
    assert s.input_ids[0] == bos_id and s.input_ids[1] != bos_id


def test_no_double_bos_when_the_chat_template_spells_it(bos_tokenizer):
    tok, bos_id = bos_tokenizer
    enc = PieceEncoder(HFTokenizer(tok))
    s = build_sample(get_task("niah_single_1"), BuildContext(enc, chat=True), 1024, 0, 1)
    assert s.input_ids[0] == bos_id and s.input_ids[1] != bos_id
    assert "ASSISTANT: The special magic number for" in enc.decode(
        s.input_ids
    )  # the prefix follows the template


def test_chat_template_parts_wrap_the_user_turn(hf_encoder):
    head, tail = hf_encoder.chat_parts()
    assert head == "<|im_start|>user\n" and tail == "<|im_end|>\n<|im_start|>assistant\n"


def test_missing_chat_template_is_a_clear_error(hf_tokenizer):
    from transformers import PreTrainedTokenizerFast

    bare = PreTrainedTokenizerFast(
        tokenizer_object=hf_tokenizer.backend_tokenizer, eos_token="<|endoftext|>"
    )
    enc = PieceEncoder(HFTokenizer(bare))
    with pytest.raises(ValueError, match="--chat-template off"):
        enc.chat_parts()


def test_the_fast_backend_path_gives_the_wrappers_ids(hf_tokenizer):
    texts = [f" line {i}: 7{i}93{i * 7} is: {i * 104729 % 10**7}. crazy-buck\n" for i in range(40)]
    expected = [list(ids) for ids in hf_tokenizer(texts, add_special_tokens=False)["input_ids"]]
    adapter = HFTokenizer(hf_tokenizer)
    assert (
        adapter.encode_batch(texts[:3]) == expected[:3]
    )  # too small a batch to trust the fast path yet
    assert adapter.encode_batch(texts[:20]) == expected[:20]
    assert adapter._backend_checked  # verified on a real batch, used from now on
    assert adapter.encode_batch(texts) == expected


def test_a_backend_with_padding_set_is_never_used_directly():
    from transformers import AutoTokenizer

    from tests.conftest import TINY

    tok = AutoTokenizer.from_pretrained(str(TINY))
    tok.backend_tokenizer.enable_padding(length=64)
    adapter = HFTokenizer(tok)
    assert adapter._backend is None
    unpadded = len(tok("a b c", add_special_tokens=False)["input_ids"])
    assert [len(ids) for ids in adapter.encode_batch(["a b c"] * 10)] == [unpadded] * 10


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(texts=st.lists(st.text(max_size=40), min_size=1, max_size=300))
@example(
    texts=[
        "a</s>b",
        "<s>",
        "x<|endoftext|>",
        "<unk>",
        " </s> ",
        "",
        "\n",
        *[f" {i}" for i in range(200)],
    ]
)
def test_texts_tokenized_many_at_once_get_each_texts_own_ids(
    hf_tokenizer, large_vocab_tokenizer, texts
):
    """The fast path for many short texts (packed behind one of the tokenizer's special tokens, the
    ids cut at it) gives every text its own ids, whatever the texts hold (the separator's text
    itself included): with the shipped and a 131K-vocabulary tokenizer."""
    for tok in (hf_tokenizer, large_vocab_tokenizer):
        expected = [list(ids) for ids in tok(texts, add_special_tokens=False)["input_ids"]]
        adapter = HFTokenizer(tok)
        assert adapter.encode_batch(texts) == expected
        assert (
            adapter.encode_batch(texts[::-1]) == expected[::-1]
        )  # the checked path, then the trusted one
        flat, starts, sizes = adapter.encode_flat(texts)
        assert [flat[a : a + n].tolist() for a, n in zip(starts, sizes)] == expected


@given(seed=st.integers(0, 2**64), n=st.integers(0, 5000))
def test_the_inline_shuffle_draws_and_swaps_as_random_shuffle(seed, n):
    """The builders' shuffle (``tasks.base.shuffle``) is ``random.Random.shuffle``, draw for draw:
    the same order and the same state after, so every later draw of a sample is too."""
    import random

    from ctxgate.tasks.base import shuffle

    mine, theirs = random.Random(seed), random.Random(seed)
    a, b = list(range(n)), list(range(n))
    shuffle(mine, a)
    theirs.shuffle(b)
    assert a == b and mine.getstate() == theirs.getstate()
