"""A checkpoint's own files, read through one door before anything loads: every JSON file
(``checkpoint.read_json``), the tokenizer transformers needs, and ``ctxgate init`` with a file where
it makes a folder (an adapter folder's files: tests/ext/checkpoints/test_adapter_files.py; config
overrides transformers' own config class refuses: tests/ext/rope/test_override_config_class.py).
Each refusal is one line naming the file or the flag, what is wrong and the fix."""

from __future__ import annotations

import json
import shutil
import struct

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxgate.backends.checkpoint import (
    CheckpointError,
    check_checkpoint,
    check_safetensors,
    check_tokenizer,
    read_json,
)
from ctxgate.backends.formats import locate
from ctxgate.steps import TRAINER_STATE, training_step
from tests.conftest import TINY, call_ctxgate

CASES = ("-k", "vt", "--lengths", "1k", "--samples", "1", "--no-cache")
FUNCTION_SCOPED = settings(
    max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner),
    max_leaves=12,
)


@st.composite
def structured_garbage(draw: st.DrawFn) -> bytes:
    """What lands in a checkpoint's JSON file: JSON of any type in any encoding, nesting deeper than
    Python's parser goes, numbers longer than it converts, cut or raw bytes, nothing."""
    how = draw(st.sampled_from(["json", "nested", "digits", "cut", "bytes", "blank"]))
    if how == "json":
        text = json.dumps(draw(JSON_VALUES), ensure_ascii=draw(st.booleans()))
        return text.encode(draw(st.sampled_from(["utf-8", "utf-8-sig", "utf-16", "utf-32"])))
    if how == "nested":
        depth = draw(st.integers(1, 200_000))
        opened, closed = draw(st.sampled_from([("[", "]"), ('{"a":', "}")]))
        return (opened * depth + "1" + closed * depth).encode()
    if how == "digits":
        return ('{"n": ' + "7" * draw(st.integers(1, 20_000)) + "}").encode()
    if how == "cut":
        whole = json.dumps({"weight_map": draw(JSON_VALUES)}).encode()
        return whole[: draw(st.integers(0, len(whole)))]
    if how == "bytes":
        return draw(st.binary(max_size=64))
    return draw(st.sampled_from([b"", b" \n\t", b"\n"]))


@FUNCTION_SCOPED
@given(raw=structured_garbage(), kind=st.sampled_from([dict, object]))
def test_the_reader_answers_any_bytes_with_the_value_or_one_designed_line(tmp_path, raw, kind):
    path = tmp_path / "config.json"
    path.write_bytes(raw)
    try:
        expected = json.loads(raw.decode("utf-8"))
    except (ValueError, RecursionError):
        expected = CheckpointError
    if expected is not CheckpointError and isinstance(expected, kind):
        assert read_json(path, "restore it", kind) == expected
        return
    with pytest.raises(CheckpointError) as refused:
        read_json(path, "restore it", kind)
    line = str(refused.value)
    assert "\n" not in line and line.startswith(str(path)) and line.endswith(": restore it")


@pytest.mark.parametrize(
    ("damage", "said"),
    [
        ("folder", "is a folder, where a JSON file goes"),
        ("nested", "not readable JSON (nested too deeply)"),
        ("latin-1", "not UTF-8 text (byte offset"),
        ("array", "holds a JSON array, not a JSON object"),
        ("empty", "is empty"),
    ],
)
@pytest.mark.parametrize(
    "name",
    [
        "config.json",
        "generation_config.json",
        "tokenizer_config.json",
        "tokenizer.json",
        "model.safetensors.index.json",
    ],
)
def test_every_json_file_of_a_checkpoint_is_one_line_naming_it(ckpt, name, damage, said):
    path = ckpt / name
    path.unlink(missing_ok=True)
    if damage == "folder":
        path.mkdir()
    else:
        path.write_bytes(
            {
                "nested": b"[" * 100_000,
                "latin-1": '{"name": "café"}'.encode("latin-1"),
                "array": b"[1, 2]",
                "empty": b"",
            }[damage]
        )
    with pytest.raises(CheckpointError) as refused:
        locate(ckpt)
    line = str(refused.value)
    assert line.startswith(str(path)) and said in line and "\n" not in line
    assert line.endswith("base model"), line


@pytest.mark.parametrize("state", [b"[" * 100_000, b"\xff\xfe", b"[]", b""])
def test_a_trainer_state_that_cannot_be_read_leaves_the_step_to_the_folders_name(tmp_path, state):
    folder = tmp_path / "checkpoint-300"
    folder.mkdir()
    (folder / TRAINER_STATE).write_bytes(state)
    assert training_step(folder).value == 300
    (folder / TRAINER_STATE).write_text(json.dumps({"global_step": 299}))
    assert training_step(folder).value == 299


@pytest.mark.parametrize(
    "header",
    [b"[" * 50_000, b'{"w": {"data_offsets": 5}}', b'{"w": {"data_offsets": ["0", 4]}}'],
    ids=["nested", "offsets-not-a-pair", "offsets-not-numbers"],
)
def test_a_safetensors_header_of_any_shape_is_one_line(tmp_path, header):
    path = tmp_path / "model.safetensors"
    path.write_bytes(struct.pack("<Q", len(header)) + header + b"\0" * 16)
    with pytest.raises(CheckpointError, match="re-copy the file") as refused:
        check_safetensors(path)
    assert "\n" not in str(refused.value) and str(path) in str(refused.value)


# the tokenizer transformers needs -----------------------------------------------------------------


def test_a_tokenizer_folder_with_only_its_config_names_what_transformers_needs(tmp_path):
    folder = tmp_path / "tok"
    folder.mkdir()
    shutil.copy(TINY / "tokenizer_config.json", folder)
    with pytest.raises(CheckpointError) as refused:
        check_tokenizer(folder, "--tokenizer")
    assert str(refused.value) == (
        f"--tokenizer {folder}: {folder} has tokenizer_config.json (which only names the "
        "tokenizer's class) but no tokenizer: transformers builds one from tokenizer.json, "
        "tokenizer.model (SentencePiece) or vocab.json with merges.txt (BPE). Trainers often save "
        "them only with the final checkpoint: copy the tokenizer files of the base model into this "
        "folder"
    )
    (folder / "vocab.json").write_text('{"a": 0}')
    with pytest.raises(CheckpointError, match="has vocab.json but not merges.txt, which BPE needs"):
        check_tokenizer(folder)
    (folder / "merges.txt").write_text("#version: 0.2\n")
    check_tokenizer(folder)  # a BPE vocabulary whole
    (folder / "vocab.json").unlink()
    (folder / "merges.txt").unlink()
    (folder / "tokenizer.model").write_bytes(b"\0")
    check_tokenizer(folder)  # SentencePiece


def test_a_checkpoint_whose_tokenizer_is_only_its_config_is_one_line_from_pytest(real_suite, ckpt):
    (ckpt / "tokenizer.json").unlink()
    result = real_suite(*CASES, model=ckpt)
    out = result.stdout.str() + result.stderr.str()
    assert result.ret == 1 and "Traceback" not in out
    assert f"{ckpt} has tokenizer_config.json (which only names the tokenizer's class)" in out


# ctxgate init with a file in the way --------------------------------------------------------------


@pytest.mark.parametrize(
    ("ci", "in_the_way", "where"),
    [("slurm", "ci", "ci/ctxgate.sbatch"), ("github", ".github", ".github/workflows/ctxgate.yml")],
)
def test_init_names_a_file_where_it_makes_a_folder_and_writes_nothing(
    tmp_path, ci, in_the_way, where
):
    (tmp_path / in_the_way).write_text("mine\n")
    refused = call_ctxgate("init", str(tmp_path), "--ci", ci, "--force", cwd=tmp_path)
    assert refused.returncode == 2
    assert refused.stderr == (
        f"ctxgate init: {tmp_path / in_the_way} is a file, but ctxgate init makes a folder there "
        f"for {tmp_path / where}; nothing was written: move or rename the file, then run ctxgate "
        "init again\n"
    )
    assert (tmp_path / in_the_way).read_text() == "mine\n"
    assert not (tmp_path / "thresholds.toml").exists()


def test_the_shipped_checkpoint_reads_as_before():
    check_checkpoint(TINY)


def test_a_helmet_tokenizer_with_only_its_config_is_refused_by_the_same_check(pytester, tmp_path):
    folder = tmp_path / "llama2-tok"
    folder.mkdir()
    shutil.copy(TINY / "tokenizer_config.json", folder)
    pytester.makeini("[pytest]\naddopts = -p no:cacheprovider\n")
    result = pytester.runpytest("--model", str(TINY), "--helmet-tokenizer", str(folder))
    line = [x for x in result.stderr.lines if "--helmet-tokenizer" in x]
    assert result.ret == 4 and len(line) == 1
    assert f"{folder} has tokenizer_config.json (which only names the tokenizer's class)" in line[0]


def test_a_bpe_vocabularys_merges_are_in_the_fingerprint(ckpt):
    from ctxgate.backends.fingerprint import checkpoint_fingerprint

    (ckpt / "vocab.json").write_text('{"a": 0, "b": 1}')
    (ckpt / "merges.txt").write_text("#version: 0.2\na b\n")
    before = checkpoint_fingerprint(str(ckpt))
    (ckpt / "merges.txt").write_text("#version: 0.2\nb a\n")
    after = checkpoint_fingerprint(str(ckpt))
    assert before["sha256"] != after["sha256"] and "file:merges.txt" in after
