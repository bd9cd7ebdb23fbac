"""``--backend hf``'s own options: prompts per generate call and the model spread over several GPUs, read once into
``HFSettings`` under ``HF_KEY``. The workers plugin pins GPUs from them; the model plugin loads with them."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from .options import SETTINGS_KEY, refusals_are_usage_errors


@dataclass(frozen=True)
class HFSettings:
    batch_size: int | None = 1  # prompts per generate call; None: as many as fit (auto)
    device_map: str | None = None  # "auto": one model spread over several GPUs
    gpus_per_replica: int | None = None  # with device_map auto: GPUs per worker (None: visible GPUs / workers)


HF_KEY = pytest.StashKey[HFSettings]()


def pytest_addoption(parser: pytest.Parser) -> None:
    h = parser.getgroup("ctxgate-hf", "ctxgate --backend hf: batching and placement")
    h.addoption(
        "--batch-size",
        default="auto",
        help="prompts of one case generated together: auto (default: 1 on CPU, on a GPU as many as fit its "
        "free memory, at most 32) or a number; 1 is the papers' HF path",
    )
    h.addoption(
        "--device-map",
        choices=("auto",),
        help="auto: spread each worker's model over several GPUs (a model larger than one GPU); -n then "
        "counts model replicas",
    )
    h.addoption(
        "--gpus-per-replica",
        type=int,
        help="with --device-map auto: GPUs each worker's model spans (default: visible GPUs / workers); "
        "-n auto runs visible GPUs / this many workers",
    )


@pytest.hookimpl(tryfirst=True)
@refusals_are_usage_errors
def pytest_configure(config: pytest.Config) -> None:
    """After the options plugin (called first) has read the backend: these options are --backend hf's."""
    backend = config.stash[SETTINGS_KEY].backend
    given = str(config.getoption("--batch-size")).strip().lower()
    if given != "auto" and not (given.isdigit() and int(given) > 0):
        raise pytest.UsageError(
            f"--batch-size {given!r} is neither auto nor a positive number: e.g. --batch-size auto or --batch-size 8"
        )
    batch_size = None if given == "auto" else int(given)
    device_map, per_replica = config.getoption("--device-map"), config.getoption("--gpus-per-replica")
    if backend != "hf":
        if batch_size is not None or device_map or per_replica:
            fix = "--concurrency N (requests in flight per replica)" if backend in ("vllm", "openai") else "nothing"
            raise pytest.UsageError(
                f"--batch-size/--device-map/--gpus-per-replica are for --backend hf; with --backend {backend} use {fix}"
            )
        config.stash[HF_KEY] = HFSettings()
        return
    if per_replica is not None and (device_map is None or per_replica <= 0):
        raise pytest.UsageError(
            f"--gpus-per-replica {per_replica} needs --device-map auto and a positive count, e.g."
            " --device-map auto --gpus-per-replica 4"
        )
    config.stash[HF_KEY] = HFSettings(batch_size, device_map, per_replica)
