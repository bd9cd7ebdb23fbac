"""The middle cut from the text's ends alone is the whole text's, byte for byte: over random texts,
budgets and search scales, with the tiny model's byte-level tokenizer and with one that merges
across words (where the split check must send it back to the whole text); a text without a word end
is tokenized whole."""

from __future__ import annotations

import hashlib
import json
import random
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxgate.api import HFTokenizer, PieceEncoder
from ctxgate.ext.longbench2.cutting import SCALE, WHOLE, Scale, from_ends, kept_ids, truncated
from ctxgate.ext.longbench2.prompts import ZERO_SHOT, ZERO_SHOT_COT, fill, middle
from ctxgate.ext.longbench2.records import parse
from fixtures.make_longbench2_fixture import records as fixture_records

HERE = Path(__file__).parent
TINY = HERE.parents[2] / "fixtures" / "tiny-llama-niah"
PIECES = (
    "the", "river", "stone", "banner", "Arlen", " ", "  ", "\n", "\n\n", " \n", "\t", ",", ".",
    "'s", "\u00e9", "\u4e2d\u6587", "\U0001f642", "12", "<|endoftext|>", "</s>", "\u2581",
)  # fmt: skip
SOME = settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
TEXTS = st.one_of(
    st.lists(st.sampled_from(PIECES), min_size=200, max_size=800).map("".join),
    st.lists(st.sampled_from(PIECES), max_size=40).map("".join),
    st.text(max_size=300),
)
SCALES = st.builds(
    Scale,
    reach=st.sampled_from([1, 4, 16, 64]),
    look=st.sampled_from([8, 64]),
    tries=st.integers(1, 4),
    sample=st.sampled_from([4, 16, 64]),
)


@pytest.fixture(scope="module")
def tiny() -> PieceEncoder:
    from transformers import AutoTokenizer

    return PieceEncoder(HFTokenizer(AutoTokenizer.from_pretrained(str(TINY))))


@pytest.fixture(scope="module", params=["whole-text", "metaspace"])
def merging(request: pytest.FixtureRequest) -> PieceEncoder:
    """SentencePiece-style BPEs, BOS first: one with no pre-tokenizer, trained to merge across
    words ('river\u2581\u2581sto'); one that splits words at spaces and marks a text's first."""
    from tokenizers import (
        Tokenizer,
        decoders,
        models,
        normalizers,
        pre_tokenizers,
        processors,
        trainers,
    )
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE(unk_token="<unk>", byte_fallback=True))
    if request.param == "metaspace":
        tok.pre_tokenizer = pre_tokenizers.Metaspace(prepend_scheme="first")
    else:
        tok.normalizer = normalizers.Sequence(
            [normalizers.Prepend("\u2581"), normalizers.Replace(" ", "\u2581")]
        )
    tok.decoder = decoders.Sequence(
        [decoders.Replace("\u2581", " "), decoders.ByteFallback(), decoders.Fuse()]
    )
    rng = random.Random(3)
    corpus = ["".join(rng.choice(PIECES[:13]) for _ in range(400)) for _ in range(40)]
    tok.train_from_iterator(
        corpus,
        trainers.BpeTrainer(vocab_size=300, special_tokens=["<s>", "<unk>"], show_progress=False),
    )
    bos = ("<s>", tok.token_to_id("<s>"))
    tok.post_processor = processors.TemplateProcessing(single="<s> $A", special_tokens=[bos])
    wrapped = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<s>", eos_token="<s>")
    return PieceEncoder(HFTokenizer(wrapped))


def _whole_cut(enc: PieceEncoder, text: str, budget: int) -> list[int] | None:
    ids = enc.whole(text)
    return None if len(ids) <= budget else middle(ids, budget)


def _same_as_whole(enc: PieceEncoder, text: str, budget: int, scale: Scale) -> None:
    fast = from_ends(enc, text, budget, scale)
    assert fast is None or fast == _whole_cut(enc, text, budget)
    cut = truncated(enc, text, budget, scale)
    assert cut == truncated(enc, text, budget, WHOLE)
    assert cut is text or _whole_cut(enc, text, budget) is not None  # uncut: the text itself


@SOME
@given(TEXTS, st.integers(0, 160), SCALES)
def test_the_ends_cut_as_the_whole_text_byte_level(
    tiny: PieceEncoder, text: str, budget: int, scale: Scale
) -> None:
    _same_as_whole(tiny, text, budget, scale)


@SOME
@given(TEXTS, st.integers(0, 160), SCALES)
def test_the_ends_cut_as_the_whole_text_merging_words(
    merging: PieceEncoder, text: str, budget: int, scale: Scale
) -> None:
    _same_as_whole(merging, text, budget, scale)


def _prose(words: int, seed: int) -> str:
    rng = random.Random(seed)
    vocab = ("river", "stone", "market", "banner,", "town.", "winter", "Arlen's", "\u00e9t\u00e9")
    return "".join(
        rng.choice(vocab) + rng.choice((" ", " ", "  ", "\n", " \n")) for _ in range(words)
    )


@pytest.mark.parametrize("budget", [2, 3, 1875, 2000, 4095])
def test_the_ends_are_used_and_exact_at_the_default_scale(tiny: PieceEncoder, budget: int) -> None:
    text = _prose(20000, budget)
    fast = from_ends(tiny, text, budget, SCALE)
    assert fast is not None and fast == _whole_cut(tiny, text, budget)
    assert kept_ids(tiny, text, budget) == fast


def test_the_ends_are_used_where_words_merge_only_where_they_split(merging: PieceEncoder) -> None:
    text = _prose(20000, 5)
    fast = from_ends(merging, text, 2000, SCALE)
    assert fast is None or fast == _whole_cut(merging, text, 2000)


@pytest.mark.parametrize("text", ["x" * 40000, "\u4e2d" * 40000, " " + "ab" * 20000])
def test_a_text_without_a_word_end_is_tokenized_whole(tiny: PieceEncoder, text: str) -> None:
    assert from_ends(tiny, text, 1000, SCALE) is None
    assert truncated(tiny, text, 1000) == truncated(tiny, text, 1000, WHOLE)


def test_a_text_near_the_budget_is_tokenized_whole(tiny: PieceEncoder) -> None:
    text = _prose(3000, 1)
    n = len(tiny.whole(text))
    for budget in (n - 1, n, n + 1, n // 2 + 1):
        assert from_ends(tiny, text, budget, SCALE) is None
        assert truncated(tiny, text, budget) == truncated(tiny, text, budget, WHOLE)


def test_the_references_prompts_come_from_the_ends(tiny: PieceEncoder) -> None:
    """goldens.json's pred.py prompts, cut from the ends at a scale small enough for the fixture's
    contexts: the same bytes, and some of them did come from the ends."""
    golden = json.loads((HERE / "goldens.json").read_text("utf-8"))["prompts"]
    parsed = {r.id: r for r in parse(fixture_records(), "fixture")}
    small, fast = Scale(reach=64, look=512, sample=256), 0
    for key, (plain, first, _) in golden.items():
        rid, budget = key.rsplit("@", 1)
        for template, want in ((ZERO_SHOT, plain), (ZERO_SHOT_COT, first)):
            text = fill(template, parsed[rid])
            got = truncated(tiny, text, int(budget), small)
            assert hashlib.sha256(got.encode("utf-8")).hexdigest() == want, key
            fast += from_ends(tiny, text, int(budget), small) is not None
    assert fast >= 4
