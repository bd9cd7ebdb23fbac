"""The options a run of the suite takes, each declared once (flag, type, default, choices, help): pytest's
``addoption`` (``plugins/options.py``) and the command-line verbs that evaluate checkpoints themselves
(``ctxgate bisect``) add them from this table, so a flag is spelled, typed, defaulted and checked the same way
wherever it is given. (``ctxgate watch`` passes its pytest arguments to pytest itself.)"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from ctxgate.backends.base import DTYPES
from ctxgate.backends.overrides import ConfigOverrides, applied
from ctxgate.backends.overrides import parse as parse_overrides
from ctxgate.data.haystacks import HaystackError, load_essay
from ctxgate.records.refusal import CtxgateError
from ctxgate.run.loading import ModelSpec

DEFAULT_LENGTHS = "8k,16k,32k,64k,128k"
CACHE_FOLDER = ".ctxgate-cache"  # beside where the run was started, unless --cache-dir says otherwise
MAX_SAMPLES = 100_000  # the papers use 100-600; far more is a typo that would first fill memory with prompts
CHAT_TEMPLATES = ("task", "auto", "on", "off")


@dataclass(frozen=True)
class Option:
    flag: str
    help: str
    default: Any = None
    type: Callable[[str], Any] | None = None
    choices: tuple[str, ...] | None = None
    action: str | None = None
    metavar: str | None = None
    aliases: tuple[str, ...] = ()  # other spellings of the flag (the dest is the flag's)

    @property
    def dest(self) -> str:
        return self.flag.removeprefix("--").replace("-", "_")

    def add_to(self, target: Any) -> None:
        """Onto a pytest option group (``addoption``) or an argparse parser (``add_argument``): both take
        argparse's keywords."""
        keywords = {f.name: getattr(self, f.name) for f in fields(self) if f.name not in ("flag", "aliases")}
        add = target.addoption if hasattr(target, "addoption") else target.add_argument
        add(self.flag, *self.aliases, **{k: v for k, v in keywords.items() if v is not None})


LENGTHS = Option(
    "--lengths", "comma-separated input lengths: 8192 or 8k (default %(default)s)", default=DEFAULT_LENGTHS
)
SAMPLES = Option(
    "--samples",
    "samples per task x length (default: the benchmark's own count, 100 for most tasks, 600 for NQ/TriviaQA/PopQA, "
    "300 for HotpotQA and MS MARCO, 500 for ICL)",
    type=int,
)
SEED = Option("--seed", "data seed (default 42)", default=42, type=int)
CHAT_TEMPLATE = Option(
    "--chat-template",
    "task (default): HELMET's policy per task, on for LongQA when the model has a template, off elsewhere; auto: on "
    "for every task when the model has one; on; off",
    default="task",
    choices=CHAT_TEMPLATES,
)
DTYPE = Option("--dtype", "auto (bf16 on GPU, fp32 on CPU), bf16, fp16 or fp32", default="auto", choices=DTYPES)
THRESHOLDS = Option(
    "--thresholds",
    "thresholds file (default: the file the ini option ctxgate_thresholds names, else the nearest thresholds.toml "
    "from here up to the project's top)",
)
BASELINE = Option(
    "--baseline",
    "a previous --report JSON to compare with, paired, case by case (under pytest: cases that regressed against it "
    "fail)",
)
DATA_DIR = Option(
    "--data-dir",
    "HELMET's data folder (its released kilt/ and msmarco/ files; icl/ and infbench/ copies of hub datasets); the "
    "shipped fixtures: fixtures/helmet_data",
)
HELMET_COMPAT = Option(
    "--helmet-compat",
    "HELMET's own behaviour where ctxgate's differs: its prompts for the long-document and citation tasks "
    "(documents pre-cut in Llama-2's tokens, ALCE's fixed document count, the context cut to fit) and its scoring, "
    "bugs included (an empty multiple-choice answer right for gold A; ALCE's citation [0] read as the last "
    "document); see docs/decisions.md",
    action="store_true",
)
IGNORE_REMOTE_CODE = Option(
    "--ignore-remote-code",
    "a checkpoint whose config.json names its own model code (auto_map): evaluate transformers' built-in class for "
    "its model_type instead, on purpose",
    action="store_true",
)
TRUST_REMOTE_CODE = Option("--trust-remote-code", "allow the checkpoint's own Python code to run", action="store_true")
ALLOW_PICKLE = Option(
    "--allow-pickle",
    "allow loading pickles (.bin weights, DeepSpeed's .pt, a distributed checkpoint's .metadata)",
    action="store_true",
)
BASE_MODEL = Option(
    "--base-model",
    "the checkpoint is a PEFT adapter folder: its base model (default: the adapter's base_model_name_or_path)",
)
CONFIG_FROM = Option(
    "--config-from",
    "the checkpoint is a sharded one (FSDP, DeepSpeed ZeRO): the folder of the config.json to build the model from "
    "(default: beside the shards, the checkpoint folder, or the run folder above it)",
)
SEQUENTIAL = Option(
    "--sequential",
    "stop a case as soon as its verdict is certain at --sequential-alpha (a test by betting, valid however early it "
    "stops): the floor verdict under pytest, the regression verdict of a bisect probe; fewer generations for clear "
    "cases; docs/training.md",
    action="store_true",
)
SEQUENTIAL_ALPHA = Option(
    "--sequential-alpha",
    "--sequential: the error rate of each case's early verdict (default %(default)s)",
    default=0.05,
    type=float,
)
SEQUENTIAL_MIN = Option(
    "--sequential-min",
    "--sequential: never stop a case before this many samples (default %(default)s)",
    default=10,
    type=int,
)
HAYSTACK = Option("--haystack", "essay haystack: a .txt file or a dataset with a 'text' column")
SQUAD = Option("--squad", "SQuAD v2 for qa_1: hub id or local file/folder (hub layout)")
HOTPOTQA = Option("--hotpotqa", "HotpotQA distractor for qa_2: hub id or local file/folder")
HELMET_TOKENIZER = Option(
    "--helmet-tokenizer",
    "the tokenizer HELMET's length selections and (with --helmet-compat) its pre-cut of long documents count in "
    "(NarrativeQA, Multi-LexSum, InfiniteBench: Llama-2's, a local folder of meta-llama/Llama-2-7b-hf); default: the "
    "model's own",
    metavar="PATH",
)
ALLOW_WEIGHT_MISMATCH = Option(
    "--allow-weight-mismatch",
    "evaluate a checkpoint whose weights do not match its config.json (a tensor missing, extra or of another shape) "
    "as transformers loads it, missing tensors random; refused without it",
    action="store_true",
)
ROPE_SCALING = Option(
    "--rope-scaling",
    "RoPE settings merged into the checkpoint's own for context extension, e.g. "
    """'{"rope_type": "yarn", "factor": 4.0}'; the window they give is the length limit""",
    metavar="JSON",
)
MODEL_OVERRIDE = Option(
    "--model-override",
    "set a config.json key before loading (VALUE is JSON, else text; repeatable), e.g. rope_theta=1000000",
    action="append",
    metavar="KEY=VALUE",
)
RAY = Option(
    "--ray",
    "run the cases on a Ray cluster, the model as one replica per --ray-resource on its nodes: the head's ADDRESS "
    "(host:port), auto (the cluster this machine belongs to), or local (a cluster of this machine, for the run); "
    "needs pip install 'ctxgate[ray]'; docs/distributed.md",
    metavar="ADDRESS",
)
RAY_RESOURCE = Option(
    "--ray-resource",
    "--ray: the resource each model replica takes one of (default %(default)s), e.g. CPU on nodes without GPUs",
    default="GPU",
    metavar="NAME",
)
CACHE_DIR = Option("--cache-dir", f"generation cache folder (default: ./{CACHE_FOLDER})")
NO_CACHE = Option("--no-cache", "neither read nor write the generation cache", action="store_true")

# what a run that evaluates checkpoints outside pytest takes (ctxgate bisect), as pytest takes it
EVALUATION = (
    LENGTHS,
    SAMPLES,
    SEED,
    CHAT_TEMPLATE,
    DTYPE,
    THRESHOLDS,
    DATA_DIR,
    HELMET_COMPAT,
    TRUST_REMOTE_CODE,
    IGNORE_REMOTE_CODE,
    ALLOW_PICKLE,
    ALLOW_WEIGHT_MISMATCH,
    BASE_MODEL,
    CONFIG_FROM,
    HAYSTACK,
    SQUAD,
    HOTPOTQA,
    HELMET_TOKENIZER,
    ROPE_SCALING,
    MODEL_OVERRIDE,
    CACHE_DIR,
    NO_CACHE,
    RAY,
    RAY_RESOURCE,
)
SEQUENTIAL_OPTIONS = (SEQUENTIAL, SEQUENTIAL_ALPHA, SEQUENTIAL_MIN)
# the options that are ModelSpec's fields as they are; the cache folder and the config overrides are read from theirs
_AS_GIVEN = {o.dest for o in EVALUATION} & {f.name for f in fields(ModelSpec)} - {"cache_dir"}


class OptionError(CtxgateError, ValueError):
    """An option's value cannot be used; the message names the option and the fix."""


def opening(value: Callable[[str], Any], started_in: Path, **given: Any) -> ModelSpec:
    """How a checkpoint is opened and its cases built, from this table's options as pytest or argparse read them
    (``value(dest)``), plus ``given`` (the model, the backend). The one resolve step ``pytest`` and ``ctxgate
    bisect`` share: a value that cannot be used is one refusal before any model is loaded."""
    overrides = parse_overrides(value("rope_scaling"), value("model_override"))
    spec = ModelSpec(
        **{"model": "", **{dest: value(dest) for dest in _AS_GIVEN}, **given},
        overrides=overrides,
        cache_dir=None if value("no_cache") else str(value("cache_dir") or started_in / CACHE_FOLDER),
    )
    if spec.data_dir and not Path(spec.data_dir).is_dir():
        raise OptionError(
            f"--data-dir {spec.data_dir!r} is not a folder: give HELMET's data folder (or fixtures/helmet_data)"
        )
    if spec.helmet_tokenizer and not (Path(spec.helmet_tokenizer) / "tokenizer_config.json").is_file():
        raise OptionError(
            f"--helmet-tokenizer {spec.helmet_tokenizer!r} is not a tokenizer folder (no tokenizer_config.json): "
            "give a local copy of meta-llama/Llama-2-7b-hf's tokenizer"
        )
    if spec.ray is not None:
        _check_ray(spec)
    if spec.haystack:
        try:
            load_essay(spec.haystack)
        except HaystackError as exc:
            raise OptionError(f"--haystack: {exc}") from None
    return spec


def check_overrides(overrides: ConfigOverrides, config_dir: str | Path) -> None:
    """The config overrides against the config they change (a key it lacks, a value of another kind, RoPE
    settings the rest of it does not fit), before any model loads: the second half of ``opening``'s check, once
    the checkpoint's config folder is known."""
    if overrides:
        applied(config_dir, overrides)


def _check_ray(spec: ModelSpec) -> None:
    import importlib.util

    if not spec.ray:
        raise OptionError("--ray is empty: give the Ray head's address (host:6379), auto, or local")
    if importlib.util.find_spec("ray") is None:
        raise OptionError(f"--ray {spec.ray} needs Ray, which is not installed here: pip install 'ctxgate[ray]'")
    if spec.backend == "openai":
        raise OptionError(
            "--ray with --backend openai: the servers are the replicas; drop --ray and give each with --base-url"
        )


def samples_problem(samples: int | None) -> str | None:
    if samples is not None and not 1 <= samples <= MAX_SAMPLES:
        return f"--samples {samples} must be between 1 and {MAX_SAMPLES:,} (the papers use 100-600), e.g. --samples 100"
    return None


def sequential_problem(alpha: float, minimum: int) -> str | None:
    if not 0 < alpha < 0.5:
        return f"--sequential-alpha {alpha} must be in (0, 0.5), e.g. --sequential-alpha 0.05"
    if minimum < 1:
        return f"--sequential-min {minimum} must be at least 1, e.g. --sequential-min 10"
    return None
