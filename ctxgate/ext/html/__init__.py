"""The HTML report: heatmaps, needle depths and every sample, beside the JSON report and from
``ctxgate html``."""
