import json

import pytest

from ctxgate.haystacks import HaystackError, load_essay
from ctxgate.seeding import sample_rng
from ctxgate.tasks import BuildContext, get_task

TEXT = " ".join(f"Sentence number {i} talks about rivers and maps." for i in range(40))


def test_default_essay_is_shipped_and_hashed():
    essay = load_essay(None)
    assert len(essay.sentences) > 100 and len(essay.sha256) == 64


def test_text_file_and_dataset_with_text_column(tmp_path):
    (tmp_path / "h.txt").write_text(TEXT)
    (tmp_path / "h.jsonl").write_text("\n".join(json.dumps({"text": s + "."}) for s in TEXT.split(".") if s))
    from_txt = load_essay(str(tmp_path / "h.txt"))
    from_ds = load_essay(str(tmp_path / "h.jsonl"))
    assert from_txt.sentences[0] == "Sentence number 0 talks about rivers and maps."
    assert len(from_ds.sentences) == 40


def test_user_haystack_is_used_by_essay_tasks(tmp_path, hf_encoder):
    (tmp_path / "h.txt").write_text(TEXT)
    ctx = BuildContext(encoder=hf_encoder, chat=False, essay_path=str(tmp_path / "h.txt"))
    s = get_task("niah_single_2").build(ctx, 1024, 0, sample_rng("niah_single_2", 1024, 0, 42))
    assert "talks about rivers and maps" in hf_encoder.decode(s.input_ids)


@pytest.mark.parametrize(("content", "name", "message"), [
    (None, "missing.txt", "does not exist"),
    ("Too short.", "short.txt", "at least 8"),
    ('{"body": "x"}\n', "cols.jsonl", "no 'text' column"),
    ("x", "data.xml", "unknown file type"),
])
def test_bad_haystacks_say_what_to_do(tmp_path, content, name, message):
    if content is not None:
        (tmp_path / name).write_text(content)
    with pytest.raises(HaystackError, match=message):
        load_essay(str(tmp_path / name))
