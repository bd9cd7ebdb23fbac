"""``--ray`` and ``--ray-resource`` as the plan keeps them: the extra's section, read once from its
options and checked against the run's backend."""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ctxgate.api import Get, Option, OptionError

if TYPE_CHECKING:
    from ctxgate.api import ModelSpec

NAME = "ray"
RAY = Option(
    "--ray",
    "run the cases on a Ray cluster, the model as one replica per --ray-resource on its nodes: "
    "the head's ADDRESS (host:port), auto (the cluster this machine belongs to), or local (a "
    "cluster of this machine, for the run); needs pip install 'ctxgate[ray]'; docs/distributed.md",
    metavar="ADDRESS",
)
RAY_RESOURCE = Option(
    "--ray-resource",
    "--ray: the resource each model replica takes one of (default %(default)s), e.g. CPU on nodes "
    "without GPUs",
    default="GPU",
    metavar="NAME",
)


@dataclass(frozen=True)
class RaySettings:
    address: str  # the head's address, auto or local
    resource: str = RAY_RESOURCE.default  # the resource each replica takes one of


def read(get: Get, backend: str) -> RaySettings | None:
    """The section from the options (``get(dest)``); None without ``--ray``."""
    address = RAY.read(get(RAY.dest))
    resource = RAY_RESOURCE.read(get(RAY_RESOURCE.dest))
    if address is None:
        return None
    _check(address, backend)
    return RaySettings(address, resource)


def _check(ray: str, backend: str) -> None:
    if not ray:
        raise OptionError("--ray is empty: give the Ray head's address (host:6379), auto, or local")
    if importlib.util.find_spec("ray") is None:
        raise OptionError(
            f"--ray {ray} needs Ray, which is not installed here: pip install 'ctxgate[ray]'"
        )
    if backend == "openai":
        raise OptionError(
            "--ray with --backend openai: the servers are the replicas; drop --ray and give each "
            "with --base-url"
        )


def of(spec: ModelSpec) -> RaySettings | None:
    """The run's section, as the model's spec carries it (None: no cluster)."""
    found: Any = spec.extras.get(NAME)
    return found if isinstance(found, RaySettings) else None
