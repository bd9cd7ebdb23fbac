"""The Ray extra's face to the spine, without a cluster: its options read into the plan's section
(carried by the model's spec), its refusals word for word, and the hooks the spine asks (who opens
the backend, whether the run stays in one process, how many probes bisect runs side by side)."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from ctxgate.ext.ray.settings import NAME, RaySettings, of
from ctxgate.gate.plan import make_plan
from ctxgate.run.flags import OptionError
from ctxgate.run.loading import placement
from tests.conftest import TINY


def plan_of(**given: str):
    values = {"model": str(TINY), **given}
    return make_plan(values.get, Path.cwd(), gated=False)


def test_the_section_travels_with_the_spec_and_is_absent_without_ray():
    plan = plan_of(ray="10.1.2.3:6379", ray_resource="fake_gpu")
    assert plan.extras[NAME] == plan.model.extras[NAME] == RaySettings("10.1.2.3:6379", "fake_gpu")
    assert of(plan.model) == RaySettings("10.1.2.3:6379", "fake_gpu")
    assert of(plan_of(ray="auto").model) == RaySettings("auto", "GPU")
    plain = plan_of()
    assert NAME not in plain.extras and of(plain.model) is None
    assert placement(plain.model) is None  # the spine places it: one process, one slot


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ({"ray": ""}, "--ray is empty: give the Ray head's address (host:6379), auto, or local"),
        (
            {"ray": "auto", "backend": "openai", "base_url": ["http://127.0.0.1:1/v1"]},
            "--ray with --backend openai: the servers are the replicas; drop --ray and give each "
            "with --base-url",
        ),
    ],
)
def test_the_refusals_are_word_for_word(given, message):
    pytest.importorskip("ray")
    with pytest.raises(OptionError) as refused:
        plan_of(**given)
    assert str(refused.value) == message


def test_the_run_stays_in_one_process_and_dash_n_is_refused_as_before():
    from ctxgate_plugins.options import one_process

    plan = plan_of(ray="head-node:6379")
    assert f"{one_process(plan)}: drop -n" == (
        "--ray head-node:6379 runs every case from this one pytest process, on the cluster's "
        "replicas: drop -n"
    )


def test_bisect_takes_the_extras_options_as_pytest_does():
    from ctxgate.ext.training.bisect import add_parser

    parser = argparse.ArgumentParser()
    add_parser(parser.add_subparsers())
    args = parser.parse_args(["bisect", "runs", "--ray", "local", "--ray-resource", "CPU"])
    assert (args.ray, args.ray_resource) == ("local", "CPU")
