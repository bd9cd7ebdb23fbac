import json

import pytest

from ctxgate.data.haystacks import HaystackError, load_essay
from ctxgate.tasks import BuildContext, MaterialExhausted, get_task
from ctxgate.tasks.build import build_sample

TEXT = " ".join(f"Sentence number {i} talks about rivers and maps." for i in range(40))


def test_default_essay_is_shipped_and_hashed():
    essay = load_essay(None)
    assert len(essay.sentences) > 100 and len(essay.sha256) == 64


def test_text_file_and_dataset_with_text_column(tmp_path):
    (tmp_path / "h.txt").write_text(TEXT)
    (tmp_path / "h.jsonl").write_text(
        "\n".join(json.dumps({"text": s + "."}) for s in TEXT.split(".") if s)
    )
    from_txt = load_essay(str(tmp_path / "h.txt"))
    from_ds = load_essay(str(tmp_path / "h.jsonl"))
    assert from_txt.sentences[0] == "Sentence number 0 talks about rivers and maps."
    assert len(from_ds.sentences) == 40


def test_user_haystack_is_used_by_essay_tasks(tmp_path, hf_encoder):
    (tmp_path / "h.txt").write_text(
        " ".join(f"Sentence {i} talks about rivers and maps." for i in range(400))
    )
    ctx = BuildContext(encoder=hf_encoder, chat=False, essay_path=str(tmp_path / "h.txt"))
    s = build_sample(get_task("niah_single_2"), ctx, 1024, 0, 42)
    assert "talks about rivers and maps" in hf_encoder.decode(s.input_ids)


@pytest.mark.parametrize(
    ("content", "name", "message"),
    [
        (None, "missing.txt", "does not exist"),
        ("Too short.", "short.txt", "at least 8"),
        ('{"body": "x"}\n', "cols.jsonl", "no 'text' column"),
        ("x", "data.xml", "unknown file type"),
    ],
)
def test_bad_haystacks_say_what_to_do(tmp_path, content, name, message):
    if content is not None:
        (tmp_path / name).write_text(content)
    with pytest.raises(HaystackError, match=message):
        load_essay(str(tmp_path / name))


def _repeated_sentences(encoder, ids) -> tuple[int, list[str]]:
    """Sentences over 40 characters in a prompt's decoded text, and those among them that occur
    twice."""
    import collections
    import re

    sentences = [x for x in re.split(r"(?<=[.!?])\s+", encoder.decode(ids)) if len(x) > 40]
    return len(sentences), [x for x, n in collections.Counter(sentences).items() if n > 1]


@pytest.mark.parametrize("length", [16384, 131072])
def test_the_default_haystack_never_repeats_a_sentence(hf_encoder, length):
    """RULER never repeats its essays, and neither does the shipped Wikipedia prose."""
    essay = load_essay(None)
    assert essay.source == "ctxgate:haystack_wikipedia"
    ctx = BuildContext(encoder=hf_encoder, chat=False)
    s = build_sample(get_task("niah_single_2"), ctx, length, 0, 42)
    assert len(s.input_ids) > length - 200
    count, repeated = _repeated_sentences(hf_encoder, s.input_ids)
    assert count > 100 * length // 16384 and repeated == []


@pytest.mark.parametrize("length", [262144, 1048576])
@pytest.mark.parametrize("tokenizer", ["shipped", "large vocabulary"])
def test_essay_prompts_fill_a_million_tokens_without_repeating_a_sentence(
    request, hf_encoder, large_vocab_encoder, tokenizer, length
):
    """The default haystack fills 1M tokens of a 131K-vocabulary tokenizer (Tekken) with every
    sentence once: the essay tasks reach 1M without --haystack."""
    encoder = hf_encoder if tokenizer == "shipped" else large_vocab_encoder
    ctx = BuildContext(encoder=encoder, chat=True)
    s = build_sample(get_task("niah_multikey_1"), ctx, length, 0, 42)
    assert length - 200 < len(s.input_ids) + 128 <= length
    count, repeated = _repeated_sentences(encoder, s.input_ids)
    assert count > length // 100 and repeated == []


def test_the_second_volume_is_read_only_when_a_prompt_needs_it(monkeypatch, hf_tokenizer):
    """Start-up and short prompts never decompress the 5 MB volume; a longer prompt reads it and
    checks its hash."""
    import lzma

    from ctxgate.data import haystacks
    from ctxgate.tokens.codec import PieceEncoder
    from ctxgate.tokens.tokenizers import HFTokenizer

    decompress = lzma.decompress

    def refuse(data):
        raise AssertionError("volume 2 decompressed")

    monkeypatch.setattr(haystacks.lzma, "decompress", refuse)
    haystacks._packaged_sentences.cache_clear()
    encoder = PieceEncoder(HFTokenizer(hf_tokenizer))  # a fresh one: nothing tokenized yet
    ctx = BuildContext(encoder=encoder, chat=False)
    essay = load_essay(None)
    assert len(essay.sha256) == 64  # the report's hash, from the manifest
    build_sample(get_task("niah_single_2"), ctx, 131072, 0, 42)
    with pytest.raises(AssertionError, match="volume 2 decompressed"):
        build_sample(get_task("niah_single_2"), ctx, 524288, 0, 42)
    monkeypatch.setattr(haystacks.lzma, "decompress", decompress)
    s = build_sample(get_task("niah_single_2"), ctx, 524288, 0, 42)
    assert len(s.input_ids) > 524288 - 300


def test_a_damaged_volume_is_one_line_naming_it_and_the_fix():
    from ctxgate.data import haystacks

    volume = haystacks._default_essay().volumes[1]
    with pytest.raises(
        HaystackError, match=r"haystack_wikipedia_2.txt.xz does not match its sha256.*reinstall"
    ):
        haystacks._packaged_sentences(volume.resource, "0" * 64)


def test_a_length_beyond_the_haystack_fails_with_the_flag(tmp_path, hf_encoder):
    (tmp_path / "h.txt").write_text(TEXT)  # 40 sentences, about 400 tokens
    ctx = BuildContext(encoder=hf_encoder, chat=False, essay_path=str(tmp_path / "h.txt"))
    with pytest.raises(
        MaterialExhausted, match=r"ran out at .* pass --haystack with a longer text"
    ):
        build_sample(get_task("niah_single_2"), ctx, 4096, 0, 42)


def test_ruler_essays_are_fetched_pinned_and_used(tmp_path, capsys):
    from ctxgate.cli import main

    essays = tmp_path / "essays.jsonl"
    essays.write_text("".join(json.dumps({"text": f"Essay {i}. " + TEXT}) + "\n" for i in range(3)))
    assert (
        main(["data", "fetch", "--to", str(tmp_path / "data"), "--ruler-essays", str(essays)]) == 0
    )
    written = tmp_path / "data" / "ruler" / "paul_graham_essays.txt"
    digest = capsys.readouterr().out.split("sha256 ")[1].split(")")[0]
    assert load_essay(str(written)).sentences[0] == "Essay 0."
    assert (
        main(
            [
                "data",
                "fetch",
                "--to",
                str(tmp_path / "again"),
                "--ruler-essays",
                str(essays),
                "--essays-sha256",
                digest,
            ]
        )
        == 0
    )
    assert (
        main(
            [
                "data",
                "fetch",
                "--to",
                str(tmp_path / "bad"),
                "--ruler-essays",
                str(essays),
                "--essays-sha256",
                "0" * 64,
            ]
        )
        == 2
    )
    assert "a different copy" in capsys.readouterr().err
