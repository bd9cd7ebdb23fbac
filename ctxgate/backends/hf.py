"""HuggingFace transformers backend: greedy decoding, batch size 1, as HELMET's HF path.

bf16 with flash-attention 2 on a GPU when the ``flash_attn`` package is importable, else sdpa; float32 with sdpa
on CPU (bf16 is slower there). Only safetensors weights are loaded unless the user allows pickle explicitly.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ctxgate.backends.base import DTYPES, Generation, GenerationParams, Request
from ctxgate.checkpoint import CheckpointError, check_checkpoint
from ctxgate.textcodec import HFTokenizer


class BackendError(RuntimeError):
    """A model that cannot be loaded or run; the message says what to change."""


def _pick_dtype(torch: Any, requested: str, cuda: bool) -> Any:
    if requested == "auto":
        return torch.bfloat16 if cuda else torch.float32
    table = {"bf16": torch.bfloat16, "bfloat16": torch.bfloat16, "fp16": torch.float16, "float16": torch.float16,
             "fp32": torch.float32, "float32": torch.float32}
    if requested not in table:
        raise BackendError(f"--dtype {requested!r} is not supported; use one of {', '.join(DTYPES)}")
    return table[requested]


class HFBackend:
    name = "hf"

    def __init__(self, model: str, *, dtype: str = "auto", trust_remote_code: bool = False,
                 allow_pickle: bool = False, attn: str = "auto", threads: int | None = None) -> None:
        import torch
        import transformers

        self.torch = torch
        cuda = torch.cuda.is_available()
        self.device = torch.device("cuda" if cuda else "cpu")
        if not cuda and threads:
            torch.set_num_threads(threads)
        path = Path(model)
        if path.is_dir():
            try:
                check_checkpoint(path, trust_remote_code=trust_remote_code, ignore_remote_code=True,
                                 allow_pickle=allow_pickle)
            except CheckpointError as exc:
                raise BackendError(str(exc)) from None
        if attn == "auto":
            attn = "flash_attention_2" if cuda and importlib.util.find_spec("flash_attn") else "sdpa"
        self.attn = attn
        self.dtype = _pick_dtype(torch, dtype, cuda)
        try:
            tok = transformers.AutoTokenizer.from_pretrained(model, trust_remote_code=trust_remote_code)
            self.model = transformers.AutoModelForCausalLM.from_pretrained(
                model, dtype=self.dtype, attn_implementation=attn, trust_remote_code=trust_remote_code,
                use_safetensors=None if allow_pickle else True,
            ).to(self.device)
        except (OSError, ValueError) as exc:
            raise BackendError(f"cannot load the model {model!r}: {exc}") from exc
        self.model.eval()
        self.hf_tokenizer = tok
        self.tokenizer = HFTokenizer(tok)
        eos = set(self.tokenizer.eos_ids())
        gen_eos = self.model.generation_config.eos_token_id
        eos.update(gen_eos if isinstance(gen_eos, list) else [gen_eos] if gen_eos is not None else [])
        self.eos_ids = sorted(eos)
        self.pad_id = tok.pad_token_id if tok.pad_token_id is not None else (self.eos_ids or [0])[0]
        self.max_positions: int | None = getattr(self.model.config, "max_position_embeddings", None)
        self.model_path = model

    def generate(self, requests: Sequence[Request], params: GenerationParams) -> list[Generation]:
        torch = self.torch
        out = []
        for r in requests:
            ids = torch.tensor([r.input_ids], device=self.device)
            try:
                with torch.inference_mode():
                    seq = self.model.generate(
                        ids, attention_mask=torch.ones_like(ids), max_new_tokens=params.max_new_tokens,
                        do_sample=False, temperature=None, top_p=None, top_k=None,
                        eos_token_id=self.eos_ids or None, pad_token_id=self.pad_id,
                    )
            except torch.cuda.OutOfMemoryError as exc:
                torch.cuda.empty_cache()
                raise BackendError(f"CUDA out of memory at {len(r.input_ids)} input tokens ({exc}); run fewer "
                                   "workers per GPU, a shorter --lengths, or a smaller --dtype") from None
            new = seq[0, len(r.input_ids):].tolist()
            stopped = bool(new) and new[-1] in self.eos_ids
            text = self.hf_tokenizer.decode(new, skip_special_tokens=True)
            out.append(Generation(text, len(new), "stop" if stopped or len(new) < params.max_new_tokens else "length"))
        return out

    def describe(self) -> dict[str, object]:
        import transformers

        return {"backend": self.name, "device": str(self.device), "dtype": str(self.dtype).replace("torch.", ""),
                "attn_implementation": self.attn, "transformers": transformers.__version__,
                "torch": str(self.torch.__version__), "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES")}
