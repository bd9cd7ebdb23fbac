"""The GPUs this process may use, found in one place for every backend and plugin (worker pinning,
``-n auto``, the vLLM servers' replicas, the engine's dtype), without initializing CUDA in this
process."""

from __future__ import annotations

import os
import shutil
import subprocess


def visible_gpus() -> list[str]:
    """CUDA_VISIBLE_DEVICES when set (``""`` is no GPU, not "unset"), else what nvidia-smi lists."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None:
        return [d.strip() for d in visible.split(",") if d.strip()]
    return [str(i) for i in range(gpu_count())]


def gpu_count() -> int:
    if not shutil.which("nvidia-smi"):
        return 0
    try:
        out = subprocess.run(
            ["nvidia-smi", "-L"], capture_output=True, text=True, timeout=20, check=False
        ).stdout
    except (OSError, subprocess.TimeoutExpired):
        return 0
    return sum(1 for line in out.splitlines() if line.startswith("GPU "))
