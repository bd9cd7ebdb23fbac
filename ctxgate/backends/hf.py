"""HuggingFace transformers backend: greedy decoding, as HELMET's HF path, one prompt at a time or a
few of similar length at once (left padded). Batching is for GPUs: on CPU a step's cost grows with
the batch (measured 0.53-0.97x the batch-1 speed, issue 12), so ``auto`` is 1 there."""

from __future__ import annotations

import importlib.util
import json
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ctxgate.backends.base import (
    DTYPES,
    KV_FIELDS,
    Generation,
    GenerationParams,
    Request,
    Window,
    engine_dtype,
    kv_bytes_per_token,
    model_window,
)
from ctxgate.backends.checkpoint import CheckpointError
from ctxgate.backends.formats import Checkpoint
from ctxgate.backends.model_config import ConfigChanges, window
from ctxgate.refusal import CtxgateError
from ctxgate.tokens.tokenizers import HFTokenizer

AUTO_BATCH_MAX = 32  # beyond this the decode step stops being bound by weight reads on current GPUs
AUTO_MEMORY_SHARE = 0.6  # of the free GPU memory, for the batch's KV cache and activations
ALONE_PAST_TOKENS = 131072  # a longer prompt is generated alone, whatever --batch-size says
AUTO_PADDED_MAX_TOKENS = 32768  # auto's longest padded batch without flash-attn (see _auto)


class BackendError(CtxgateError, RuntimeError):
    """A model that cannot be loaded or run; the message says what to change."""


def bytes_per_token(config: Any, element_size: int) -> int:
    """GPU memory one more token of one sequence costs: its KV cache in every layer, plus the widest
    activations of a prefill step (one layer at a time)."""
    cfg = config.get_text_config() if hasattr(config, "get_text_config") else config
    # by attribute: a config's attribute_map names GPT-2's n_head or DBRX's n_layers this way
    fields = {k: getattr(cfg, k, None) for k in KV_FIELDS}
    widest = 4 * cfg.hidden_size + 2 * getattr(cfg, "intermediate_size", 4 * cfg.hidden_size)
    return kv_bytes_per_token(fields, element_size) + widest * element_size


def weights_mismatch(
    info: Mapping[str, Iterable[object]], model: str, resizing: str = ""
) -> str | None:
    """One line naming the first tensor the weights and the config disagree on (transformers would
    fill a missing one with random values), and the fix; None when every weight loaded as saved.
    ``resizing``: the options given that resize tensors (``ConfigChanges.resizing``), the likely
    cause."""
    kinds = [
        ("missing from the weights (it would be random)", list(info.get("missing_keys") or [])),
        ("in the weights but not in the model", list(info.get("unexpected_keys") or [])),
        ("of another shape", list(info.get("mismatched_keys") or [])),
    ]
    found = [(what, sorted(keys, key=str)) for what, keys in kinds if keys]
    if not found:
        return None
    what, keys = found[0]
    first = keys[0]
    if isinstance(first, (tuple, list)):  # mismatched: (name, shape saved, shape the config makes)
        first, saved, wanted = (list(first) + [None, None])[:3]
        source = "the overridden config" if resizing else "config.json"
        what = f"{tuple(saved or ())} in the weights but {tuple(wanted or ())} by {source}"
    detail = ", ".join(f"{len(k)} {w.split(' (')[0].split(' by ')[0]}" for w, k in found)
    if resizing:
        return _load_failed(model, f"tensor {first} is {what} ({detail})", resizing)
    return (
        f"{model}: tensor {first} is {what} ({detail}): the weights do not match config.json. "
        "Restore the checkpoint's own config.json and weights (a save cut short, or a config from "
        "another size), or pass --allow-weight-mismatch to evaluate it as it loads"
    )


def check_applied(config: Any, changes: ConfigChanges, model: str) -> None:
    """Each change as given in the loaded config: transformers may read a setting its own way (a
    bare ``rope_scaling`` loses ``rope_theta``), and the run would evaluate another model."""
    loaded = config.to_dict()
    for key, value in changes.changes.items():
        got = loaded.get(key)
        if isinstance(value, dict) and isinstance(got, dict):
            differs = {k: (v, got.get(k)) for k, v in value.items() if got.get(k) != v}
        else:
            differs = {} if got == value else {key: (value, got)}
        if differs:
            k, (wanted, found) = next(iter(differs.items()))
            raise BackendError(
                f"{model}: transformers loaded {key}{'.' + k if k != key else ''} as {found!r}, "
                f"not the {wanted!r} asked for: check {changes.flags} against the model's "
                "config class"
            )


def _load_failed(model: str, cause: object, resizing: str) -> str:
    """Why the model did not load; the likely cause: the options given that resize tensors."""
    if not resizing:
        return f"cannot load the model {model!r}: {cause}"
    fix = f"drop or correct {resizing}"
    return f"{model}: {cause}: the likely cause is {resizing}, not the checkpoint; {fix}"


@dataclass(frozen=True)
class HFSettings:
    """How ``HFBackend`` loads and runs a checkpoint. ``batch_size`` None: ``auto`` (see
    ``batch_limit``). ``device_map`` "auto": spread over every GPU this process sees.
    ``config``: the extras' changes, applied to the config before weights load."""

    dtype: str = "auto"
    trust_remote_code: bool = False
    allow_pickle: bool = False
    attn: str = "auto"
    threads: int | None = None
    batch_size: int | None = None  # auto (``batch_limit``): 1 on CPU
    device_map: str | None = None
    allow_weight_mismatch: bool = False
    config: ConfigChanges | None = None


def _load(model: Checkpoint, settings: HFSettings, dtype: Any, attn: str) -> tuple[Any, Any, Any]:
    """The tokenizer, the model as evaluated (its weights, its kind's part applied) and
    transformers' loading info; BackendError names what went wrong."""
    import transformers

    config = settings.config
    trust, name, config_dir = settings.trust_remote_code, str(model.folder), str(model.config_dir)
    changes = dict(config.changes) if config is not None else {}
    verbosity = transformers.logging.get_verbosity()
    transformers.logging.set_verbosity_error()  # its load table is replaced by one line below
    weights = model.weights_dir
    try:
        tok = transformers.AutoTokenizer.from_pretrained(
            str(model.tokenizer_dir), trust_remote_code=trust
        )
        extra: dict[str, object] = {}
        if changes or weights is None:
            extra["config"] = transformers.AutoConfig.from_pretrained(
                config_dir, trust_remote_code=trust, **changes
            )
            if config is not None:
                check_applied(extra["config"], config, name)
        # its from_pretrained gives (model, info) as asked below
        auto: Any = transformers.AutoModelForCausalLM
        if weights is None:  # built from its config and filled by its part: every tensor loaded
            assert model.part is not None, "a checkpoint without weights to read has a part"
            loaded = auto.from_config(extra["config"], dtype=dtype, attn_implementation=attn)
            info = {}
            model.part.fill(loaded)
        else:
            loaded, info = auto.from_pretrained(
                str(weights),
                **extra,
                dtype=dtype,
                attn_implementation=attn,
                trust_remote_code=trust,
                use_safetensors=None if settings.allow_pickle else True,
                device_map=settings.device_map,
                output_loading_info=True,
                ignore_mismatched_sizes=True,
            )
    except CheckpointError as exc:  # the part's: a piece the checkpoint lacks
        raise BackendError(str(exc)) from None
    except Exception as exc:
        resizing = config.resizing if config else ""
        if not resizing and not isinstance(exc, (OSError, ValueError)):
            raise
        raise BackendError(_load_failed(name, exc, resizing)) from exc
    finally:
        transformers.logging.set_verbosity(verbosity)
    if model.part is not None:
        try:
            loaded = model.part.finish(loaded)
        except CheckpointError as exc:
            raise BackendError(str(exc)) from None
    return tok, loaded, info


def _checked(model: Checkpoint, settings: HFSettings) -> None:
    """The settings against the checkpoint and what is installed, before anything loads."""
    part, device_map = model.part, settings.device_map
    if part is not None and part.base is None and device_map is not None:
        raise BackendError(f"{model.folder}: --device-map is not available for {part.what}")
    if device_map is not None and not importlib.util.find_spec("accelerate"):
        raise BackendError(
            f"--device-map {device_map} needs the accelerate package: pip install "
            "'ctxgate[gpu]' (or pip install accelerate)"
        )


class HFBackend:
    name = "hf"

    def __init__(self, model: Checkpoint, settings: HFSettings | None = None) -> None:
        import torch

        settings = settings or HFSettings()
        self.torch = torch
        cuda = torch.cuda.is_available()
        self.device = torch.device("cuda" if cuda else "cpu")
        if not cuda and settings.threads:
            torch.set_num_threads(settings.threads)
        self.checkpoint = model
        _checked(model, settings)
        attn = settings.attn
        if attn == "auto":  # float32 with sdpa on CPU (bf16 is slower there)
            flash = cuda and importlib.util.find_spec("flash_attn")
            attn = "flash_attention_2" if flash else "sdpa"
        self.attn = attn
        if settings.dtype not in DTYPES:
            raise BackendError(
                f"--dtype {settings.dtype!r} is not supported; use one of {', '.join(DTYPES)}"
            )
        self.dtype = getattr(torch, engine_dtype(settings.dtype, cuda))
        self.config_changes = config = settings.config
        tok, loaded, info = _load(model, settings, self.dtype, attn)
        problem = weights_mismatch(info, str(model.folder), config.resizing if config else "")
        if problem and not settings.allow_weight_mismatch:
            raise BackendError(problem)
        # kept for the report when --allow-weight-mismatch let it through
        self.weights_problem = problem
        device_map = settings.device_map
        self.model = loaded if device_map is not None else loaded.to(self.device)
        self.model.eval()
        self.device_map = device_map
        # where the input ids go: the embedding's device (with a device map, the model's first GPU)
        self.input_device = self.model.get_input_embeddings().weight.device
        self.hf_tokenizer = tok
        self.tokenizer = HFTokenizer(tok)
        eos = set(self.tokenizer.eos_ids())
        gen_eos = self.model.generation_config.eos_token_id
        eos.update(gen_eos if isinstance(gen_eos, list) else [] if gen_eos is None else [gen_eos])
        self.eos_ids = sorted(eos)
        self.pad_id = tok.pad_token_id if tok.pad_token_id is not None else (self.eos_ids or [0])[0]
        self.max_positions: int | None = window(self.model.config.to_dict())
        self.batch_size = settings.batch_size
        # batch tokens known to run out of memory, halved: never tried again
        self.token_cap: int | None = None
        self._element_size = self.torch.tensor([], dtype=self.dtype).element_size()
        self._per_token = bytes_per_token(self.model.config, self._element_size)

    def batch_limit(self, prompt_tokens: int, max_new_tokens: int) -> int:
        """Prompts of about this length to generate together: ``--batch-size N``, or for ``auto``
        what fits in a share of the free GPU memory (1 on CPU); lowered for good after an OOM."""
        tokens = prompt_tokens + max_new_tokens
        if prompt_tokens > ALONE_PAST_TOKENS:
            # one such prompt's prefill activations are already the most a worker should hold
            return 1
        if self.batch_size is not None:
            n = self.batch_size
        elif self.input_device.type != "cuda":
            return 1
        else:
            n = self._auto(tokens)
        if self.token_cap is not None:
            n = min(n, self.token_cap // tokens)
        return max(1, n)

    def _auto(self, tokens: int) -> int:
        """What fits in a share of the free GPU memory. Without flash-attn's unpadded kernels, left
        padding gives sdpa and eager a tokens x tokens mask per row (as bool and in the model's
        dtype) and a masked kernel: past 32K tokens a batch of two ran slower than one at a time
        (bench/gpu.py on an H200: 0.39-0.53x at 64K, out of memory at 128K), so those go alone."""
        row = self._per_token * tokens
        if self.attn != "flash_attention_2":
            if tokens > AUTO_PADDED_MAX_TOKENS:
                return 1
            row += tokens * tokens * (1 + self._element_size)
        return min(AUTO_BATCH_MAX, int(AUTO_MEMORY_SHARE * self._free_gpu_bytes() // row))

    def _free_gpu_bytes(self) -> int:
        """The least free memory of the model's GPUs, times their count (its layers are spread)."""
        devices = {p.device for p in self.model.parameters() if p.device.type == "cuda"}
        return min(self.torch.cuda.mem_get_info(d)[0] for d in devices) * len(devices)

    def generate(self, requests: Sequence[Request], params: GenerationParams) -> list[Generation]:
        torch = self.torch
        try:
            return self._generate_batch(requests, params)
        except torch.cuda.OutOfMemoryError as exc:
            torch.cuda.empty_cache()
            if len(requests) == 1:
                raise BackendError(
                    f"CUDA out of memory at {len(requests[0].input_ids)} input tokens ({exc}); "
                    "run fewer workers per GPU, a shorter --lengths, a smaller --dtype, or spread "
                    "the model over more GPUs with --device-map auto"
                ) from None
            # a batch too large for this length: halve it, and never try that many tokens again
            half = len(requests) // 2
            longest = max(len(r.input_ids) for r in requests)
            self.token_cap = half * (longest + params.max_new_tokens)
            return self.generate(requests[:half], params) + self.generate(requests[half:], params)

    def _generate_batch(
        self, requests: Sequence[Request], params: GenerationParams
    ) -> list[Generation]:
        """Left padded and masked: each row's positions start at its first real token, so its greedy
        output is the one it gets alone (up to the numerics of the wider matmuls)."""
        torch = self.torch
        width = max(len(r.input_ids) for r in requests)
        rows = [[self.pad_id] * (width - len(r.input_ids)) + list(r.input_ids) for r in requests]
        masks = [[0] * (width - len(r.input_ids)) + [1] * len(r.input_ids) for r in requests]
        ids = torch.tensor(rows, device=self.input_device)
        mask = torch.tensor(masks, device=self.input_device)
        stops: dict[str, Any] = {}
        if params.stop_strings:
            stops = {"stop_strings": list(params.stop_strings), "tokenizer": self.hf_tokenizer}
        with torch.inference_mode():
            seq = self.model.generate(
                ids,
                attention_mask=mask,
                max_new_tokens=params.max_new_tokens,
                do_sample=False,
                temperature=None,
                top_p=None,
                top_k=None,
                eos_token_id=self.eos_ids or None,
                pad_token_id=self.pad_id,
                **stops,
            )
        out = []
        for row in seq[:, width:].tolist():
            # a row that stopped early is padded while the others go on: keep it up to its EOS
            new = row[: next((i + 1 for i, t in enumerate(row) if t in self.eos_ids), len(row))]
            stopped = bool(new) and new[-1] in self.eos_ids
            kept = [t for t in new if t not in self.eos_ids] if params.keep_special else new
            text = str(self.hf_tokenizer.decode(kept, skip_special_tokens=not params.keep_special))
            ends = [text.find(x) + len(x) for x in params.stop_strings if x in text]
            if ends:  # padded after its stop string while the others went on
                text = text[: min(ends)]
                while new and new[-1] == self.pad_id:
                    new.pop()
            finish = "stop" if stopped or ends or len(new) < params.max_new_tokens else "length"
            # generate() computes every prompt token: none comes from a cache
            out.append(Generation(text, len(new), finish, ids=tuple(new), cached=0))
        return out

    def window_of(self, limit: int) -> Window:
        if self.config_changes is None:
            return model_window(limit)
        given = json.dumps(self.config_changes.asked)
        what = f"the window the model's config gives with {given} ({limit})"
        return Window(what, "pass --force-lengths to run it beyond the window anyway")

    def cache_identity(self) -> dict[str, object]:
        return {"dtype": str(self.dtype).replace("torch.", ""), "attn": self.attn}

    def describe(self) -> dict[str, object]:
        import transformers

        return {
            "backend": self.name,
            "device": str(self.input_device),
            "dtype": str(self.dtype).replace("torch.", ""),
            "attn_implementation": self.attn,
            "transformers": transformers.__version__,
            "torch": str(self.torch.__version__),
            "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES"),
            "batch_size": "auto" if self.batch_size is None else self.batch_size,
            "device_map": self.device_map,
            "devices": sorted({str(p.device) for p in self.model.parameters()}),
            "device_name": self.torch.cuda.get_device_name(self.input_device)
            if self.input_device.type == "cuda"
            else None,
            **self.checkpoint.describe(),
        }
