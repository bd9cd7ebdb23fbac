"""ctxgate inside other tools' loops: ``CtxgateCallback`` for Hugging Face's Trainer."""

from ctxgate.integrations.trainer import CtxgateCallback

__all__ = ["CtxgateCallback"]
