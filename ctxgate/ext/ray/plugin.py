"""``--ray ADDRESS``: the run's cases on a Ray cluster, the model as one replica per
``--ray-resource`` on its nodes (``cluster.py``), seen by the session as one backend. Ray is
imported only with ``--ray``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ctxgate.hookspec import hookimpl
from ctxgate.run.options import Get, OptionGroup

from .settings import NAME, RAY, RAY_RESOURCE, RaySettings, of, read

if TYPE_CHECKING:
    from ctxgate.backends.base import Backend
    from ctxgate.gate.plan import Plan
    from ctxgate.run.loading import ModelSpec, Served


@hookimpl
def ctxgate_option_groups() -> list[OptionGroup]:
    return [
        OptionGroup(
            "ctxgate-ray",
            "ctxgate on a Ray cluster: the model as replicas on its nodes",
            (RAY, RAY_RESOURCE),
            evaluates=True,
        )
    ]


@hookimpl
def ctxgate_plan_section(get: Get, plan: Plan) -> tuple[str, RaySettings] | None:
    section = read(get, plan.model.backend)
    return None if section is None else (NAME, section)


@hookimpl
def ctxgate_places_replicas(spec: ModelSpec) -> str | None:
    ray = of(spec)
    if ray is None:
        return None
    return (
        f"--ray {ray.address} runs every case from this one pytest process, on the cluster's "
        "replicas"
    )


@hookimpl
def ctxgate_model_slots(spec: ModelSpec) -> int | None:
    """A probe per replica the cluster holds, each round."""
    ray = of(spec)
    if ray is None:
        return None
    from .connection import slots

    return slots(ray.address, ray.resource)


@hookimpl
def ctxgate_open_backend(
    spec: ModelSpec, served: Served | None, replicas: int | None
) -> Backend | None:
    if of(spec) is None:
        return None
    from .cluster import RayPool

    return RayPool(spec, served, replicas)
