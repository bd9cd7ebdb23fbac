"""xdist workers: one per GPU, each pinned to its own device, fed the longest cases first, and none
at all for a checkpoint that cannot load (the xdist hooks are optional, for ``-p no:xdist``)."""

from __future__ import annotations

import os

import pytest

from ctxgate.backends.devices import visible_gpus
from ctxgate.run.flags import OptionError, read
from ctxgate.run.options import BACKEND, DEVICE_MAP, GPUS_PER_REPLICA, MODEL, TP

from .options import PLAN_KEY, STARTUP_ERROR_KEY, refusals_are_usage_errors


@refusals_are_usage_errors
def pytest_configure(config: pytest.Config) -> None:
    """After the options plugin (tryfirst), before xdist (trylast) starts its session."""
    if not config.stash[PLAN_KEY].model.model:
        return
    if STARTUP_ERROR_KEY in config.stash and not hasattr(config, "workerinput"):
        # Nothing will run, so start no workers: xdist's own answer to options that make
        # distribution pointless (it does this for --pdb).
        config.option.numprocesses = 0
        config.option.dist = "no"
        config.option.tx = []
    elif config.getoption("dist", "no") == "load" and config.getoption("maxschedchunk", 0) is None:
        # Not a quarter of the cases at once (xdist's load default): one at a time over cases sorted
        # longest first is longest-processing-time-first. --maxschedchunk N overrides it.
        config.option.maxschedchunk = 1
    _pin_gpu(config)


def _pin_gpu(config: pytest.Config) -> None:
    """Under xdist, worker gwN sees only GPU N, or with ``--device-map auto`` its slice of them (set
    before anything initializes CUDA). Not for served backends: their workers only send requests."""
    hf = config.stash[PLAN_KEY].model
    if hf.backend != "hf":
        return
    worker = os.environ.get("PYTEST_XDIST_WORKER") if hasattr(config, "workerinput") else None
    devices = visible_gpus()
    if not devices or (worker is None and hf.device_map is None):
        return
    index = int(worker.removeprefix("gw")) if worker else 0
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1")) if worker else 1
    per = (hf.gpus_per_replica or max(1, len(devices) // workers)) if hf.device_map else 1
    mine = devices[index * per : (index + 1) * per]
    if len(mine) < per:
        fix = f"use --gpus-per-replica {len(devices)} or fewer"
        if len(devices) >= per:
            fix = f"run with -n {len(devices) // per} or -n auto"
        raise pytest.UsageError(
            f"xdist worker {worker or 'gw0'} has no {'GPUs' if per > 1 else 'GPU'}: "
            f"{len(devices)} visible, {per} per worker; {fix}"
        )
    os.environ["CUDA_VISIBLE_DEVICES"] = ",".join(mine)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int | None:
    """``-n auto``: one worker per replica (visible GPUs / GPUs per replica); without GPUs, xdist's
    default. It runs before the plan is made: a bad option value is left to the plan's one line."""
    if config.getoption(MODEL.dest, None) is None:
        return None
    count = len(visible_gpus())  # CUDA_VISIBLE_DEVICES="" (forcing the CPU) is no GPU, not "unset"
    if not count:
        return None
    try:
        given = read(
            (BACKEND, TP, DEVICE_MAP, GPUS_PER_REPLICA), lambda dest: config.getoption(dest, None)
        )
    except OptionError:
        return None
    if given["backend"] == "vllm":
        per = given["tp"]
    elif given["backend"] == "hf" and given["device_map"]:
        per = given["gpus_per_replica"] or count
    else:
        per = 1
    return max(1, count // per)
