"""``ctxgate reproduce MODEL``: the commands that run a model of the papers' tables in the papers'
own setting (``published.toml``), each with ``--reference MODEL``, runnable as printed: open
models on vLLM, API models through their OpenAI-compatible chat endpoints."""

from __future__ import annotations

import argparse
import math
import re
import shlex
from dataclasses import dataclass

from ctxgate.api import CtxgateError, format_length
from ctxgate.ext.published.scores import Published, resolve, rows_for

GPU_GB = 80  # one H100 or A100 80GB
HEADROOM = 1.3  # weights plus a 128K KV cache and activations, as a share of the bf16 weights
# total parameters (billions) of the models whose id and table label do not spell them out
PARAMS_B = {
    "ai21labs/AI21-Jamba-1.5-Mini": 52.0,
    "aws-prototyping/MegaBeam-Mistral-7B-512k": 7.2,
    "microsoft/Phi-3-mini-128k-instruct": 3.8,
    "microsoft/Phi-3-small-128k-instruct": 7.4,
    "microsoft/Phi-3.5-mini-instruct": 3.8,
    "mistralai/Mistral-Nemo-Instruct-2407": 12.2,
    "mistralai/Mixtral-8x7B-v0.1": 46.7,
    "princeton-nlp/Llama-3-8B-ProLong-512k-Instruct": 8.0,
}


@dataclass(frozen=True)
class Api:
    """A maker's API: endpoint, key variable, window (prompt and output), the hub tokenizer."""

    base_url: str
    key_env: str
    window: int
    tokenizer: str
    about: str


# by model-id prefix, the longest first
_OPENAI = "https://api.openai.com/v1"
APIS = {
    "gpt-4o": Api(_OPENAI, "OPENAI_API_KEY", 128_000, "Xenova/gpt-4o", "OpenAI's o200k tokenizer"),
    "gpt-4": Api(_OPENAI, "OPENAI_API_KEY", 128_000, "Xenova/gpt-4", "OpenAI's cl100k tokenizer"),
    "o1-": Api(_OPENAI, "OPENAI_API_KEY", 128_000, "Xenova/gpt-4o", "OpenAI's o200k tokenizer"),
    "gemini-": Api(
        "https://generativelanguage.googleapis.com/v1beta/openai/",
        "GEMINI_API_KEY",
        1_048_576,
        "google/gemma-2-9b",
        "Gemma's tokenizer, a subset of Gemini's vocabulary (gated: HF_TOKEN)",
    ),
    "claude-": Api(
        "https://api.anthropic.com/v1/",
        "ANTHROPIC_API_KEY",
        200_000,
        "Xenova/claude-tokenizer",
        "Anthropic's published Claude tokenizer, the one HELMET counts in",
    ),
}
LLAMA2_TOKENIZER = "data/llama-2-tokenizer"
_SIZE = re.compile(r"(?<![x\d.])(\d+(?:\.\d+)?)B\b", re.IGNORECASE)


class NoRecipe(CtxgateError, ValueError):
    """A model of the tables that ctxgate cannot run as the paper did."""


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "reproduce", help="print the commands that reproduce a model's published numbers"
    )
    p.add_argument("model", help="an id (meta-llama/Llama-3.1-8B-Instruct) or a paper's row label")
    p.add_argument("--checkpoint", help="where the model is (default: the id, downloaded first)")
    p.add_argument("--gpus", type=int, default=8, help="GPUs of 80 GB on the node (default 8)")
    p.set_defaults(fn=main)


def params_b(model: str, rows: list[Published]) -> float:
    """Total parameters in billions: the largest size the id or a table label spells."""
    if model in PARAMS_B:
        return PARAMS_B[model]
    sizes = [float(m) for text in [model, *(r.label for r in rows)] for m in _SIZE.findall(text)]
    if not sizes:
        raise NoRecipe(
            f"{model}: no parameter count known to size its GPUs; pass it to ctxgate's PARAMS_B"
        )
    return max(sizes)


def tensor_parallel(billions: float) -> int:
    """GPUs per replica: the smallest power of two that holds the bf16 weights with HEADROOM."""
    need = 2 * billions * HEADROOM / GPU_GB
    return 1 << max(0, math.ceil(math.log2(need))) if need > 1 else 1


def _lengths(rows: list[Published], window: int | None = None) -> str:
    """The rows' lengths (prompt and output together) that ``window`` holds."""
    fits = sorted(L for L in {L for r in rows for L in r.scores} if window is None or L <= window)
    return ",".join(format_length(L).lower() for L in fits)


def recipe(model: str, checkpoint: str | None, gpus: int) -> list[str]:
    rows = rows_for(model)
    api = next((a for prefix, a in APIS.items() if model.startswith(prefix)), None)
    if api is not None:
        return _api_recipe(model, api, rows)
    tp = tensor_parallel(params_b(model, rows))
    if tp > gpus:
        raise NoRecipe(
            f"{model} needs {tp} GPUs of {GPU_GB} GB for its weights and a 128K KV cache (tensor "
            f"parallel {tp}); --gpus {gpus} is too few: pass --gpus {tp} or more"
        )
    out = [
        "# vLLM in its own environment, once, in a ctxgate checkout (the official CUDA build)",
        "VLLM_SPEC=vllm bash scripts/vllm_env.sh",
    ]
    if checkpoint is None:
        out += [
            f"# the weights into the hub cache, which --model {model} reads (a gated model needs "
            "HF_TOKEN)",
            f"hf download {shlex.quote(model)}",
        ]
    engine = f"--backend vllm --tp {tp} -n {gpus // tp}"
    return out + _runs(model, shlex.quote(checkpoint or model), rows, engine)


def _api_recipe(model: str, api: Api, rows: list[Published]) -> list[str]:
    folder = f"tokenizers/{api.tokenizer.rsplit('/', 1)[-1]}"
    engine = (
        f"--backend openai --endpoint-api chat --base-url {api.base_url} --api-key-env "
        f"{api.key_env} --tokenizer {folder} -n 4"
    )
    out = [
        f"# {model} through its maker's OpenAI-compatible chat API (the key in {api.key_env}), "
        f"each prompt one user message; lengths counted in {api.tokenizer}, {api.about}",
        f"hf download {api.tokenizer} --local-dir {folder}",
    ]
    if dropped := [L for L in sorted({L for r in rows for L in r.scores}) if L > api.window]:
        out += [
            f"# the API's window is {api.window:,} tokens: the "
            f"{', '.join(format_length(L) for L in dropped)} column cannot run at ctxgate's length "
            "(prompt and output together), and the comparison says it is missing"
        ]
    return out + _runs(model, shlex.quote(model), rows, engine, api.window)


def _runs(
    model: str, ckpt: str, rows: list[Published], engine: str, window: int | None = None
) -> list[str]:
    ref = shlex.quote(model)
    out: list[str] = []
    ruler = [r for r in rows if r.source.key.startswith("ruler")]
    helmet = [r for r in rows if r.source.key.startswith("helmet")]
    if ruler:
        r, lengths = ruler[0], _lengths(ruler, window)
        chat = "on" if r.chat_template == "on" else "off"
        out += [
            f"# {r.source.paper}, {', '.join(dict.fromkeys(x.source.table for x in ruler))}: the "
            f"13 tasks at {lengths}, {r.source.samples} samples each, chat template {chat} (the "
            "paper's Table 6 templates; ctxgate applies the model's own). The essay haystack is "
            "ctxgate's Wikipedia prose, not RULER's Paul Graham essays: the comparison names that "
            "difference instead of a verdict",
            f"pytest --model {ckpt} -m ruler --lengths {lengths} --samples {r.source.samples} "
            f"--chat-template {chat} {engine} --reference {ref} --report out/ruler.json",
        ]
    if helmet:
        h, lengths = helmet[0], _lengths(helmet, window)
        policy = "every prompt a user message" if window else "each task's own chat policy"
        out += [
            f"# {h.source.paper}, {h.source.table}: the seven categories at {lengths}, HELMET's "
            f"per-dataset sample counts, {policy}, GPT-4o as the judge (OPENAI_API_KEY). "
            "HELMET's data, its own prompts and scoring, and Llama-2's tokenizer for its length "
            "rules (gated: HF_TOKEN):",
            "ctxgate data fetch --to data/",
            "hf download meta-llama/Llama-2-7b-hf tokenizer.json tokenizer_config.json "
            f"special_tokens_map.json --local-dir {LLAMA2_TOKENIZER}",
            f"pytest --model {ckpt} -m helmet --lengths {lengths} --chat-template task --data-dir "
            f"data/ --helmet-compat --helmet-tokenizer {LLAMA2_TOKENIZER} --judge-model "
            f"gpt-4o-2024-05-13 {engine} --reference {ref} --report out/helmet.json",
        ]
    return out + _recipes([r for r in rows if r not in ruler + helmet], ckpt, engine, window)


def _recipes(rows: list[Published], ckpt: str, engine: str, window: int | None) -> list[str]:
    """The lines each other source gives for its own benchmark, in the order the rows are."""
    out: list[str] = []
    for key in dict.fromkeys(r.source.key for r in rows):
        cited = [r for r in rows if r.source.key == key]
        source = cited[0].source
        given = {
            "checkpoint": ckpt,
            "lengths": _lengths(cited, window),
            "samples": source.samples,
            "engine": engine,
            "reference": shlex.quote(cited[0].model),
        }
        out.append(f"# {source.paper}, {source.table}: {source.what}")
        if not given["lengths"]:  # a command with no length would run nothing
            out.append("# none of its lengths fits the window: nothing of it can run as published")
            continue
        out += [line.format(**given) for line in source.recipe] or [
            f"# (its source gives no recipe: run its tasks at {given['lengths']})"
        ]
    return out


def main(args: argparse.Namespace) -> int:
    if args.gpus < 1:
        raise CtxgateError(f"--gpus {args.gpus} must be 1 or more")
    print("\n".join(recipe(resolve(args.model), args.checkpoint, args.gpus)))
    return 0
