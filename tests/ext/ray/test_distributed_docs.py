"""docs/distributed.md's Slurm batch script and KubeRay RayJob: the files users copy are the ones
the page shows, the script is valid bash that starts the head, then the workers, waits for every
GPU, and ends with pytest's exit status (run here with stand-ins for Slurm, Ray and Python), and the
manifest is a RayJob whose pods share the volume its entrypoint reads the checkpoint from and writes
the report to. The pytest options both pass are ones the suite registers."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import ROOT, suite_env

PAGE = ROOT / "docs" / "distributed.md"
SBATCH = ROOT / "docs" / "distributed" / "slurm-ctxgate.sbatch"
RAYJOB = ROOT / "docs" / "distributed" / "rayjob.yaml"
FLAG = re.compile(r"(?<![\w-])(--[a-z][\w-]*)")


# run with pytest's plugins and the suite's loaded: which of the flags (argv[1], JSON) pytest's
# parser does not know
_PROBE = """
import json, sys
import pytest

class Probe:
    parser = None

    def pytest_addoption(self, parser):
        Probe.parser = parser

    @pytest.hookimpl(tryfirst=True)
    def pytest_cmdline_main(self, config):
        unknown = []
        for flag in json.loads(sys.argv[1]):
            try:
                _, rest = Probe.parser.parse_known_and_unknown_args([flag, "out/value"])
            except BaseException:  # known, and refuses the stand-in value
                continue
            if flag in rest:
                unknown.append(flag)
        print(json.dumps(unknown))
        return 0

sys.exit(pytest.main(["-p", "no:cacheprovider"], plugins=[Probe()]))
"""


def unregistered(flags: list[str]) -> list[str]:
    """The flags pytest, with the suite's plugins, does not take (aliases such as --junitxml count
    as taken)."""
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, json.dumps(sorted(set(flags)))],
        cwd=ROOT,
        env=suite_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_the_flag_check_knows_the_suites_options_and_only_those() -> None:
    assert unregistered(
        ["--model", "--ray", "--ray-resource", "--report", "--junitxml", "--no-such-flag"]
    ) == ["--no-such-flag"]


def batch_pytest_line(script: str) -> str:
    """The script's pytest command, its continuation lines joined, up to the ``||`` that keeps its
    status."""
    joined = script.replace("\\\n", " ")
    line = next(x for x in joined.splitlines() if re.search(r"\bpython -m pytest\b", x))
    return line.split("-m pytest", 1)[1].split("||")[0]


def test_the_page_shows_both_files_byte_for_byte() -> None:
    page = PAGE.read_text("utf-8")
    assert f"```sh\n{SBATCH.read_text('utf-8')}```\n" in page
    assert f"```yaml\n{RAYJOB.read_text('utf-8')}```\n" in page


# the Slurm batch script
# --------------------------------------------------------------------------------------------


def test_the_batch_script_is_bash_that_starts_ray_then_runs_the_suite_on_it() -> None:
    assert (
        subprocess.run(["bash", "-n", str(SBATCH)], capture_output=True, text=True).returncode == 0
    )
    script = SBATCH.read_text("utf-8")
    assert script.startswith("#!/bin/bash\n")
    directives = dict(re.findall(r"^#SBATCH (--[\w-]+)=(\S+)", script, flags=re.M))
    assert int(directives["--nodes"]) > 1 and int(directives["--gpus-per-node"]) >= 1
    assert re.findall(r"^GPUS_PER_NODE=(\d+)", script, flags=re.M) == [
        directives["--gpus-per-node"]
    ]
    assert "ray start --head" in script and "ray start --address=" in script and "--block" in script
    assert re.search(r"^trap \w+ EXIT$", script, flags=re.M) and "ray stop" in script
    command = batch_pytest_line(script)
    flags = FLAG.findall(command)
    assert "--ray" in flags and "--model" in flags and "--report" in flags
    assert not unregistered(flags), f"not pytest options: {unregistered(flags)}"
    assert not re.search(r"(?<!\S)-n\b", command)  # refused with --ray


STUBS = {
    # srun -w NODE CMD...: the command as its node would run it (logged); only `hostname` answers,
    # and a node named in DEAD_NODE never starts its step
    "srun": r"""
node=""
while [[ $1 == -* ]]; do if [[ $1 == -w ]]; then node=$2; shift; fi; shift; done
[[ $node == "${DEAD_NODE:-}" ]] && exit 1
echo "srun $node: $*" >> "$LOG"
if [[ $1 == hostname ]]; then echo "10.1.2.3 fe80::1"; fi
""",
    "scontrol": 'echo "scontrol $*" >> "$LOG"; printf "node%s\\n" 1 2 3 4',
    "ray": 'echo "ray $*" >> "$LOG"',
    # the wait's probe sees 8 GPUs per node whose `ray start` ran; python -m pytest exits
    # PYTEST_STATUS
    "python": r"""
if [[ $1 == - ]]; then cat >/dev/null; echo $(( $(grep -c ": ray start" "$LOG") * 8 )); exit 0; fi
echo "python $*" >> "$LOG"
exit "${PYTEST_STATUS:-0}"
""",
    "sleep": "exit 0",
}


def run_batch(
    tmp_path: Path, *args: str, **env: str
) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    """The batch script as Slurm runs it on the first node of a 4-node allocation, Slurm, Ray and
    Python stood in for: its exit status and what each stand-in was asked, in order."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, body in STUBS.items():
        (bin_dir / name).write_text(f"#!/bin/bash\n{body.strip()}\n")
        (bin_dir / name).chmod(0o755)
    log = tmp_path / "log"
    log.touch()
    environ = {k: v for k, v in os.environ.items() if k != "VENV" and not k.startswith("SLURM_")}
    environ.update(
        PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
        LOG=str(log),
        SLURM_JOB_NODELIST="node[1-4]",
        SLURM_JOB_NUM_NODES="4",
        SLURM_CPUS_PER_TASK="32",
        **env,
    )
    work = tmp_path / "submitted-from"
    work.mkdir()
    done = subprocess.run(
        ["bash", str(SBATCH), *args],
        cwd=work,
        env=environ,
        capture_output=True,
        text=True,
        timeout=120,
    )
    return done, log.read_text().splitlines()


@pytest.mark.parametrize("status", [0, 1])
def test_the_batch_script_starts_the_head_then_every_worker_and_ends_with_pytests_status(
    tmp_path, status
) -> None:
    baseline = ("reports/last-good/run.json",) if status else ()
    done, log = run_batch(tmp_path, "/ckpts/step-12000", *baseline, PYTEST_STATUS=str(status))
    assert done.returncode == status, done.stdout + done.stderr
    starts = {
        line.split(":")[0].removeprefix("srun "): line for line in log if ": ray start" in line
    }
    assert set(starts) == {"node1", "node2", "node3", "node4"}
    head = shlex.split(starts.pop("node1").split(": ", 1)[1])
    assert head[:3] == ["ray", "start", "--head"]
    assert {"--port=6379", "--num-gpus=8", "--node-ip-address=10.1.2.3", "--block"} <= set(head)
    for worker in starts.values():
        assert {"--address=10.1.2.3:6379", "--num-gpus=8", "--block"} <= set(
            shlex.split(worker.split(": ", 1)[1])
        )
    (suite,) = [shlex.split(line) for line in log if line.startswith("python -m pytest")]
    given = dict(zip(suite[3::2], suite[4::2]))
    assert given["--model"] == "/ckpts/step-12000" and given["--ray"] == "10.1.2.3:6379"
    assert given["--report"] == "reports/step-12000/run.json"
    assert given.get("--baseline") == (baseline[0] if baseline else None)
    assert (tmp_path / "submitted-from" / "reports" / "step-12000").is_dir()
    assert log.index(next(x for x in log if x.startswith("python -m pytest"))) > max(
        i for i, x in enumerate(log) if ": ray start" in x
    )
    assert log[-1] == "ray stop --force"


def test_the_batch_script_does_not_start_the_suite_on_a_cluster_missing_a_node(tmp_path) -> None:
    """A node whose Ray never joins: the replicas would be placed without its GPUs, so the job fails
    instead."""
    done, log = run_batch(tmp_path, "/ckpts/step-12000", DEAD_NODE="node3")
    assert done.returncode == 1
    assert "has 24 of its 32 GPUs" in done.stderr
    assert not any(line.startswith("python -m pytest") for line in log)
    assert log[-1] == "ray stop --force"


# the KubeRay RayJob
# ------------------------------------------------------------------------------------------------


def mounts(template: dict[str, Any]) -> dict[str, tuple[str, str]]:
    """A pod template's mount paths -> (the claim of the volume mounted there, the subPath)."""
    claims = {
        v["name"]: v["persistentVolumeClaim"]["claimName"]
        for v in template["spec"].get("volumes", [])
        if "persistentVolumeClaim" in v
    }
    (container,) = template["spec"]["containers"]
    return {
        m["mountPath"].rstrip("/"): (claims[m["name"]], m.get("subPath", ""))
        for m in container.get("volumeMounts", [])
        if m["name"] in claims
    }


def on_claim(template: dict[str, Any], path: str) -> tuple[str, str]:
    """Where ``path`` is on a shared volume in this pod: (claim, path within it); fails when it is
    on none."""
    for mount, (claim, sub) in sorted(mounts(template).items(), key=lambda m: -len(m[0])):
        if path == mount or path.startswith(mount + "/"):
            return claim, f"{sub}/{path[len(mount) :].lstrip('/')}".strip("/")
    raise AssertionError(f"{path} is on no persistent volume of the pod")


def test_the_rayjob_runs_the_suite_on_gpu_workers_that_share_the_checkpoint_and_results() -> None:
    job = yaml.safe_load(RAYJOB.read_text("utf-8"))
    assert job["apiVersion"] == "ray.io/v1" and job["kind"] == "RayJob"
    spec = job["spec"]
    assert spec["shutdownAfterJobFinishes"] is True
    steps = [shlex.split(step) for step in spec["entrypoint"].split("&&")]
    (suite,) = [s for s in steps if "pytest" in s]
    assert "--ray auto" in " ".join(suite)
    flags = [a for a in suite if a.startswith("--")]
    assert not unregistered(flags), f"not pytest options: {unregistered(flags)}"
    given = dict(zip(suite, suite[1:]))
    started_in = next((s[1] for s in steps if s[0] == "cd"), None)
    assert started_in, (
        "the entrypoint starts pytest in a folder every pod shares (the replicas resolve paths "
        "there)"
    )

    cluster = spec["rayClusterSpec"]
    head = cluster["headGroupSpec"]["template"]
    workers = [group["template"] for group in cluster["workerGroupSpecs"]]
    assert workers
    for group in cluster["workerGroupSpecs"]:
        (container,) = group["template"]["spec"]["containers"]
        assert int(container["resources"]["limits"]["nvidia.com/gpu"]) >= 1
        assert int(group["replicas"]) >= 1
    images = {c["image"] for t in (head, *workers) for c in t["spec"]["containers"]}
    assert len(images) == 1 and all(images), (
        "one image: the same ctxgate, torch and transformers on every node"
    )
    for path in (given["--model"], given["--report"], started_in):
        assert path.startswith("/")
        where = {on_claim(t, path) for t in (head, *workers)}
        assert len(where) == 1, (
            f"{path} is not the same shared file on the head and the workers: {where}"
        )
