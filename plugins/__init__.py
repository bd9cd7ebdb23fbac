"""ctxgate's pytest plugins, one module per concern, each with its own options, settings and stash key: options
(the run: model, lengths, data, thresholds, baseline), engine (HTTP backends and the vLLM servers), hf (batching and
placement), judging (the judged tasks' judges), sequential (early stopping), workers (xdist and GPUs), signals
(SIGTERM/SIGHUP as Ctrl-C, workers that end with their controller), progress (the live line), model, cases
(gates), reporting, reference (the papers' published numbers), trackers (W&B, TensorBoard, MLflow).

Installed, this package is ``ctxgate_plugins`` and loads through the ``pytest11`` entry point, so ``--model`` works
from any directory and with any path (pytest reads an absolute ``--model /ckpt`` as a test path before it knows
the option, which would skip a rootdir conftest; the options plugin then collects the suite itself). From a bare
checkout, the root conftest loads it as ``plugins``.
"""

pytest_plugins = [
    f"{__name__}.{name}"
    # Each reads its own options in its own pytest_configure. The options plugin's runs first: it is tryfirst and
    # registered after the tryfirst plugins that build on its run settings (pluggy calls the last registered
    # first), which therefore import it before its registration (its docstring turns assertion rewriting off).
    for name in (
        "engine",
        "hf",
        "judging",
        "sequential",
        "options",
        "workers",
        "signals",
        "progress",
        "model",
        "cases",
        "reporting",
        "reference",
        "trackers",
    )
]
