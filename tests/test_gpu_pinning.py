"""Worker gwN gets GPU N (or its slice with --device-map auto); -n auto means one worker per model
replica. (The CUDA side is exercised only on a GPU node.)"""

from types import SimpleNamespace

import pytest

from ctxgate.backends import devices
from ctxgate_plugins import workers
from ctxgate_plugins.options import PLAN_KEY


def stash(**hf):
    model = {"backend": "hf", "device_map": None, "gpus_per_replica": None, **hf}
    return {PLAN_KEY: SimpleNamespace(model=SimpleNamespace(**model))}


def worker_config():
    return SimpleNamespace(workerinput={"workerid": "gw1"}, stash=stash())


def test_worker_takes_its_entry_of_the_visible_list(monkeypatch):
    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw1")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3,5")
    workers._pin_gpu(worker_config())
    import os

    assert os.environ["CUDA_VISIBLE_DEVICES"] == "5"


def test_worker_numbered_past_the_gpus_is_told_the_fix(monkeypatch):
    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw2")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1")
    with pytest.raises(pytest.UsageError, match="run with -n 2 or -n auto"):
        workers._pin_gpu(worker_config())


def test_without_gpus_nothing_is_pinned(monkeypatch):
    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw0")
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    monkeypatch.setattr(devices, "gpu_count", lambda: 0)
    workers._pin_gpu(worker_config())
    import os

    assert "CUDA_VISIBLE_DEVICES" not in os.environ


def test_auto_workers_is_the_gpu_count(monkeypatch):
    # the options as pytest gives them before configure: only --model set, every other option at its
    # default
    given = {"model": "ckpt"}
    config = SimpleNamespace(getoption=lambda name, default=None: given.get(name, default))
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1,2")
    assert workers.pytest_xdist_auto_num_workers(config) == 3
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES")
    monkeypatch.setattr(devices, "gpu_count", lambda: 0)
    assert workers.pytest_xdist_auto_num_workers(config) is None
    given.clear()  # the project's own tests (no --model): xdist's own count
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1,2")
    assert workers.pytest_xdist_auto_num_workers(config) is None


@pytest.mark.parametrize(
    ("worker", "count", "per", "expected"),
    [
        ("gw0", 2, None, "0,1,2,3"),
        ("gw1", 2, None, "4,5,6,7"),
        ("gw1", 1, 2, "2,3"),
        ("gw3", 4, None, "6,7"),
    ],
)
def test_device_map_gives_each_worker_its_slice(monkeypatch, worker, count, per, expected):
    """-n counts model replicas: with --device-map auto each worker's model spans visible GPUs /
    workers (or --gpus-per-replica) of them, disjoint from the others'."""
    monkeypatch.setenv("PYTEST_XDIST_WORKER", worker)
    monkeypatch.setenv("PYTEST_XDIST_WORKER_COUNT", str(count))
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1,2,3,4,5,6,7")
    config = SimpleNamespace(
        workerinput={"workerid": worker}, stash=stash(device_map="auto", gpus_per_replica=per)
    )
    workers._pin_gpu(config)
    import os

    assert os.environ["CUDA_VISIBLE_DEVICES"] == expected


def test_one_process_with_device_map_takes_the_first_replica(monkeypatch):
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "2,3,4,5")
    config = SimpleNamespace(stash=stash(device_map="auto", gpus_per_replica=2))
    workers._pin_gpu(config)
    import os

    assert os.environ["CUDA_VISIBLE_DEVICES"] == "2,3"


def test_too_many_replicas_for_the_gpus_is_told_the_fix(monkeypatch):
    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw2")
    monkeypatch.setenv("PYTEST_XDIST_WORKER_COUNT", "3")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1,2,3,4,5,6,7")
    config = SimpleNamespace(workerinput={}, stash=stash(device_map="auto", gpus_per_replica=4))
    with pytest.raises(
        pytest.UsageError, match="8 visible, 4 per worker; run with -n 2 or -n auto"
    ):
        workers._pin_gpu(config)


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        ({}, 8),
        ({"device_map": "auto"}, 1),
        ({"device_map": "auto", "gpus_per_replica": "2"}, 4),
        ({"backend": "vllm", "tp": "4"}, 2),
        ({"backend": "openai"}, 8),
    ],
)
def test_auto_workers_count_model_replicas(monkeypatch, options, expected):
    given = {
        "model": "ckpt",
        "backend": "hf",
        **options,
    }  # by dest, as pytest's getoption also takes them
    config = SimpleNamespace(getoption=lambda name, default=None: given.get(name, default))
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1,2,3,4,5,6,7")
    assert workers.pytest_xdist_auto_num_workers(config) == expected
