"""xdist workers: one per GPU, each pinned to its own device, fed the longest cases first, and none at all for a
checkpoint that cannot load.

The hooks xdist defines are declared ``optionalhook``, so ``-p no:xdist`` (a common way to debug a suite) runs
the suite in one process instead of failing on hooks nobody defines.
"""

from __future__ import annotations

import os

import pytest

from .options import STARTUP_ERROR_KEY, SETTINGS_KEY


def pytest_configure(config: pytest.Config) -> None:
    """After the options plugin (tryfirst) has read the settings, before xdist (trylast) starts its session."""
    if config.stash[SETTINGS_KEY].model is None:
        return
    if STARTUP_ERROR_KEY in config.stash and not hasattr(config, "workerinput"):
        # Nothing will run (the cases plugin records every case as not run), so start no workers: xdist's own
        # answer to options that make distribution pointless (it does this for --pdb).
        config.option.numprocesses = 0
        config.option.dist = "no"
        config.option.tx = []
    elif config.getoption("dist", "no") == "load" and config.getoption("maxschedchunk", 0) is None:
        # xdist's load scheduling hands out a quarter of the cases at once; one at a time (it keeps two queued per
        # worker), over cases sorted longest first, is longest-processing-time-first: idle workers take the next
        # longest case instead of waiting for one worker's queue of long ones. --maxschedchunk N overrides it.
        config.option.maxschedchunk = 1
    _pin_gpu(config)


def visible_gpus() -> list[str]:
    """The GPUs this process may use: CUDA_VISIBLE_DEVICES when set, else every GPU nvidia-smi lists."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None:
        return [d.strip() for d in visible.split(",") if d.strip()]
    return [str(i) for i in range(_gpu_count())]


def _pin_gpu(config: pytest.Config) -> None:
    """Under xdist, worker gwN sees only GPU N (set before anything initializes CUDA). Not for backends whose
    GPUs belong to a server (vllm, openai): their workers only send requests."""
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if not worker or not hasattr(config, "workerinput") or config.stash[SETTINGS_KEY].backend in ("vllm", "openai"):
        return
    n = int(worker.removeprefix("gw"))
    devices = visible_gpus()
    if not devices:
        return
    if n >= len(devices):
        raise pytest.UsageError(f"xdist worker {worker} has no GPU: {len(devices)} visible; run with -n {len(devices)}"
                                " or -n auto")
    os.environ["CUDA_VISIBLE_DEVICES"] = devices[n]


def _gpu_count() -> int:
    """GPUs on this node, counted without initializing CUDA in this process (nvidia-smi)."""
    import shutil
    import subprocess

    if not shutil.which("nvidia-smi"):
        return 0
    try:
        out = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=20, check=False).stdout
    except (OSError, subprocess.TimeoutExpired):
        return 0
    return sum(1 for line in out.splitlines() if line.startswith("GPU "))


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int | None:
    """``-n auto``: one worker per GPU; on a machine without GPUs, xdist's own default."""
    if config.getoption("--model", None) is None:
        return None
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    count = len([d for d in visible.split(",") if d.strip()]) if visible else _gpu_count()
    return count or None
