"""ctxgate's pytest plugins, one module per concern: options, engine (HTTP backends and the vLLM servers),
workers (xdist and GPUs), signals (SIGTERM/SIGHUP as Ctrl-C, workers that end with their controller), progress (the
live line), model, cases (gates), reporting.

Installed, this package is ``ctxgate_plugins`` and loads through the ``pytest11`` entry point, so ``--model`` works
from any directory and with any path (pytest reads an absolute ``--model /ckpt`` as a test path before it knows
the option, which would skip a rootdir conftest; the options plugin then collects the suite itself). From a bare
checkout, the root conftest loads it as ``plugins``.
"""

pytest_plugins = [
    f"{__name__}.{name}"
    for name in ("engine", "options", "workers", "signals", "progress", "model", "cases", "reporting")
]
