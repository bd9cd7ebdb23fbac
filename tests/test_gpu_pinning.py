"""Worker gwN gets GPU N; -n auto means one worker per GPU. (The CUDA side is exercised only on a GPU node.)"""

from types import SimpleNamespace

import pytest

from plugins import workers
from plugins.options import SETTINGS_KEY


def worker_config():
    return SimpleNamespace(workerinput={"workerid": "gw1"}, stash={SETTINGS_KEY: SimpleNamespace(backend="hf")})


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
    monkeypatch.setattr(workers, "_gpu_count", lambda: 0)
    workers._pin_gpu(worker_config())
    import os

    assert "CUDA_VISIBLE_DEVICES" not in os.environ


def test_auto_workers_is_the_gpu_count(monkeypatch):
    config = SimpleNamespace(getoption=lambda name, default=None: "ckpt")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1,2")
    assert workers.pytest_xdist_auto_num_workers(config) == 3
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES")
    monkeypatch.setattr(workers, "_gpu_count", lambda: 0)
    assert workers.pytest_xdist_auto_num_workers(config) is None
