"""ctxgate inside other tools' loops: ``CtxgateCallback`` for Hugging Face's Trainer
(``trainer.py``)."""

from ctxgate.integrations.trainer import CtxgateCallback

__all__ = ["CtxgateCallback"]
