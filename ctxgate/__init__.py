"""ctxgate: HELMET and RULER long-context checks as gated pytest cases."""

__version__ = "0.1.0"
