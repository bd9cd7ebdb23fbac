"""The suite's own vLLM engines for ``--backend vllm``: one OpenAI-compatible server process per
replica, not vLLM's in-process engine: vLLM pins its own torch and transformers, so it lives in its
own virtualenv (``scripts/vllm_env.sh``); one server serves every xdist worker; and ``--backend
vllm`` is then ``--backend openai`` through the same tested client. A server dies with the process
that started it (Linux ``PR_SET_PDEATHSIG``), so none is left holding GPU memory."""

from __future__ import annotations

import contextlib
import math
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import psutil

from ctxgate.backends.base import engine_dtype, kv_bytes_per_token
from ctxgate.refusal import CtxgateError

ENV_PYTHON = "CTXGATE_VLLM_PYTHON"
VENV = ".venv-vllm"  # what scripts/vllm_env.sh creates
# The engine's batch (vLLM's --max-num-seqs) unless --vllm-arg sets one: vLLM's own default depends
# on the hardware, and the batch and the requests kept in flight to fill it must be one number.
ENGINE_BATCH = 256
# the argument that turns off the prefix cache the suite starts its servers with
NO_PREFIX_CACHE = "--no-enable-prefix-caching"


class EngineError(CtxgateError, RuntimeError):
    """A vLLM server could not be started or died; the message has the tail of its log."""


def find_python(explicit: str | None, roots: Sequence[Path]) -> str:
    """--vllm-python, else $CTXGATE_VLLM_PYTHON, else a .venv-vllm, else this python with vLLM."""
    import importlib.util

    candidates = [explicit, os.environ.get(ENV_PYTHON)] + [
        str(r / VENV / "bin" / "python") for r in roots
    ]
    for c in candidates:
        if c and Path(c).is_file():
            return c
        if c and c in (explicit, os.environ.get(ENV_PYTHON)):
            raise EngineError(
                f"the vLLM python {c!r} does not exist: pass --vllm-python PATH or run "
                "scripts/vllm_env.sh"
            )
    if importlib.util.find_spec("vllm") is not None:
        return sys.executable
    raise EngineError(
        "--backend vllm needs vLLM: run `bash scripts/vllm_env.sh` (a .venv-vllm beside the "
        "suite), or pass --vllm-python PATH to a python that has it (on a GPU node: pip install "
        "vllm)"
    )


def replica_devices(visible: Sequence[str], tensor_parallel: int) -> list[tuple[str, ...] | None]:
    """GPUs grouped ``tensor_parallel`` at a time, one group per replica (no GPU: one replica)."""
    if not visible:
        return [None]
    if len(visible) < tensor_parallel:
        raise EngineError(
            f"--tp {tensor_parallel} needs {tensor_parallel} GPUs; {len(visible)} visible"
        )
    count = len(visible) // tensor_parallel
    return [tuple(visible[i * tensor_parallel : (i + 1) * tensor_parallel]) for i in range(count)]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _die_with_parent() -> None:  # pragma: no cover - runs in the child, before exec
    os.setsid()
    # not Linux: the controller's teardown is the only stop
    with contextlib.suppress(OSError, AttributeError):
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


KV_SPACE_ENV = "VLLM_CPU_KVCACHE_SPACE"  # GiB of KV cache a CPU server allocates at start
# over one full-length sequence: vLLM's block rounding, and a second request's prefix
KV_MARGIN = 1.25


def engine_batch(vllm_args: Sequence[str]) -> int:
    """The batch a server runs with these extra arguments (--max-num-seqs, or ENGINE_BATCH)."""
    value = _batch_arg(vllm_args)
    if value is None:
        return ENGINE_BATCH
    if not value.isdigit() or int(value) < 1:
        raise ValueError(
            f"--vllm-arg --max-num-seqs {value!r} is not a positive whole number: e.g. "
            "--max-num-seqs=256"
        )
    return int(value)


def _batch_arg(vllm_args: Sequence[str]) -> str | None:
    """The last value the arguments give ``--max-num-seqs`` (as vLLM reads them), else None."""
    value = None
    for i, arg in enumerate(vllm_args):
        if arg == "--max-num-seqs":
            value = vllm_args[i + 1] if i + 1 < len(vllm_args) else ""
        elif arg.startswith("--max-num-seqs="):
            value = arg.split("=", 1)[1]
    return value


def kv_bytes_of(model_dir: str, element_size: int) -> int | None:
    """``kv_bytes_per_token`` from the folder's config.json; None when it does not say."""
    from ctxgate.backends.checkpoint import read_json

    try:  # a CheckpointError is a ValueError
        return kv_bytes_per_token(read_json(Path(model_dir) / "config.json"), element_size)
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def cpu_kv_cache_gib(spec: EngineSpec) -> int:
    """Whole GiB (at least 1) for one sequence of ``max_model_len`` tokens, which a CPU server must
    hold to start; more than the free memory is refused here rather than by the OOM killer."""
    per_token = kv_bytes_of(
        spec.model_dir, 2 if spec.resolved_dtype in ("bfloat16", "float16") else 4
    )
    if per_token is None:
        return 1
    need = max(1, math.ceil(spec.max_model_len * per_token * KV_MARGIN / 2**30))
    free = psutil.virtual_memory().available / 2**30
    if need > 0.8 * free:
        raise EngineError(
            f"a vLLM server on the CPU for {spec.model_dir} needs a {need} GiB KV cache for "
            f"{spec.max_model_len} tokens, and {free:.1f} GiB is free: use shorter --lengths, or "
            f"set {KV_SPACE_ENV} (GiB) yourself"
        )
    return need


@dataclass(frozen=True)
class EngineSpec:
    python: str
    model_dir: str
    max_model_len: int
    tensor_parallel: int = 1
    devices: tuple[str, ...] | None = None  # CUDA devices for this replica; None: CPU
    dtype: str = "auto"  # auto: bfloat16 on GPU, float32 on CPU
    extra_args: tuple[str, ...] = ()
    hf_overrides: str | None = None  # JSON: config changes (--rope-scaling, --model-override)

    @property
    def resolved_dtype(self) -> str:
        return engine_dtype(self.dtype, bool(self.devices))

    def command(self, port: int) -> list[str]:
        cmd = [self.python, "-m", "vllm.entrypoints.openai.api_server", "--model", self.model_dir]
        cmd += ["--host", "127.0.0.1", "--port", str(port), "--dtype", self.resolved_dtype]
        cmd += ["--max-model-len", str(self.max_model_len), "--enable-prefix-caching"]
        # its usage then says how many prompt tokens the prefix cache served (the cost line's split)
        cmd.append("--enable-prompt-tokens-details")
        cmd += ["--tensor-parallel-size", str(self.tensor_parallel)]
        # vLLM's own defaults: no sampling settings from the checkpoint
        cmd += ["--generation-config", "vllm"]
        if _batch_arg(self.extra_args) is None:  # else the extra arguments set it
            cmd += ["--max-num-seqs", str(ENGINE_BATCH)]
        if self.hf_overrides:
            cmd += ["--hf-overrides", self.hf_overrides]
        if not self.devices:
            cmd.append("--enforce-eager")  # CPU: no graph capture to wait for
        return cmd + list(self.extra_args)


class VLLMServer:
    def __init__(self, spec: EngineSpec, log_path: Path) -> None:
        self.spec = spec
        self.log_path = log_path
        self.port = _free_port()
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> None:
        env = dict(os.environ)
        if self.spec.devices:
            env["CUDA_VISIBLE_DEVICES"] = ",".join(self.spec.devices)
        elif KV_SPACE_ENV not in env:  # vLLM's CPU default takes a large share of RAM
            env[KV_SPACE_ENV] = str(cpu_kv_cache_gib(self.spec))
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with self.log_path.open("wb") as log:
            self.proc = subprocess.Popen(
                self.spec.command(self.port),
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=env,
                preexec_fn=_die_with_parent,
            )

    def wait_ready(self, timeout_s: float) -> None:
        import urllib.error
        import urllib.request

        deadline = time.monotonic() + timeout_s
        health = self.url.removesuffix("/v1") + "/health"
        while time.monotonic() < deadline:
            if self.proc is not None and (code := self.proc.poll()) is not None:
                raise EngineError(
                    f"the vLLM server for {self.spec.model_dir} exited with code {code} while "
                    f"starting. {self.tail_of(self.log_path)}"
                )
            with contextlib.suppress(urllib.error.URLError, OSError):
                with urllib.request.urlopen(health, timeout=2) as resp:
                    if resp.status == 200:
                        return
            time.sleep(0.5)
        self.stop()
        raise EngineError(
            f"the vLLM server for {self.spec.model_dir} was not ready after {timeout_s:.0f} s "
            f"(--vllm-start-timeout). {self.tail_of(self.log_path)}"
        )

    @staticmethod
    def tail_of(path: Path, lines: int = 15) -> str:
        try:
            text = path.read_text("utf-8", errors="replace").splitlines()[-lines:]
        except OSError:
            return f"(no log at {path})"
        return f"Last lines of {path}:\n" + "\n".join(text)

    def stop(self) -> None:
        """SIGTERM to the server's process group and every descendant (an engine may leave the
        group), SIGKILL after 20 s; returns when none is alive (psutil checks creation times, so a
        recycled PID is never hit)."""
        if self.proc is None:
            return
        try:
            leader = psutil.Process(self.proc.pid)
            family = [leader, *leader.children(recursive=True)]
        except psutil.NoSuchProcess:
            family = []
        for sig, wait in ((signal.SIGTERM, 20.0), (signal.SIGKILL, 10.0)):
            # not yet reaped: its PID, which names the group, cannot be reused
            if self.proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.proc.pid, sig)  # the API server and its engine processes
            for process in family:
                with contextlib.suppress(psutil.NoSuchProcess):
                    process.send_signal(sig)
            # the leader is reaped below, not waited on
            family = [p for p in family if p.pid != self.proc.pid]
            _, alive = psutil.wait_procs(family, timeout=wait)
            if self.proc.poll() is None:
                try:
                    self.proc.wait(timeout=wait)
                except subprocess.TimeoutExpired:
                    continue
            if not alive:
                break
            family = alive


def start_all(specs: Sequence[EngineSpec], log_dir: Path, timeout_s: float) -> list[VLLMServer]:
    """Start every replica at once and wait for all; on a failure, stop them all and raise."""
    servers = [VLLMServer(spec, log_dir / f"vllm-{i}.log") for i, spec in enumerate(specs)]
    try:
        for server in servers:
            server.start()
        for server in servers:
            server.wait_ready(timeout_s)
    except BaseException:
        for server in servers:
            server.stop()
        raise
    return servers
