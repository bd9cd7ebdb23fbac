"""``--ray ADDRESS``: the run's cases on a Ray cluster, the model as one replica per
``--ray-resource`` on its nodes (``cluster.py``), seen by the session as one backend. Ray is
imported only with ``--ray``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ctxgate.api import Get, OptionGroup, Placement, hookimpl

from .settings import NAME, RAY, RAY_RESOURCE, RaySettings, of, read

if TYPE_CHECKING:
    from ctxgate.api import Backend, ModelSpec, Plan, Served


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
def ctxgate_placement(spec: ModelSpec) -> Placement | None:
    """The model as replicas on the cluster's nodes: every case runs from this one pytest
    process; bisect probes a checkpoint per replica the cluster holds, each round."""
    ray = of(spec)
    if ray is None:
        return None

    def slots() -> int:
        from .connection import slots

        return slots(ray.address, ray.resource)

    def open_pool(served: Served | None, replicas: int | None) -> Backend:
        from .cluster import RayPool

        return RayPool(spec, served, replicas)

    why = f"--ray {ray.address} runs every case from this one pytest process, on the cluster's "
    return Placement(why + "replicas", slots, open_pool)
