"""Metrics, one registry addressable by name. A metric maps an output to a score in [0, 1]."""

from ctxgate.metrics.registry import Metric, get_metric, metric_names, score_prediction

__all__ = ["Metric", "get_metric", "metric_names", "score_prediction"]
