"""What to evaluate (``ModelSpec``, the checkpoint and how it is served and run) and its backend
loaded in this process. ``run/compose.py`` and a cluster replica both load a checkpoint through
``load_backend``. For ``--backend openai`` (servers the user runs) and ``vllm`` (servers the suite
starts), ``read_engine`` checks the engine's options into the plan's ``EngineSettings``; ``served``
turns them, and the servers started, into what a backend sends to."""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, cast

from ctxgate.backends.base import Backend, engine_dtype
from ctxgate.backends.devices import visible_gpus
from ctxgate.backends.formats import Checkpoint, locate
from ctxgate.backends.model_config import ConfigChanges
from ctxgate.backends.servers import OPENAI_CONCURRENCY, EndpointSettings
from ctxgate.backends.vllm_server import EngineSpec, engine_batch
from ctxgate.hooks import hook, one_answer
from ctxgate.judge.client import JudgeSettings
from ctxgate.refusal import CtxgateError, Unreachable
from ctxgate.run import options as opt
from ctxgate.run.flags import OptionError


@dataclass(frozen=True)
class Served:
    """``--backend openai``/``vllm`` as this process sends to it, made at run time from the plan's
    engine settings (``served``): servers the suite starts are not in the plan. ``engine``:
    what the suite knows of vllm's numerics (dtype, tensor parallel, arguments)."""

    endpoint: EndpointSettings
    tokenizer: str
    server_logs: tuple[str, ...] = ()
    engine: Mapping[str, Any] = field(default_factory=dict)
    # a backend that places its own replicas (``Placement``): the server each replica starts on
    # its node, but for its GPUs
    launch: EngineSpec | None = None
    launch_timeout_s: float = 900.0


@dataclass(frozen=True)
class ModelSpec:
    """What to evaluate and how, resolved once (``gate/plan.py``): ``model`` as the user gave it,
    and the checkpoint it names, located and checked (hf and vllm: always; openai: where --model is
    its folder; MODULE:FACTORY: never). Other fields default as the option table does."""

    model: str
    checkpoint: Checkpoint | None = None
    backend: str = "hf"  # hf | openai | vllm, or MODULE:FACTORY (``factory_of``)
    dtype: str = "auto"
    trust_remote_code: bool = False
    allow_pickle: bool = False
    allow_weight_mismatch: bool = False
    ignore_remote_code: bool = False
    batch_size: int | None = None  # hf: None is auto (1 on CPU)
    device_map: str | None = None
    gpus_per_replica: int | None = None  # hf with device_map auto: GPUs each worker's model spans
    chat_template: str = "task"
    seed: int = 42
    haystack: str | None = None
    squad: str | None = None
    hotpotqa: str | None = None
    data_dir: str | None = None
    helmet_compat: bool = False
    helmet_tokenizer: str | None = None
    cache_dir: str | None = None
    judge: JudgeSettings | None = None
    nli_model: str | None = None
    judge_max_failure_rate: float = 0.05
    # a reasoning model: what it is asked to think (``--thinking``), and the tokens of thought
    # before each answer (``--thinking-budget``; None: thought and answer share the task's budget)
    thinking: str = "default"
    thinking_budget: int | None = None
    # the extras' sections of the plan (``Plan.extras``), with the spec wherever it goes: a
    # cluster's replicas and bisect's probes open the model by them (a checkpoint kind's options,
    # the changes to its config)
    extras: Mapping[str, Any] = field(default_factory=dict)

    def locate(self, folder: str | Path) -> Checkpoint:
        """The checkpoint in ``folder`` as these options open it, or CheckpointError / WrongFlag."""
        return locate(
            Path(folder),
            trust_remote_code=self.trust_remote_code,
            ignore_remote_code=self.ignore_remote_code,
            allow_pickle=self.allow_pickle,
            extras=self.extras,
        )

    def at(self, folder: str | Path) -> ModelSpec:
        """The same evaluation of another checkpoint (bisect's and watch's each)."""
        return replace(self, model=str(folder), checkpoint=self.locate(folder))


class ModelError(CtxgateError, RuntimeError):
    """The model cannot be evaluated: ``what`` failed (loading, tokenizer, chat template, judge).
    ``checkpoint``: the checkpoint's own files are at fault (bisect and watch skip it), not what
    else the run needs (a cluster, a server, the judge), which a later try may find."""

    def __init__(self, what: str, cause: BaseException, checkpoint: bool = True) -> None:
        super().__init__(f"{what}: {cause}")
        self.what, self.cause = what, cause
        self.checkpoint = checkpoint and not _elsewhere(cause)


def _elsewhere(cause: BaseException) -> bool:
    """What else the run needs failed (a cluster, a library, the device's memory), not the
    checkpoint's files: a later try, or a smaller batch, may succeed."""
    memory = type(cause).__name__ == "OutOfMemoryError"  # torch's, without importing torch
    return memory or isinstance(cause, (Unreachable, ImportError, MemoryError))


@dataclass(frozen=True)
class Placement:
    """A backend an extra opens in place of the spine's, placing the model's replicas itself (a
    cluster's, ``hookspec.ctxgate_placement``): ``why`` the run stays in one pytest process (``-n``
    is refused with it; no vLLM server is started for the session, each replica starts its own from
    ``Served.launch``; the cases run longest first), ``slots()``: the copies of the model it holds
    (``ctxgate bisect`` probes that many checkpoints side by side), ``open(served, replicas)``: the
    backend, on at most ``replicas`` copies (None: as many as it has room for)."""

    why: str
    slots: Callable[[], int]
    open: Callable[[Served | None, int | None], Backend]


def placement(spec: ModelSpec) -> Placement | None:
    """The extra's placement of ``spec``'s model, if one places it; None: the spine loads it."""
    found: Placement | None = one_answer("ctxgate_placement", hook().ctxgate_placement(spec=spec))
    return found


def open_backend(
    spec: ModelSpec, served: Served | None = None, replicas: int | None = None
) -> Backend:
    """The backend ``spec`` names, sending to ``served`` (--backend openai/vllm), on at most
    ``replicas`` copies where an extra places it (a cluster's, each replica loading it through
    load_backend as this process would). Raises ModelError."""
    try:
        placed = placement(spec)
        return load_backend(spec, served) if placed is None else placed.open(served, replicas)
    except Exception as exc:  # noqa: BLE001 - reported in one line, whatever it is
        # a server's failure is the server's: this process opened no file of the checkpoint
        raise ModelError(
            f"the model {spec.model!r} could not be loaded", exc, served is None
        ) from exc


def threads_per_worker() -> int | None:
    """The cores shared out among the xdist workers, unless OMP_NUM_THREADS says otherwise."""
    if os.environ.get("OMP_NUM_THREADS"):
        return None
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    return max(1, (os.cpu_count() or 1) // workers)


def factory_of(backend: str) -> Callable[[ModelSpec], Backend]:
    """``--backend MODULE:FACTORY``: the callable that makes one's own backend from the spec."""
    module, _, name = backend.partition(":")
    try:
        found = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError) as exc:
        raise CtxgateError(
            f"--backend {backend!r} is not hf, vllm, openai or an importable MODULE:FACTORY "
            f"({exc}): e.g. --backend hf, or --backend mypackage.engine:MyBackend with mypackage "
            "on the path"
        ) from None
    if not callable(found):
        raise CtxgateError(
            f"--backend {backend!r}: {name} is not callable: name a class or function of {module}"
        )
    return cast(Callable[[ModelSpec], Backend], found)


def load_backend(spec: ModelSpec, served: Served | None = None) -> Backend:
    """The backend in this process: the checkpoint, the servers in ``served``, or one's own."""
    if ":" in spec.backend:
        return factory_of(spec.backend)(spec)
    if spec.backend in ("openai", "vllm"):
        assert served is not None, "--backend openai/vllm needs its servers"
        return _endpoint_backend(spec, served)
    from ctxgate.backends.hf import HFBackend, HFSettings

    assert spec.checkpoint is not None, "--backend hf loads a located checkpoint"
    settings = HFSettings(
        dtype=spec.dtype,
        trust_remote_code=spec.trust_remote_code,
        allow_pickle=spec.allow_pickle,
        threads=threads_per_worker(),
        batch_size=spec.batch_size,
        device_map=spec.device_map,
        allow_weight_mismatch=spec.allow_weight_mismatch,
        config=config_changes(spec, spec.checkpoint.config_dir),
    )
    return HFBackend(spec.checkpoint, settings)


def config_changes(spec: ModelSpec, config_dir: str | Path) -> ConfigChanges | None:
    """What the extras change in ``config_dir``'s config.json for ``spec``, checked against it
    (``hookspec.ctxgate_config_changes``; a refusal is a CtxgateError); None: nothing."""
    found: ConfigChanges | None = one_answer(
        "ctxgate_config_changes",
        hook().ctxgate_config_changes(spec=spec, config_dir=Path(config_dir)),
    )
    return found


def model_changes(spec: ModelSpec) -> dict[str, Any]:
    """What the extras change in the model past its checkpoint's files, as asked
    (``hookspec.ctxgate_model_changes``): in its fingerprint and the run's ``model_overrides``."""
    changes: dict[str, Any] = {}
    for answer in hook().ctxgate_model_changes(spec=spec):
        changes |= answer
    return changes


def _endpoint_backend(spec: ModelSpec, served: Served) -> Backend:
    import transformers

    from ctxgate.backends.endpoint import EndpointBackend
    from ctxgate.backends.servers import Known
    from ctxgate.backends.vllm_server import VLLMServer

    tokenizer = transformers.AutoTokenizer.from_pretrained(
        served.tokenizer, trust_remote_code=spec.trust_remote_code
    )
    logs = [Path(p) for p in served.server_logs]

    def server_log() -> str:  # --backend vllm: what the server said before it went away
        return "; ".join(VLLMServer.tail_of(p) for p in logs)

    local = local_fingerprint(spec) if spec.checkpoint else None
    # the window the extras' changes give: a server you run must have been started with them (vLLM
    # derives its max model length from them); the suite's own servers were
    config_dir = spec.checkpoint.config_dir if spec.checkpoint else served.tokenizer
    changes = config_changes(spec, config_dir)
    known = Known(
        spec.backend,
        server_log if logs else None,
        local,
        dict(served.engine),
        changes if spec.backend == "openai" else None,
    )
    return EndpointBackend(served.endpoint, tokenizer, served.tokenizer, known)


def local_fingerprint(spec: ModelSpec) -> dict[str, Any] | None:
    """The located checkpoint's fingerprint, with what the extras change in the model; None
    without one."""
    from ctxgate.backends.fingerprint import with_changes

    if spec.checkpoint is None:
        return None
    return with_changes(spec.checkpoint.fingerprint(), model_changes(spec))


@dataclass(frozen=True)
class EngineSettings:
    """Where requests go and how: the engine options (``run/options.ENGINE``) as read."""

    base_urls: tuple[str, ...] = ()
    tokenizer: str | None = None
    served_model: str | None = None
    endpoint_api: str = opt.ENDPOINT_API.default
    api_key_env: str = opt.API_KEY_ENV.default
    concurrency: int = OPENAI_CONCURRENCY
    # concurrency is the engine's batch (no --concurrency), shared by a server's workers
    fills_batch: bool = False
    request_timeout: float = opt.REQUEST_TIMEOUT.default
    request_retries: int = opt.REQUEST_RETRIES.default
    no_shared_first: bool = False
    tp: int = opt.TP.default
    vllm_python: str | None = None
    vllm_args: tuple[str, ...] = ()
    vllm_start_timeout: float = opt.VLLM_START_TIMEOUT.default


def read_engine(
    values: Mapping[str, Any], backend: str, chat_template: str, tokenizer: str | None
) -> EngineSettings:
    """The engine options (``values`` by dest) checked against the run's backend and chat setting
    (one OptionError); ``tokenizer``: the located checkpoint's, unless --tokenizer is given."""
    urls = values[opt.BASE_URL.dest] or ()
    if urls and backend != "openai":
        raise OptionError(
            "--base-url is for --backend openai (a server you run); with --backend vllm the "
            "suite starts its own"
        )
    if backend == "openai" and not urls:
        raise OptionError(
            "--backend openai needs --base-url URL (repeat it for replicas), e.g. --base-url "
            "http://127.0.0.1:8000/v1"
        )
    api = values[opt.ENDPOINT_API.dest]
    if api == "chat" and backend != "openai":
        raise OptionError("--endpoint-api chat is for --backend openai (a server you run)")
    if api == "chat" and chat_template == "off":
        raise OptionError(
            "--endpoint-api chat sends user messages, which the server wraps: drop "
            "--chat-template off"
        )
    vllm_args = values[opt.VLLM_ARG.dest] or ()
    try:
        batch = engine_batch(vllm_args)
    except ValueError as exc:
        raise OptionError(str(exc)) from None
    concurrency = values[opt.CONCURRENCY.dest]
    # settings named as their option's dest, taken as read
    same = (
        "served_model endpoint_api api_key_env request_timeout request_retries no_shared_first tp "
        "vllm_python"
    )
    return EngineSettings(
        base_urls=urls,
        tokenizer=values[opt.TOKENIZER.dest] or tokenizer,
        concurrency=concurrency or (batch if backend == "vllm" else OPENAI_CONCURRENCY),
        fills_batch=concurrency is None and backend == "vllm",
        vllm_args=vllm_args,
        vllm_start_timeout=values[opt.VLLM_START_TIMEOUT.dest],
        **{dest: values[dest] for dest in same.split()},
    )


def served(
    engine: EngineSettings,
    spec: ModelSpec,
    base_urls: tuple[str, ...] | None = None,
    server_logs: tuple[str, ...] = (),
    launch: EngineSpec | None = None,
    concurrency: int | None = None,
) -> Served:
    """What the backend sends to (``load_backend``): the settings' servers or those started for the
    run (``base_urls``, with their logs; a cluster's replicas start their own from ``launch``), with
    the numerics of the suite's own (vllm). ``concurrency``: an xdist worker's share of a batch."""
    assert engine.tokenizer is not None, "the plan resolves the servers' tokenizer"
    endpoint = EndpointSettings(
        engine.base_urls if base_urls is None else base_urls,
        engine.served_model,
        concurrency or engine.concurrency,
        engine.request_timeout,
        max_retries=engine.request_retries,
        key_env=engine.api_key_env,
        api=engine.endpoint_api,
        shared_first=not engine.no_shared_first,
    )
    numerics: dict[str, Any] = {}
    if spec.backend == "vllm":
        numerics = {
            "dtype": engine_dtype(spec.dtype, bool(visible_gpus())),
            "tensor_parallel": engine.tp,
            "vllm_args": list(engine.vllm_args),
        }
        if spec.checkpoint and spec.checkpoint.served_as:
            numerics["served_as"] = spec.checkpoint.served_as
    return Served(
        endpoint, engine.tokenizer, server_logs, numerics, launch, engine.vllm_start_timeout
    )
