"""Every option ctxgate takes, declared once (``flags.Option``: flag, parser, default, choices and
help; a bad value is an ``OptionError`` naming the flag, the value and the fix). pytest's plugins
and the verbs add and read them from here, so a flag behaves the same wherever it is given. Checks
across options, and of the files they name, are made where the run's plan is made
(``gate/plan.py``)."""

from __future__ import annotations

import math

from ctxgate.backends.base import DTYPES
from ctxgate.judge.client import JudgeSettings
from ctxgate.lengths import LengthError, parse_lengths
from ctxgate.run.engine_options import (  # the HTTP engines' options, named here with the rest
    API_KEY_ENV,
    BASE_URL,
    CONCURRENCY,
    ENDPOINT_API,
    NO_SHARED_FIRST,
    REQUEST_RETRIES,
    REQUEST_TIMEOUT,
    SERVED_MODEL,
    TOKENIZER,
    TP,
    VLLM_ARG,
    VLLM_PYTHON,
    VLLM_START_TIMEOUT,
    http_url,
)
from ctxgate.run.flags import Option, positive, whole

# beside where the run was started, unless --cache-dir says otherwise
CACHE_FOLDER = ".ctxgate-cache"
# the papers use 100-600; far more is a typo that would first fill memory with prompts
MAX_SAMPLES = 100_000


def _lengths(text: str) -> tuple[int, ...]:
    try:
        return parse_lengths(text)
    except LengthError:
        raise ValueError(
            "is not a list of lengths such as 8192, 8k (=8192) or 128k (=131072)"
        ) from None


def _samples(text: str) -> int:
    try:
        value = whole(1)(text)
    except ValueError:
        value = 0
    if not 1 <= value <= MAX_SAMPLES:
        raise ValueError(
            f"is not a whole number from 1 to {MAX_SAMPLES:,} (the papers use 100-600)"
        )
    return value


def _batch_size(text: str) -> int | None:
    if text.strip().lower() == "auto":
        return None
    try:
        return whole(1)(text)
    except ValueError:
        raise ValueError("is neither auto nor a whole number above 0") from None


def _price(text: str) -> tuple[float, float]:
    try:
        a, b = (float(x) for x in text.split(","))
    except ValueError:
        a = b = math.nan
    if not (math.isfinite(a) and math.isfinite(b) and a >= 0 and b >= 0):
        raise ValueError("is not USD per million input,output tokens")
    return a, b


# --- the checkpoint and the run
MODEL = Option("--model", "checkpoint folder or hub id to evaluate (e.g. fixtures/tiny-llama-niah)")
BACKENDS = ("hf", "vllm", "openai")
BACKEND = Option(
    "--backend",
    "hf: transformers in each worker; vllm: vLLM servers the suite starts; openai: an "
    "OpenAI-compatible server you run (--base-url); MODULE:FACTORY: a backend of your own, made "
    "from the run's options (docs/architecture.md)",
    default="hf",
    metavar="{" + ",".join(BACKENDS) + ",MODULE:FACTORY}",
)
LENGTHS = Option(
    "--lengths",
    "comma-separated input lengths: 8192 or 8k (default 8k,16k,32k,64k,128k)",
    default=(8192, 16384, 32768, 65536, 131072),
    parse=_lengths,
    example="8k,32k",
)
SAMPLES = Option(
    "--samples",
    "samples per task x length (default: the benchmark's own count, 100 for most tasks, 600 for "
    "NQ/TriviaQA/PopQA, 300 for HotpotQA and MS MARCO, 500 for ICL)",
    parse=_samples,
    example="100",
)
SEED = Option("--seed", "data seed (default %(default)s)", default=42, parse=whole(0))
CHAT_TEMPLATE = Option(
    "--chat-template",
    "task (default): HELMET's policy per task, on for LongQA when the model has a template, off "
    "elsewhere; auto: on for every task when the model has one; on; off",
    default="task",
    choices=("task", "auto", "on", "off"),
)
DTYPE = Option(
    "--dtype", "auto (bf16 on GPU, fp32 on CPU), bf16, fp16 or fp32", default="auto", choices=DTYPES
)
THRESHOLDS = Option(
    "--thresholds",
    "thresholds file (default: the file the ini option ctxgate_thresholds names, else the nearest "
    "thresholds.toml from here up to the project's top)",
)
BASELINE = Option(
    "--baseline",
    "a previous --report JSON to compare with, paired, case by case (under pytest: cases that "
    "regressed against it fail)",
)
DATA_DIR = Option(
    "--data-dir",
    "HELMET's data folder (its released kilt/ and msmarco/ files; icl/ and infbench/ copies of "
    "hub datasets); the shipped fixtures: fixtures/helmet_data",
)
HELMET_COMPAT = Option(
    "--helmet-compat",
    "HELMET's own behaviour where ctxgate's differs: its prompts for the long-document and "
    "citation tasks (documents pre-cut in Llama-2's tokens, ALCE's fixed document count, the "
    "context cut to fit) and its scoring, bugs included (an empty multiple-choice answer right "
    "for gold A; ALCE's citation [0] read as the last document); see docs/decisions.md",
    action="store_true",
)
IGNORE_REMOTE_CODE = Option(
    "--ignore-remote-code",
    "a checkpoint whose config.json names its own model code (auto_map): evaluate transformers' "
    "built-in class for its model_type instead, on purpose",
    action="store_true",
)
TRUST_REMOTE_CODE = Option(
    "--trust-remote-code", "allow the checkpoint's own Python code to run", action="store_true"
)
ALLOW_PICKLE = Option(
    "--allow-pickle",
    "allow loading pickles (.bin weights, DeepSpeed's .pt, a distributed checkpoint's .metadata)",
    action="store_true",
)
HAYSTACK = Option("--haystack", "essay haystack: a .txt file or a dataset with a 'text' column")
SQUAD = Option("--squad", "SQuAD v2 for qa_1: hub id or local file/folder (hub layout)")
HOTPOTQA = Option("--hotpotqa", "HotpotQA distractor for qa_2: hub id or local file/folder")
HELMET_TOKENIZER = Option(
    "--helmet-tokenizer",
    "the tokenizer HELMET's length selections and (with --helmet-compat) its pre-cut of long "
    "documents count in (NarrativeQA, Multi-LexSum, InfiniteBench: Llama-2's, a local folder of "
    "meta-llama/Llama-2-7b-hf); default: the model's own",
    metavar="PATH",
)
ALLOW_WEIGHT_MISMATCH = Option(
    "--allow-weight-mismatch",
    "evaluate a checkpoint whose weights do not match its config.json (a tensor missing, extra or "
    "of another shape) as transformers loads it, missing tensors random; refused without it",
    action="store_true",
)
CACHE_DIR = Option("--cache-dir", f"generation cache folder (default: ./{CACHE_FOLDER})")
NO_CACHE = Option("--no-cache", "neither read nor write the generation cache", action="store_true")
REPORT = Option("--report", "write the JSON report here (plus .predictions.jsonl and .md)")
FORCE_LENGTHS = Option(
    "--force-lengths",
    "run lengths beyond the model's max positions with its own RoPE (--backend hf only: vLLM's "
    "RoPE table ends there; extend it with --model-override max_position_embeddings=N)",
    action="store_true",
)
# --- --backend hf
BATCH_SIZE = Option(
    "--batch-size",
    "prompts of one case generated together: auto (default: 1 on CPU, on a GPU as many as fit its "
    "free memory, at most 32) or a number; 1 is the papers' HF path",
    default=None,
    parse=_batch_size,
    example="auto",
)
DEVICE_MAP = Option(
    "--device-map",
    "auto: spread each worker's model over several GPUs (a model larger than one GPU); -n then "
    "counts model replicas",
    choices=("auto",),
)
GPUS_PER_REPLICA = Option(
    "--gpus-per-replica",
    "with --device-map auto: GPUs each worker's model spans (default: visible GPUs / workers); -n "
    "auto runs visible GPUs / this many workers",
    parse=whole(1),
    example="4",
)

# --- the judge (Cite, NarrativeQA, Summ)
JUDGE_MODEL = Option(
    "--judge-model",
    "LLM judge for NarrativeQA and summaries (HELMET: gpt-4o-2024-05-13); key from OPENAI_API_KEY",
)
JUDGE_BASE_URL = Option(
    "--judge-base-url",
    "an OpenAI-compatible server instead of OpenAI, e.g. http://127.0.0.1:8000/v1 (vLLM, SGLang)",
    parse=http_url,
    example="http://127.0.0.1:8000/v1",
)
JUDGE_TIMEOUT = Option(
    "--judge-timeout",
    "seconds per judge request (default %(default)s)",
    default=JudgeSettings.timeout_s,
    parse=positive,
)
JUDGE_TIME_LIMIT = Option(
    "--judge-time-limit",
    "seconds per verdict, retries included (default %(default)s)",
    default=JudgeSettings.time_limit_s,
    parse=positive,
)
JUDGE_RETRIES = Option(
    "--judge-retries",
    "retries after 429/5xx/timeouts, with exponential backoff (default %(default)s)",
    default=JudgeSettings.max_retries,
    parse=whole(0),
)
JUDGE_CONCURRENCY = Option(
    "--judge-concurrency",
    "verdicts in flight at once (default %(default)s)",
    default=JudgeSettings.concurrency,
    parse=whole(1),
)
JUDGE_PRICE = Option(
    "--judge-price",
    "USD per million input,output tokens for the cost line, e.g. 2.5,10 (default: a built-in list)",
    parse=_price,
    example="2.5,10",
)
JUDGE_CACHE = Option(
    "--judge-cache", f"judge cache folder (default: the generation cache folder, ./{CACHE_FOLDER})"
)
NLI_MODEL = Option(
    "--nli-model",
    "local NLI checkpoint for ALCE citations (MNLI classifier or T5 TRUE); default: the LLM judge",
)

# --- reasoning models: what the model is asked to think (an extra reads the thought: its formats,
# its markers, how a budget is held)
THINKING_MODES = ("default", "on", "off", "low", "medium", "high")
THINKING = Option(
    "--thinking",
    "a reasoning model's thinking: default (the model's own), on or off (its chat template's "
    "enable_thinking), or gpt-oss's reasoning level low, medium or high (reasoning_effort); the "
    "thought is removed before scoring either way",
    default="default",
    choices=THINKING_MODES,
)
THINKING_BUDGET = Option(
    "--thinking-budget",
    "tokens of thought before each answer, beside the task's own answer budget: the thought is "
    "closed at this many tokens and the answer generated after it: by the engine's own thinking "
    "budget where it has one (vLLM's thinking_token_budget, with --reasoning-parser), else by "
    "budget forcing (default: thought and answer share the task's budget, as the references run)",
    parse=whole(1),
    example="1024",
)

# the groups, as each plugin and verb adds them
REASONING = (THINKING, THINKING_BUDGET)
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
    HAYSTACK,
    SQUAD,
    HOTPOTQA,
    HELMET_TOKENIZER,
    CACHE_DIR,
    NO_CACHE,
)
ENGINE = (
    BASE_URL,
    TOKENIZER,
    SERVED_MODEL,
    ENDPOINT_API,
    API_KEY_ENV,
    CONCURRENCY,
    NO_SHARED_FIRST,
    REQUEST_TIMEOUT,
    REQUEST_RETRIES,
    TP,
    VLLM_PYTHON,
    VLLM_ARG,
    VLLM_START_TIMEOUT,
)
HF = (BATCH_SIZE, DEVICE_MAP, GPUS_PER_REPLICA)
JUDGE = (
    JUDGE_MODEL,
    JUDGE_BASE_URL,
    JUDGE_TIMEOUT,
    JUDGE_TIME_LIMIT,
    JUDGE_RETRIES,
    JUDGE_CONCURRENCY,
    JUDGE_PRICE,
    JUDGE_CACHE,
    NLI_MODEL,
)
