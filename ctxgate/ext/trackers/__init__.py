"""Experiment trackers: ``--log-to wandb|tensorboard|mlflow``, and ``CtxgateCallback``, which runs
``ctxgate watch`` beside a Hugging Face Trainer (imported on first use: it needs transformers)."""

from typing import Any


def __getattr__(name: str) -> Any:
    if name == "CtxgateCallback":
        from ctxgate.ext.trackers.trainer import CtxgateCallback

        return CtxgateCallback
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["CtxgateCallback"]
