"""Every command README.md and docs/ show runs, as written.

A page's shell blocks (```bash, and the ``$ `` lines of ```console) run in order, each in bash, in a
scratch folder that holds the checkout's files and the documented placeholders (docs/README.md,
"Placeholders"): ``path/to/ckpt`` is the shipped tiny checkpoint, ``path/to/data`` HELMET's data
layout with the fixture data. A command ending with the comment ``# exit status N`` must exit N,
every other 0. A command that needs what this machine has not (a GPU, a served model, an API key,
the network) is in ``NOT_RUN`` with the reason, or names the test that runs it."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import ROOT

# extending.md's commands need its example package installed: tests/test_outside.py runs them
PAGES = [
    ROOT / "README.md",
    *sorted(p for p in (ROOT / "docs").glob("*.md") if p.name != "extending.md"),
]
GPU = "needs a GPU node"
SERVED = "needs a model served at the URL it names"
KEY = "needs an API key and the provider's network"
NET = "downloads from the hub, which this machine cannot reach"
CLUSTER = "needs a Ray cluster of several nodes"
THINKING_TESTS = (
    "tests/ext/thinking/test_thinking_e2e.py runs the shipped tiny reasoning model with --thinking "
    "on and off, a budget, and a vLLM server with its reasoning parser, its own thinking budget "
    "and --budget-forcing"
)

# command (as written, without its trailing comment) -> why the test command does not run it here
NOT_RUN: dict[str, str] = {
    "python bench/gpu.py --out out/gpu": f"{GPU}; tests/test_bench_gpu.py runs its --smoke mode",
    "bash scripts/demo.sh": "tests/test_demo.py runs it (with --samples 3 and its own output "
    "folder)",
    "bash scripts/test.sh": "the test command itself: it runs this test",
    "bash scripts/vllm_env.sh": "scripts/test.sh runs it before the tests (tests/test_engines.py "
    "uses its .venv-vllm)",
    "pytest --model path/to/ckpt -n 8": f"{GPU}: every task at 8K-128K",
    'pytest --model /ckpts/step-12000 -k "niah_single_1 or vt" --lengths 512 -n 2 --report '
    "out/r.json": (
        "shows a checkpoint with truncated weights; tests/test_e2e_failures.py::"
        "test_a_truncated_checkpoint_ends_as_one_message_and_a_report runs one"
    ),
    "pytest --model path/to/ckpt -n 8 --data-dir path/to/data --judge-model gpt-4o-2024-05-13 "
    "--report out/run.json": (
        f"{KEY} (OpenAI's); tests/test_demo.py runs the same with the offline judge server"
    ),
    "pytest --model path/to/ckpt -n 8 --data-dir path/to/data --judge-model "
    "Qwen/Qwen2.5-72B-Instruct "
    "--judge-base-url http://judge:8000/v1": f"{SERVED} (a 72B judge)",
    "ctxgate judge out/run.json --judge-model "
    "gpt-4o-2024-05-13": f"{KEY}; tests/test_judge_client.py judges offline",
    "pytest --model path/to/ckpt --reference meta-llama/Llama-3.1-8B-Instruct --report "
    "out/llama.json": (f"{GPU}: Llama-3.1-8B at 8K-128K"),
    'pip install -e ".[gpu]"': f"{GPU}: flash-attn builds against CUDA",
    "pytest --model path/to/ckpt -n auto --report out/run.json --junitxml out/junit.xml": (
        f"{GPU}: every task at 8K-128K"
    ),
    "pytest --model path/to/ckpt --backend vllm --tp 8 -n 2 --report "
    "out/run.json": f"{GPU}: 8 GPUs",
    "pytest --model path/to/ckpt --device-map auto --gpus-per-replica 4 -n auto --report "
    "out/run.json": (f"{GPU}: 8 GPUs"),
    "pytest --model path/to/ckpt --backend openai --base-url http://gpu7:8000/v1 --base-url "
    "http://gpu8:8000/v1 -n 4": (
        f"{SERVED}; tests/test_engines.py runs the backend against real local servers"
    ),
    "pytest --model path/to/ckpt --backend vllm --tp 2 -n auto --report "
    "out/run.json": f"{GPU}: 2 GPUs a replica",
    "pytest --model path/to/ckpt --backend openai --base-url http://gpu7:8000/v1 --base-url "
    "http://gpu8:8000/v1": (
        f"{SERVED}; tests/test_engines.py runs the backend against real local servers"
    ),
    "ctxgate data fetch --to "
    "path/to/data": f"{NET} (HELMET's data.tar.gz); tests/test_sources.py extracts an archive",
    'pytest --model path/to/ckpt -n auto -m "helmet" --data-dir path/to/data --report '
    "out/run.json": (f"{GPU}: every HELMET task at 8K-128K"),
    "pytest --model runs/lora/checkpoint-400": (
        "a LoRA run's checkpoint: tests/ext/checkpoints/test_adapters.py trains one and runs it"
    ),
    "pytest --model runs/lora/checkpoint-400 --base-model /ckpts/base": (
        "a LoRA run's checkpoint: tests/ext/checkpoints/test_adapters.py trains one and runs it"
    ),
    "pytest --model runs/fsdp/checkpoint-800 --allow-pickle": (
        "an FSDP run's checkpoint: tests/ext/checkpoints/test_sharded.py saves one and runs it"
    ),
    "pytest --model runs/fsdp/checkpoint-800 --allow-pickle --config-from /ckpts/base": (
        "an FSDP run's checkpoint: tests/ext/checkpoints/test_sharded.py saves one and runs it"
    ),
    "pytest --model runs/zero3/checkpoint-600 --allow-pickle": (
        "a DeepSpeed ZeRO-3 run's checkpoint: tests/ext/checkpoints/test_sharded.py saves one and "
        "runs it"
    ),
    "WANDB_RUN_ID=abc123 pytest --model runs/exp42/checkpoint-1200 --log-to wandb=exp42 --lengths "
    "8k,32k,128k": (
        f"{GPU} and W&B's network; tests/ext/trackers/test_trackers.py logs to wandb offline"
    ),
    "pytest --model runs/exp42/checkpoint-1200 --log-to tensorboard=runs/exp42/runs/ctxgate": (
        f"{GPU}: every task at 8K-128K; tests/ext/trackers/test_trackers.py logs to TensorBoard"
    ),
    "pytest --model runs/exp42/checkpoint-1200 --log-to mlflow=http://mlflow:5000 --tracker-run "
    "6f1c...": (
        "an MLflow server at the URL; tests/ext/trackers/test_trackers.py logs to a local MLflow "
        "store"
    ),
    "ctxgate watch /shared/runs/exp42 --interval 120 -- --backend vllm --tp 2 -n auto --lengths "
    "8k,32k,128k "
    "--log-to wandb=exp42 --tracker-run "
    "$WANDB_RUN_ID": f"{GPU}, and runs until stopped; tests/ext/training/test_watch.py watches",
    "pytest --model path/to/ckpt --ray local --ray-resource CPU -k vt --lengths 512 --samples 2": (
        "tests/ext/ray/test_ray.py::"
        "test_ray_local_starts_a_cluster_for_the_run_and_leaves_no_process runs it as written, and "
        "checks that no process of the cluster it starts is left"
    ),
    "ray start --head --port=6379": (
        f"{CLUSTER}: starts a Ray head that outlives the command; tests/ext/ray/test_ray.py starts "
        "a cluster of this machine"
    ),
    "ray start --address=head-node:6379": (
        f"{CLUSTER}; tests/ext/ray/test_ray.py adds and removes worker nodes"
    ),
    "pytest --model /shared/ckpts/step-12000 --ray head-node:6379 --report out/run.json": (
        f"{CLUSTER} and a checkpoint on its shared filesystem; tests/ext/ray/test_ray.py runs the "
        "suite on a Ray cluster"
    ),
    "pytest --model path/to/qwen3 --thinking on --thinking-budget 1024 -n 8 --report "
    "out/think.json": f"{GPU} and a Qwen3 checkpoint; {THINKING_TESTS}",
    "pytest --model path/to/qwen3 --thinking off -n 8 --report out/nothink.json": (
        f"{GPU} and a Qwen3 checkpoint; {THINKING_TESTS}"
    ),
    "pytest --model path/to/gpt-oss --backend openai --base-url http://gpu7:8000/v1 "
    "--endpoint-api chat --thinking low": f"{SERVED} (gpt-oss); {THINKING_TESTS}",
    "pytest --model path/to/qwen3 --backend vllm --vllm-arg=--reasoning-parser=qwen3 "
    "--thinking-budget 1024 -n 8": f"{GPU} and a Qwen3 checkpoint; {THINKING_TESTS}",
    "pytest --model path/to/qwen3 --backend vllm --vllm-arg=--reasoning-parser=qwen3 "
    "--thinking-budget 1024 --budget-forcing -n 8": (
        f"{GPU} and a Qwen3 checkpoint; {THINKING_TESTS}"
    ),
}

PLACEHOLDERS = {
    "path/to/ckpt": ROOT / "fixtures" / "tiny-llama-niah",
    "path/to/data": ROOT / "fixtures" / "helmet_data",
}
_EXIT = re.compile(r"#\s*exit status (\d+)\s*$")


def commands(page: Path) -> list[tuple[int, str]]:
    """(line, command) for each command of the page's shell blocks; continuation lines joined."""
    found: list[tuple[int, str]] = []
    lang, pending, start = None, "", 0
    for number, line in enumerate(page.read_text("utf-8").splitlines(), start=1):
        fence = re.match(r"^\s*```(\w*)\s*$", line)
        if fence:
            lang = None if lang is not None else fence.group(1) or "text"
            continue
        if lang not in ("bash", "console"):
            continue
        text = line.strip()
        if lang == "console":
            if not text.startswith("$ "):
                continue
            text = text[2:]
        if not pending:
            start = number
        if text.endswith("\\"):
            pending += text[:-1] + " "
            continue
        whole = (pending + text).strip()
        pending = ""
        if whole and not whole.startswith("#"):
            found.append((start, whole))
    return found


def bare(command: str) -> str:
    """The command without its trailing comment, spaces collapsed: its key in NOT_RUN."""
    return " ".join(re.sub(r"\s+#.*$", "", command).split())


def all_commands() -> list[tuple[Path, int, str]]:
    return [(page, line, cmd) for page in PAGES for line, cmd in commands(page)]


def scratch(tmp_path: Path) -> Path:
    """A folder with the checkout's top-level files linked in and the placeholders made real."""
    work = tmp_path / "work"
    work.mkdir()
    for entry in ROOT.iterdir():
        if entry.name not in (".git", "out", ".ctxgate-cache", "ctxgate", "plugins"):
            (work / entry.name).symlink_to(entry)
    for placeholder, target in PLACEHOLDERS.items():
        where = work / placeholder
        where.parent.mkdir(parents=True, exist_ok=True)
        if target.is_dir():
            shutil.copytree(target, where, symlinks=True)
        else:
            where.symlink_to(target)
    return work


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_command_of_the_page_runs_as_written(page: Path, tmp_path: Path) -> None:
    work = scratch(tmp_path)
    env = {
        **os.environ,
        "PATH": f"{ROOT / '.venv' / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}",
        "HF_HUB_OFFLINE": "1",
        "HF_DATASETS_OFFLINE": "1",
    }
    for line, command in commands(page):
        if bare(command) in NOT_RUN:
            continue
        expected = int(m.group(1)) if (m := _EXIT.search(command)) else 0
        done = subprocess.run(
            ["bash", "-c", command], cwd=work, env=env, capture_output=True, text=True, timeout=900
        )
        assert done.returncode == expected, (
            f"{page.relative_to(ROOT)}:{line}: `{command}` exited {done.returncode}, not "
            f"{expected}\n"
            f"{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
        )


def test_every_command_not_run_here_is_shown_and_says_why() -> None:
    shown = {bare(cmd) for _, _, cmd in all_commands()}
    assert not set(NOT_RUN) - shown, f"stale entries: {sorted(set(NOT_RUN) - shown)}"
    assert all(reason.strip() for reason in NOT_RUN.values())


def test_the_readme_shows_the_two_commands_first() -> None:
    first = [bare(cmd) for _, cmd in commands(ROOT / "README.md")][:2]
    assert first == ["bash scripts/demo.sh", "bash scripts/test.sh"]
