"""PEFT adapter folders as --model, on adapters a real LoRA Trainer run saves
(fixtures/training_runs.py): the suite's predictions are the merged Hugging Face folder's, each
adapter is its own model for the cache, and a missing piece is one line naming it before any model
loads."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from ctxgate.backends.checkpoint import CheckpointError
from ctxgate.ext.checkpoints.adapters import find_adapter
from ctxgate.steps import Step
from tests.conftest import TINY, engine_in_its_server

CASES = ("-k", "niah_single_1", "--lengths", "1k", "--samples", "4")
ONE_VT = ("-k", "vt", "--lengths", "1k", "--samples", "1", "--no-cache")


@pytest.fixture(scope="module")
def lora(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[Path], Path]:
    """Two saved adapters of one LoRA run (steps 2 and 4) and the step-4 adapter merged into a plain
    folder."""
    from fixtures.training_runs import lora_run, merged

    root = tmp_path_factory.mktemp("lora")
    checkpoints = lora_run(root / "run", steps=4, save_every=2)
    return checkpoints, merged(checkpoints[-1], root / "merged")


def _predictions(report: Path) -> list[str]:
    rows = report.with_suffix(".predictions.jsonl").read_text().splitlines()
    return [json.loads(line)["prediction"] for line in rows if line.strip()]


def test_an_adapter_predicts_as_its_merged_folder_and_is_its_own_model(lora, real_suite, pytester):
    (step2, step4), merged = lora
    reports = {}
    for name, model in (("base", TINY), ("step2", step2), ("step4", step4), ("merged", merged)):
        result = real_suite(*CASES, "--cache-dir", "cache", "--report", f"{name}.json", model=model)
        assert result.ret == 0, result.stdout.str()[-2000:]
        reports[name] = pytester.path / f"{name}.json"
    assert _predictions(reports["step4"]) == _predictions(reports["merged"])
    assert _predictions(reports["step4"]) != _predictions(reports["base"])  # the adapter is applied
    runs = {k: json.loads(v.read_text())["run"] for k, v in reports.items()}
    assert (
        runs["step4"]["base_model"] == str(TINY.resolve())
        or Path(runs["step4"]["base_model"]) == TINY
    )
    assert runs["step4"]["backend"]["adapter"]["applied"] == "merged"
    fingerprints = {k: r["model_fingerprint"]["sha256"] for k, r in runs.items()}
    assert len(set(fingerprints.values())) == 4
    assert runs["step2"]["model_fingerprint"]["base_sha256"] == fingerprints["base"]
    count = sqlite3.connect(pytester.path / "cache" / "generations.sqlite").execute(
        "SELECT COUNT(DISTINCT namespace) FROM generations"
    )
    assert count.fetchone()[0] == 4  # two adapters on one base never share cached outputs


def test_the_trainer_runs_checkpoints_give_the_step_their_trainer_state_says(lora):
    """The real run behind tests/test_steps.py's hand-written Trainer folder: each saved
    checkpoint's trainer_state.json gives its step, whatever the folder is called."""
    from ctxgate.steps import TRAINER_STATE, training_step

    (step2, step4), _ = lora
    assert [training_step(c) for c in (step2, step4)] == [
        Step(2, TRAINER_STATE),
        Step(4, TRAINER_STATE),
    ]
    assert json.loads((step4 / TRAINER_STATE).read_text())["global_step"] == 4


def test_an_adapter_whose_base_is_gone_is_one_line_naming_it_and_the_flag(
    lora, real_suite, tmp_path
):
    (_, step4), _ = lora
    moved = tmp_path / "adapter"
    shutil.copytree(step4, moved)
    config = json.loads((moved / "adapter_config.json").read_text())
    config["base_model_name_or_path"] = str(tmp_path / "gone" / "tiny")
    (moved / "adapter_config.json").write_text(json.dumps(config))
    result = real_suite(*CASES, "--no-cache", model=moved)
    out = result.stdout.str()
    assert result.ret != 0 and "Traceback" not in out
    assert (
        f"the adapter's base model '{tmp_path / 'gone' / 'tiny'}'" in out
        and "pass --base-model PATH" in out
    )
    fixed = real_suite(*CASES, "--no-cache", "--base-model", str(TINY), model=moved)
    assert fixed.ret == 0, fixed.stdout.str()[-2000:]


def test_an_adapter_without_weights_or_with_pickle_is_named(lora, tmp_path):
    (_, step4), _ = lora
    folder = tmp_path / "adapter"
    shutil.copytree(step4, folder)
    (folder / "adapter_model.safetensors").rename(folder / "adapter_model.bin")
    with pytest.raises(
        CheckpointError, match=r"adapter_model\.bin is a pickle file.*--allow-pickle"
    ):
        find_adapter(folder, None)
    (folder / "adapter_model.bin").unlink()
    with pytest.raises(
        CheckpointError, match=r"no adapter weights .*restore the file from the training run"
    ):
        find_adapter(folder, None)
    (folder / "adapter_config.json").write_text("{}")
    with pytest.raises(CheckpointError, match="names no peft_type"):
        find_adapter(folder, None)


def _edit_config(folder: Path) -> None:
    config = json.loads((folder / "adapter_config.json").read_text())
    (folder / "adapter_config.json").write_text(json.dumps({**config, "peft_type": "NOTAPEFT"}))


def _cut_weights(folder: Path) -> None:
    weights = folder / "adapter_model.safetensors"
    with weights.open("r+b") as f:
        f.truncate(weights.stat().st_size // 2)


def _empty_weights(folder: Path) -> None:
    (folder / "adapter_model.safetensors").write_bytes(b"")


@pytest.mark.parametrize(
    ("damage", "expected"),
    [
        (
            _edit_config,
            r"peft_type 'NOTAPEFT' is not one this peft loads \(e\.g\. LORA, .*restore it from "
            r"the training",
        ),
        (_cut_weights, r"adapter_model\.safetensors is truncated: .*re-copy the file"),
        (
            _empty_weights,
            r"adapter_model\.safetensors is not a safetensors file, or it is cut short \(0 bytes\)",
        ),
    ],
    ids=["unknown-peft-type", "truncated-weights", "empty-weights"],
)
def test_a_damaged_adapter_is_one_line_before_anything_loads(lora, tmp_path, damage, expected):
    (_, step4), _ = lora
    folder = tmp_path / "adapter"
    shutil.copytree(step4, folder)
    damage(folder)
    with pytest.raises(CheckpointError, match=expected):
        find_adapter(folder, None)


def test_base_model_without_an_adapter_is_a_usage_error(real_suite):
    result = real_suite(*CASES, "--base-model", str(TINY))
    assert result.ret == 4 and "--base-model is for a PEFT adapter folder" in result.stderr.str()


def test_vllm_serves_an_adapter_merged_into_its_base(lora, real_suite, pytester):
    """--backend vllm loads the adapter merged into its base (written once as a Hugging Face
    folder): the same predictions as the merged folder under HF, and the report says what was
    served."""
    (_, step4), merged = lora
    with engine_in_its_server():
        served = real_suite(
            *CASES,
            "--backend",
            "vllm",
            "--cache-dir",
            "cache",
            "--report",
            "vllm.json",
            model=step4,
        )
    assert served.ret == 0, served.stdout.str()[-3000:]
    assert real_suite(*CASES, "--no-cache", "--report", "merged.json", model=merged).ret == 0
    assert _predictions(pytester.path / "vllm.json") == _predictions(pytester.path / "merged.json")
    run = json.loads((pytester.path / "vllm.json").read_text())["run"]
    assert "the PEFT adapter merged into its base" in json.dumps(run)
    assert [p.name for p in (pytester.path / "cache" / "models").iterdir() if p.is_dir()][
        0
    ].startswith("model-")


def test_an_adapter_on_a_base_of_another_shape_is_one_line_naming_a_tensor(
    lora, real_suite, tmp_path
):
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    config = LlamaConfig.from_pretrained(TINY)
    config.hidden_size, config.intermediate_size, config.head_dim = 64, 256, 32
    config.num_attention_heads = config.num_key_value_heads = 2
    other = tmp_path / "narrow-base"
    LlamaForCausalLM(config).save_pretrained(other)
    AutoTokenizer.from_pretrained(TINY).save_pretrained(other)
    checkpoints, _ = lora
    result = real_suite(*CASES, "--base-model", str(other), model=checkpoints[-1])
    out = result.stdout.str() + result.stderr.str()
    assert result.ret != 0 and "Traceback" not in out and "size mismatch" not in out
    assert (
        f"does not fit the base {other}: " in out
        and "in the adapter and torch.Size([4, 64]) in the base" in out
    )
    assert "pass --base-model with the model it was trained on" in out


@pytest.fixture(scope="module")
def rank4_adapter(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A LoRA adapter a real Trainer run saved (rank 4)."""
    from fixtures.training_runs import lora_run

    return lora_run(tmp_path_factory.mktemp("lora") / "run", steps=2, save_every=2)[-1]


def test_an_adapter_whose_config_disagrees_with_its_own_weights_is_not_sent_to_another_base(
    rank4_adapter, real_suite, tmp_path
):
    """Told apart from an adapter on the wrong base."""
    edited = tmp_path / "adapter"
    shutil.copytree(rank4_adapter, edited)
    config = json.loads((edited / "adapter_config.json").read_text())
    assert config["r"] == 4
    (edited / "adapter_config.json").write_text(json.dumps({**config, "r": 8}))
    result = real_suite(*ONE_VT, model=edited)
    out = result.stdout.str() + result.stderr.str()
    assert result.ret != 0 and "Traceback" not in out and "size mismatch" not in out
    assert (
        "its adapter_config.json makes " in out
        and "lora_A.default.weight rank 8, but its own weights are rank 4" in out
    )
    assert "the adapter is damaged or its config was edited; restore adapter_config.json" in out
    assert "--base-model" not in out
