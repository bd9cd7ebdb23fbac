"""Entailment judges for citation recall and precision: a local NLI checkpoint (an MNLI classifier
or a T5 TRUE-style model, never downloaded) or the LLM judge; a failure raises EntailmentFailed."""

from __future__ import annotations

import threading
from pathlib import Path

from ctxgate.backends.checkpoint import CheckpointError, check_checkpoint
from ctxgate.judge import verdict
from ctxgate.judge.client import JudgeClient


class EntailmentFailed(RuntimeError):
    pass


def check_nli_model(path: str, allow_pickle: bool = False) -> None:
    """``--nli-model`` passes the same checks as ``--model`` before anything loads."""
    if not Path(path).is_dir():
        raise CheckpointError(
            f"--nli-model {path!r} is not a folder: give a local NLI checkpoint (an MNLI "
            "classifier or a T5 TRUE-style model)"
        )
    try:
        check_checkpoint(Path(path), allow_pickle=allow_pickle)
    except CheckpointError as exc:  # its messages speak of --model
        raise CheckpointError(f"--nli-model: {exc}") from None


class LLMEntailment:
    def __init__(self, client: JudgeClient) -> None:
        self.client = client

    def __call__(self, premise: str, hypothesis: str) -> bool:
        v = self.client.ask(
            verdict.render("entailment", premise=premise, hypothesis=hypothesis), verdict.entailment
        )
        if v.value is None:
            raise EntailmentFailed(v.error or "no verdict")
        return v.value

    def describe(self) -> dict[str, object]:
        return {"kind": "llm", "model": self.client.settings.model}


class HFEntailment:
    def __init__(self, path: str, device: str | None = None, allow_pickle: bool = False) -> None:
        check_nli_model(path, allow_pickle)
        import torch
        import transformers

        self.path = path
        self._torch = torch
        self.device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        config = transformers.AutoConfig.from_pretrained(path)
        self.tokenizer = transformers.AutoTokenizer.from_pretrained(path)
        classifier = any("SequenceClassification" in a for a in (config.architectures or []))
        self.generative = bool(getattr(config, "is_encoder_decoder", False)) and not classifier
        auto = (
            transformers.AutoModelForSeq2SeqLM
            if self.generative
            else transformers.AutoModelForSequenceClassification
        )
        self.model = auto.from_pretrained(path, use_safetensors=None if allow_pickle else True)
        self.entail_index = -1
        if not self.generative:
            labels = {int(i): str(name) for i, name in (config.id2label or {}).items()}
            hits = [i for i, name in labels.items() if name.lower().startswith("entail")]
            if len(hits) != 1:
                raise ValueError(
                    f"--nli-model {path}: its labels {labels} do not name exactly one entailment "
                    "class; use an MNLI-style classifier (labels such as "
                    "entailment/neutral/contradiction)"
                )
            self.entail_index = hits[0]
        self.model.to(self.device).eval()
        self.max_length = min(int(getattr(self.tokenizer, "model_max_length", 512) or 512), 100_000)
        # one forward pass at a time, whatever the judge's concurrency
        self._lock = threading.Lock()
        self._memo: dict[tuple[str, str], bool] = {}

    def __call__(self, premise: str, hypothesis: str) -> bool:
        key = (premise, hypothesis)
        with self._lock:
            if key not in self._memo:
                self._memo[key] = self._run(premise, hypothesis)
            return self._memo[key]

    def _run(self, premise: str, hypothesis: str) -> bool:
        with self._torch.inference_mode():
            if self.generative:
                # never cut: the reference feeds the T5 TRUE model the whole premise, however long
                text = f"premise: {premise} hypothesis: {hypothesis}"
                enc = self.tokenizer(text, return_tensors="pt").to(self.device)
                out = self.model.generate(**enc, max_new_tokens=10, do_sample=False)
                return str(self.tokenizer.decode(out[0], skip_special_tokens=True)).strip() == "1"
            enc = self.tokenizer(premise, hypothesis, return_tensors="pt").to(self.device)
            if (n := enc["input_ids"].shape[1]) > self.max_length:  # a classifier's positions end
                raise EntailmentFailed(
                    f"premise and claim are {n} tokens, more than --nli-model {self.path} reads "
                    f"({self.max_length}); use a T5 TRUE model (HELMET's judge), which reads any "
                    "length"
                )
            logits = self.model(**enc).logits[0]
            return int(logits.argmax()) == self.entail_index

    def describe(self) -> dict[str, object]:
        return {"kind": "nli", "path": self.path, "generative": self.generative}
