"""The suite on a Ray cluster, measured and simulated, in one run.

(a) Measured: the same cases through the suite serially (one process, the model loaded once) and
    with ``--ray`` on
a local two-node cluster (``ray.cluster_utils.Cluster``: a head, and a worker node with a custom
resource standing in for two GPUs, so two replicas), the tiny checkpoint on CPU, no cache. Each is
the suite as users start it, timed from start to exit; the ratio is serial time over cluster time
(above 1: the cluster is faster). On this 2-core machine both replicas share the two cores the
serial run has alone, so the ratio says what the queue and the replicas cost, not what more machines
give.

(b) Simulated at scale: full RULER (13 tasks x 6 lengths, 4K-128K, 500 samples each) for an 8B model
    (Llama-3-8B's
shape), each sample's cost its prefill FLOPs at its length (2 * parameters * tokens for the weights,
plus 2 * layers * width * tokens^2 for causal attention) at one H100's dense bf16 peak. The makespan
on 1, 4 and 16 nodes of 8 GPUs: the suite's dynamic queue (the longest samples first, each to the
first GPU free), static sharding (each GPU an equal contiguous share of the sample list in the order
the cases are listed, as ``datasets.shard(contiguous=True)`` splits it), and the FLOP limit (all the
work spread perfectly).

    python bench/distributed.py [--tasks niah_single_1,vt,cwe] [--lengths 512,1k] [--samples 10]
                                [--skip-measured]
"""

from __future__ import annotations

import heapq
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench import arguments  # noqa: E402

TINY = ROOT / "fixtures" / "tiny-llama-niah"

# Llama-3-8B: parameters, layers, hidden width; one H100 SXM's dense bf16 peak
PARAMS, LAYERS, WIDTH = 8.03e9, 32, 4096
PEAK_FLOPS = 989e12
RULER_TASKS, RULER_LENGTHS, RULER_SAMPLES = 13, (4096, 8192, 16384, 32768, 65536, 131072), 500
GPUS_PER_NODE = 8


def prefill_seconds(tokens: int) -> float:
    return (2 * PARAMS * tokens + 2 * LAYERS * WIDTH * tokens**2) / PEAK_FLOPS


def full_ruler() -> list[float]:
    """Every sample's cost, in the order the suite lists the cases (task by task, lengths
    ascending)."""
    return [
        prefill_seconds(L)
        for _ in range(RULER_TASKS)
        for L in RULER_LENGTHS
        for _ in range(RULER_SAMPLES)
    ]


def dynamic(costs: list[float], gpus: int) -> float:
    """Longest first, each to the GPU that frees first."""
    free = [0.0] * gpus
    for cost in sorted(costs, reverse=True):
        heapq.heappush(free, heapq.heappop(free) + cost)
    return max(free)


def static(costs: list[float], gpus: int) -> float:
    """Each GPU a contiguous share of the list, fixed before the run."""
    share = -(-len(costs) // gpus)
    return max(sum(costs[i : i + share]) for i in range(0, len(costs), share))


def simulate() -> None:
    costs = full_ruler()
    total = sum(costs)
    print(
        f"(b) full RULER for an 8B model: {len(costs):,} samples, {total / 3600:.1f} GPU-hours of "
        "prefill at "
        f"{PEAK_FLOPS / 1e12:.0f} TFLOP/s (one 128K sample {prefill_seconds(131072):.1f} s, one 4K "
        f"{prefill_seconds(4096):.2f} s)"
    )
    print(
        f"{'nodes x GPUs':>13} {'FLOP limit':>11} {'dynamic':>9} {'static':>9} {'dyn/limit':>10} "
        f"{'static/dyn':>11}"
    )
    for nodes in (1, 4, 16):
        gpus = nodes * GPUS_PER_NODE
        limit, dyn, sta = total / gpus, dynamic(costs, gpus), static(costs, gpus)
        print(
            f"{f'{nodes} x {GPUS_PER_NODE}':>13} {limit / 3600:>10.2f}h {dyn / 3600:>8.2f}h "
            f"{sta / 3600:>8.2f}h "
            f"{dyn / limit:>9.3f}x {sta / dyn:>10.2f}x"
        )


def suite(cwd: Path, *args: str) -> float:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0"}
    command = [
        sys.executable,
        "-m",
        "pytest",
        f"--model={TINY}",
        "-p",
        "no:cacheprovider",
        "-q",
        *args,
    ]
    started = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - started
    if done.returncode not in (0, 1):  # 1: a case below its floor is still a measured run
        raise SystemExit(
            f"the suite failed ({done.returncode}): {' '.join(command)}\n{done.stdout[-2000:]}"
        )
    return seconds


def measure(tasks: str, lengths: str, samples: int) -> None:
    # the cluster stays on the loopback address
    os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
    from ray.cluster_utils import Cluster

    selection = (
        "-k",
        " or ".join(tasks.split(",")),
        "--lengths",
        lengths,
        "--samples",
        str(samples),
        "--no-cache",
    )
    count = len(tasks.split(",")) * len(lengths.split(",")) * samples
    cluster = Cluster(
        initialize_head=True, head_node_args={"num_cpus": 1, "node_ip_address": "127.0.0.1"}
    )
    try:
        cluster.add_node(num_cpus=1, resources={"fake_gpu": 2}, node_ip_address="127.0.0.1")
        cluster.wait_for_nodes()
        with tempfile.TemporaryDirectory() as scratch:
            serial = suite(Path(scratch), *selection)
            ray = suite(
                Path(scratch), *selection, "--ray", cluster.address, "--ray-resource", "fake_gpu"
            )
    finally:
        cluster.shutdown()
    print(
        f"(a) {count} samples ({tasks} at {lengths}), the tiny checkpoint on CPU, each run from "
        "start to exit:"
    )
    print(f"    serial (one process)             {serial:7.1f} s  {count / serial:6.2f} samples/s")
    print(f"    --ray, 2 nodes, 2 replicas       {ray:7.1f} s  {count / ray:6.2f} samples/s")
    print(f"    ratio serial / cluster           {serial / ray:7.2f}x")


def parser() -> arguments.Parser:
    ap = arguments.Parser(__file__, description=__doc__.split("\n\n")[0])
    # passed on to the suite's command line as written
    ap.add_argument(
        "--tasks", type=arguments.as_written(arguments.tasks), default="niah_single_1,vt,cwe"
    )
    ap.add_argument("--lengths", type=arguments.as_written(arguments.lengths), default="512,1k")
    ap.add_argument("--samples", type=arguments.whole(1, example=10), default=10)
    ap.add_argument(
        "--skip-measured", action="store_true", help="only the simulation (no Ray needed)"
    )
    return ap


def main(argv: Sequence[str] | None = None) -> None:
    args = parser().parse_args(argv)
    if not args.skip_measured:
        measure(args.tasks, args.lengths, args.samples)
    simulate()


if __name__ == "__main__":
    main()
