"""``CtxgateCallback``: a Hugging Face ``TrainerCallback`` that starts ``ctxgate watch`` on the
run's output folder when training begins (never pausing training; docs/training.md), and tells it to
finish what is saved and exit when training ends."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from transformers import TrainerCallback

ENDED = ".training-ended"


class CtxgateCallback(TrainerCallback):
    def __init__(
        self,
        pytest_args: Sequence[str] = (),
        *,
        watch_args: Sequence[str] = (),
        log_to: Sequence[str] = (),
        reports: str | os.PathLike[str] | None = None,
        wait_at_end: bool = False,
        devices: str | None = None,
    ) -> None:
        """``pytest_args``: the suite's, after ``--``; ``watch_args``: ``ctxgate watch``'s own
        options before it (``["--interval", "120", "--settle", "30"]``; none: its defaults);
        ``reports``: default ``OUTPUT_DIR/ctxgate``; ``devices``: the watcher's GPUs."""
        self.pytest_args = list(pytest_args)
        self.watch_args = list(watch_args)
        self.log_to = list(log_to)
        self.reports = Path(reports) if reports else None
        self.wait_at_end, self.devices = wait_at_end, devices
        self.process: subprocess.Popen[bytes] | None = None
        self.ended: Path | None = None

    def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if not state.is_world_process_zero or self.process is not None:
            return
        run_dir = Path(args.output_dir)
        reports = self.reports or run_dir / "ctxgate"
        reports.mkdir(parents=True, exist_ok=True)
        self.ended = reports / ENDED
        self.ended.unlink(missing_ok=True)
        command = [sys.executable, "-m", "ctxgate.cli", "watch", str(run_dir)]
        command += ["--reports", str(reports), "--until", str(self.ended), *self.watch_args]
        command += ["--", *self.pytest_args, *self._tracker_args(args)]
        env = self._tracker_env()
        with (reports / "watch.log").open("ab") as log:
            self.process = subprocess.Popen(
                command, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True
            )

    def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if self.process is None or self.ended is None:
            return
        self.ended.touch()
        if self.wait_at_end:
            self.process.wait()

    def _tracker_args(self, args: Any) -> list[str]:
        """TensorBoard without a folder: a run beside the Trainer's events, on one step axis."""
        out = []
        for target in self.log_to:
            if target == "tensorboard":
                base = getattr(args, "logging_dir", None) or os.getenv("TENSORBOARD_LOGGING_DIR")
                folder = Path(base) if base else Path(args.output_dir) / "runs"
                target = f"tensorboard={folder / 'ctxgate'}"
            out += ["--log-to", target]
        return out

    def _tracker_env(self) -> dict[str, str]:
        """The training's own runs, where the trackers' libraries are loaded and have one."""
        env = dict(os.environ)
        if self.devices is not None:
            env["CUDA_VISIBLE_DEVICES"] = self.devices
        run = getattr(sys.modules.get("wandb"), "run", None)
        if run is not None:
            env.setdefault("WANDB_RUN_ID", str(run.id))
            env.setdefault("WANDB_PROJECT", str(run.project))
        mlflow: Any = sys.modules.get("mlflow")
        active = mlflow.active_run() if hasattr(mlflow, "active_run") else None
        if active is not None:
            env.setdefault("MLFLOW_RUN_ID", str(active.info.run_id))
            env.setdefault("MLFLOW_TRACKING_URI", str(mlflow.get_tracking_uri()))
        return env
