"""Command-line options, read once in ``pytest_configure`` into a frozen ``Settings`` kept in ``config.stash``.

Thresholds are parsed here too, so a malformed file stops the run before any model is loaded.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from pathlib import Path

import pytest

from ctxgate.baseline import Baseline, BaselineError, load_baseline
from ctxgate.haystacks import HaystackError, load_essay
from ctxgate.judge.client import OPTIONS as JUDGE_OPTIONS, JudgeSettings
from ctxgate.lengths import LengthError, parse_lengths
from ctxgate.tasks.registry import task_names
from ctxgate.thresholds import Thresholds, ThresholdsError, load_or_default

DEFAULT_LENGTHS = "8k,16k,32k,64k,128k"


@dataclass(frozen=True)
class Settings:
    model: str | None
    backend: str
    lengths: tuple[int, ...]
    samples: int | None  # None: each task's HELMET/RULER count
    seed: int
    chat_template: str  # task | auto | on | off
    dtype: str
    report: str | None
    thresholds_path: str
    haystack: str | None
    squad: str | None
    hotpotqa: str | None
    trust_remote_code: bool
    allow_pickle: bool
    force_lengths: bool
    cache_dir: str | None  # None: no cache
    baseline: str | None
    data_dir: str | None = None
    helmet_compat: bool = False
    judge: JudgeSettings | None = None  # None: judged tasks keep their outputs for `ctxgate judge` later
    nli_model: str | None = None


SETTINGS_KEY = pytest.StashKey[Settings]()
THRESHOLDS_KEY = pytest.StashKey[Thresholds]()
BASELINE_KEY = pytest.StashKey[Baseline]()


def pytest_addoption(parser: pytest.Parser) -> None:
    g = parser.getgroup("ctxgate", "ctxgate long-context suite")
    g.addoption("--model", default=None, help="checkpoint folder or hub id to evaluate (e.g. fixtures/tiny-llama-niah)")
    g.addoption("--backend", default="hf", choices=("hf", "scripted"),
                help="hf: transformers; scripted: a JSON script, for plumbing tests only")
    g.addoption("--lengths", default=DEFAULT_LENGTHS, help="comma-separated input lengths: 8192 or 8k (default %(default)s)")
    g.addoption("--samples", type=int, default=None,
                help="samples per task x length (default: the benchmark's own count, 100 for most tasks, 600 for "
                     "NQ/TriviaQA/PopQA, 300 for HotpotQA and MS MARCO, 500 for ICL)")
    g.addoption("--seed", type=int, default=42, help="data seed (default 42)")
    g.addoption("--chat-template", default="task", choices=("task", "auto", "on", "off"),
                help="task (default): HELMET's policy per task, on for LongQA when the model has a template, off "
                     "elsewhere; auto: on for every task when the model has one; on; off")
    g.addoption("--dtype", default="auto", help="auto (bf16 on GPU, fp32 on CPU), bf16, fp16 or fp32")
    g.addoption("--report", default=None, help="write the JSON report here (plus .predictions.jsonl and .md)")
    g.addoption("--thresholds", default=None, help="thresholds file (default: ./thresholds.toml, else the rootdir's)")
    g.addoption("--haystack", default=None, help="essay haystack: a .txt file or a dataset with a 'text' column")
    g.addoption("--squad", default=None, help="SQuAD v2 for qa_1: hub id or local file/folder (hub layout)")
    g.addoption("--hotpotqa", default=None, help="HotpotQA distractor for qa_2: hub id or local file/folder")
    g.addoption("--data-dir", default=None,
                help="HELMET's data folder (its released kilt/ and msmarco/ files; icl/ and infbench/ copies of hub "
                     "datasets); the shipped fixtures: fixtures/helmet_data")
    g.addoption("--helmet-compat", action="store_true",
                help="score with the reference's own rules, bugs included (multiple choice counts an empty "
                     "answer as right when the gold is A); see docs/decisions.md")
    g.addoption("--trust-remote-code", action="store_true", help="allow the checkpoint's own Python code to run")
    g.addoption("--allow-pickle", action="store_true", help="allow loading pickle (.bin) weights")
    g.addoption("--force-lengths", action="store_true", help="run lengths beyond the model's max positions")
    g.addoption("--cache-dir", default=None, help="generation cache folder (default: ./.ctxgate-cache)")
    g.addoption("--no-cache", action="store_true", help="neither read nor write the generation cache")
    g.addoption("--baseline", default=None, help="a previous --report JSON: fail cases that regressed against it")
    j = parser.getgroup("ctxgate-judge", "ctxgate judged tasks (Cite, NarrativeQA, Summ)")
    for flag, kwargs in JUDGE_OPTIONS:
        j.addoption(flag, **kwargs)


def _thresholds_path(config: pytest.Config) -> str:
    """--thresholds, else thresholds.toml in the directory pytest was started from, else in the rootdir. (pytest
    derives the rootdir from path-like arguments, option values included, so an absolute --model moves it.)"""
    given = config.getoption("--thresholds")
    if given:
        return str(given)
    here = Path(config.invocation_params.dir) / "thresholds.toml"
    return str(here if here.is_file() else Path(config.rootpath) / "thresholds.toml")


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    for name, doc in (("ruler", "RULER tasks"), ("helmet", "HELMET tasks"), ("recall", "HELMET Recall category"),
                      ("niah", "RULER needle-in-a-haystack tasks"), ("rag", "HELMET RAG category"),
                      ("rerank", "HELMET Re-rank category"), ("icl", "HELMET ICL category"),
                      ("longqa", "HELMET LongQA category"), ("cite", "HELMET Cite category"),
                      ("summ", "HELMET Summ category"),
                      ("judge", "model-judged tasks (Cite, NarrativeQA, Summ): -m 'not judge' leaves them out")):
        config.addinivalue_line("markers", f"{name}: {doc}")
    try:
        lengths = parse_lengths(config.getoption("--lengths"))
    except LengthError as exc:
        raise pytest.UsageError(f"--lengths: {exc}") from None
    samples = config.getoption("--samples")
    if samples is not None and samples < 1:
        raise pytest.UsageError(f"--samples {samples} must be at least 1, e.g. --samples 100")
    settings = Settings(
        model=config.getoption("--model"), backend=config.getoption("--backend"), lengths=lengths,
        samples=samples, seed=config.getoption("--seed"), chat_template=config.getoption("--chat-template"),
        dtype=config.getoption("--dtype"), report=config.getoption("--report"),
        thresholds_path=_thresholds_path(config), haystack=config.getoption("--haystack"),
        squad=config.getoption("--squad"), hotpotqa=config.getoption("--hotpotqa"),
        trust_remote_code=config.getoption("--trust-remote-code"), allow_pickle=config.getoption("--allow-pickle"),
        force_lengths=config.getoption("--force-lengths"),
        cache_dir=None if config.getoption("--no-cache") else str(
            config.getoption("--cache-dir") or Path(config.invocation_params.dir) / ".ctxgate-cache"),
        baseline=config.getoption("--baseline"), data_dir=config.getoption("--data-dir"),
        helmet_compat=config.getoption("--helmet-compat"),
    )
    settings = replace(settings, judge=judge_settings(config, settings.cache_dir),
                       nli_model=config.getoption("--nli-model"))
    config.stash[SETTINGS_KEY] = settings
    if settings.model is None:
        return  # the project's own tests: nothing to gate
    if settings.baseline:
        try:
            config.stash[BASELINE_KEY] = load_baseline(settings.baseline)
        except BaselineError as exc:
            raise pytest.UsageError(str(exc)) from None
    path = Path(settings.thresholds_path)
    try:
        named = path.is_file() or config.getoption("--thresholds")
        config.stash[THRESHOLDS_KEY] = load_or_default(path if named else None, task_names())
    except ThresholdsError as exc:
        raise pytest.UsageError(str(exc)) from None
    if settings.data_dir and not Path(settings.data_dir).is_dir():
        raise pytest.UsageError(f"--data-dir {settings.data_dir!r} is not a folder: give HELMET's data folder "
                                "(or fixtures/helmet_data)")
    if settings.nli_model and not Path(settings.nli_model).is_dir():
        raise pytest.UsageError(f"--nli-model {settings.nli_model!r} is not a folder: give a local NLI checkpoint "
                                "(an MNLI classifier or a T5 TRUE model)")
    if settings.haystack:
        try:
            load_essay(settings.haystack)
        except HaystackError as exc:
            raise pytest.UsageError(f"--haystack: {exc}") from None
    _check_model_path(settings)
    _pin_gpu(config)


def judge_settings(config: pytest.Config, cache_dir: str | None) -> JudgeSettings | None:
    try:
        return JudgeSettings.from_options(config.getoption, cache_dir)
    except ValueError as exc:
        raise pytest.UsageError(str(exc)) from None


def _check_model_path(settings: Settings) -> None:
    """A path that cannot be a hub id must exist: say so before any worker starts."""
    model = settings.model or ""
    path = Path(model).expanduser()
    looks_local = settings.backend == "scripted" or model.startswith(("/", ".", "~")) or model.count("/") > 1
    if looks_local and not path.exists():
        raise pytest.UsageError(f"--model {model!r} does not exist: give a checkpoint folder (with config.json) "
                                "or a hub id such as org/name")


def _pin_gpu(config: pytest.Config) -> None:
    """Under xdist, worker gwN sees only GPU N (set before anything initializes CUDA)."""
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if not worker or not hasattr(config, "workerinput"):
        return
    n = int(worker.removeprefix("gw"))
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    devices = [d for d in visible.split(",") if d.strip()] if visible else None
    if devices is None:
        count = _gpu_count()
        if count == 0:
            return
        devices = [str(i) for i in range(count)]
    if n >= len(devices):
        raise pytest.UsageError(f"xdist worker {worker} has no GPU: {len(devices)} visible; run with -n {len(devices)}"
                                " or -n auto")
    os.environ["CUDA_VISIBLE_DEVICES"] = devices[n]


def _gpu_count() -> int:
    """GPUs on this node, counted without initializing CUDA in this process (nvidia-smi)."""
    import shutil
    import subprocess

    if not shutil.which("nvidia-smi"):
        return 0
    try:
        out = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=20, check=False).stdout
    except (OSError, subprocess.TimeoutExpired):
        return 0
    return sum(1 for line in out.splitlines() if line.startswith("GPU "))


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int | None:
    """``-n auto``: one worker per GPU; on a machine without GPUs, xdist's own default."""
    if config.getoption("--model", None) is None:
        return None
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    count = len([d for d in visible.split(",") if d.strip()]) if visible else _gpu_count()
    return count or None
