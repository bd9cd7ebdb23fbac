"""``ctxgate watch RUN_DIR``: evaluate each new checkpoint a training run writes, and keep a trend up to date.

A checkpoint counts as written once it has ``config.json`` and weights and no file in it changed for
``--settle`` seconds (trainers write shards one by one). Each is evaluated by running the suite in a subprocess
(``pytest --model CKPT ... --report REPORTS/<name>.json``), so a crash in one evaluation never stops the watcher;
the state file records what was done, so a restarted watcher picks up where it stopped.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from ctxgate.bisect import step_of


def ready(path: Path, settle: float) -> bool:
    files = [f for f in path.rglob("*") if f.is_file()]
    has_weights = any(f.suffix in (".safetensors", ".bin") for f in files)
    if not (path / "config.json").is_file() or not has_weights:
        return False
    return time.time() - max(f.stat().st_mtime for f in files) >= settle


def pending(run_dir: Path, done: set[str], settle: float) -> list[Path]:
    found = [p for p in run_dir.iterdir() if p.is_dir() and p.name not in done and ready(p, settle)]
    return sorted(found, key=step_of)


def evaluate(checkpoint: Path, reports: Path, pytest_args: Sequence[str]) -> int:
    report = reports / f"{checkpoint.name}.json"
    cmd = [sys.executable, "-m", "pytest", "--model", str(checkpoint), "--report", str(report), *pytest_args]
    print("ctxgate watch:", " ".join(cmd), flush=True)
    return subprocess.call(cmd)


def watch(run_dir: str | Path, reports: str | Path, pytest_args: Sequence[str], interval: float = 60.0,
          settle: float = 30.0, once: bool = False, trend_dir: str | Path | None = None) -> None:
    from ctxgate.trend import trend

    run, out = Path(run_dir), Path(reports)
    out.mkdir(parents=True, exist_ok=True)
    state = out / "watch-state.json"
    done = set(json.loads(state.read_text())["done"]) if state.exists() else set()
    while True:
        for ckpt in pending(run, done, settle):
            code = evaluate(ckpt, out, pytest_args)
            done.add(ckpt.name)
            state.write_text(json.dumps({"done": sorted(done), "last": ckpt.name, "exit_code": code}))
            made = sorted(out.glob("*.json"))
            made = [p for p in made if p.name != "watch-state.json"]
            if made:
                trend(made, trend_dir or out / "trend")
        if once:
            return
        time.sleep(interval)
