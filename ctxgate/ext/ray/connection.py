"""Reaching a Ray cluster for ``--ray``: joining the head at an address (asked first whether it
answers, so that a wrong address is one line within seconds), or starting one of this machine
(``--ray local``), and leaving it as it was found."""

from __future__ import annotations

import logging
import os
import signal
import socket
import threading
from typing import Any

from ctxgate.api import Unreachable

LOCAL = "local"  # --ray local: a cluster of this machine, started for the run and stopped with it
# a head that is up accepts a connection at once: no answer in this long is none
GCS_ANSWER_S = 5.0
_connection = threading.Lock()
_users = 0  # pools of this process using the connection it opened (bisect probes run side by side)


# Ray starts its workers at niceness 15, below the driver: the replicas run the model, the run's
# work, and on a busy node would get a sliver of a core each
AT_DRIVER_PRIORITY = {"worker_niceness": 0}


def connect(address: str) -> bool:
    """Join the cluster ``--ray`` names (or start one for ``local``). False when someone else had
    connected this process (and disconnects it); True when the caller must ``disconnect``."""
    import ray

    global _users
    with _connection:
        if _users:
            _users += 1
            return True
        if ray.is_initialized():
            return False
        quiet: dict[str, Any] = {"logging_level": logging.WARNING, "log_to_driver": False}
        # local: a new cluster, never one this machine already runs (RAY_ADDRESS, ray start)
        if address == LOCAL:
            quiet["include_dashboard"] = False
            quiet["_system_config"] = AT_DRIVER_PRIORITY
        # ray.init sets a SIGTERM handler of its own (sys.exit, mid-pytest): the session's goes
        # back, so a signal ends the run as it does without Ray (plugins/signals.py)
        handler = signal.getsignal(signal.SIGTERM)
        # and the driver's crash handler, when it leaves the cluster, sets SIGTERM's default
        # action beneath Python: a second signal while the report is written would end the
        # process. Without it, faulthandler still traces a crash; workers keep theirs.
        from ray._private import ray_constants

        ray_constants.RAY_DISABLE_FAILURE_SIGNAL_HANDLER = True
        head = address if address == LOCAL else _answering(address)
        try:
            ray.init(address=head, **quiet)
        except (ConnectionError, RuntimeError, ValueError) as exc:
            raise Unreachable(
                f"--ray {address}: the Ray cluster there cannot be joined ({first_line(exc)}); "
                "start one with `ray start --head` and pass its address, or pass --ray local for "
                "a cluster of this machine"
            ) from None
        finally:
            if handler is not None and threading.current_thread() is threading.main_thread():
                signal.signal(signal.SIGTERM, handler)
        _users = 1
        return True


def _answering(address: str) -> str:
    """The head's address, resolved as Ray would (``auto``: RAY_ADDRESS, else the cluster ``ray
    start`` started on this machine), once it accepts a connection: Ray itself would retry an
    absent head for many minutes without a word."""
    from ray._private.services import canonicalize_bootstrap_address

    env = os.environ.get("RAY_ADDRESS", "") if address == "auto" else ""
    head = env or address
    try:
        if "://" not in head:  # ray://HOST:PORT: a Ray client server, joined as given
            head = canonicalize_bootstrap_address(head) or head
        host, port = head.split("://")[-1].rsplit(":", 1)
        with socket.create_connection((host.strip("[]"), int(port)), timeout=GCS_ANSWER_S) as s:
            _speaks_grpc(s)
    except (OSError, ValueError) as exc:  # ConnectionError: auto found no cluster here
        said, fix = f"--ray {address}", "pass --ray"
        if env:
            said, fix = f"--ray auto: RAY_ADDRESS={env}", "set RAY_ADDRESS to"
        elif address == "auto":
            said = "--ray auto (RAY_ADDRESS unset: the cluster `ray start` started here)"
        # where Ray would look: the address given, unless Ray resolves it to another
        at = f" at {head}" * (head != (env or address))
        wrong = f"{said}: no Ray cluster answers{at} ({first_line(exc)})"
        if head == "auto":
            wrong = "--ray auto: RAY_ADDRESS is unset and no Ray cluster runs on this machine"
        raise Unreachable(
            f"{wrong}; {fix} the address of a running head (`ray start --head` starts one), or "
            "pass --ray local for a cluster of this machine"
        ) from None
    return head


def _speaks_grpc(s: socket.socket) -> None:
    """A head answers HTTP/2's preface with its SETTINGS frame (gRPC): anything else there (the
    dashboard's HTTP port) Ray would retry as long as nothing at all."""
    if os.environ.get("RAY_USE_TLS", "0").lower() in ("1", "true"):
        return  # TLS first: the frames come after a handshake Ray's own client makes
    s.sendall(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00")
    frame = s.recv(9, socket.MSG_WAITALL)
    if len(frame) < 9 or frame[3] != 4:
        raise ConnectionError(
            "it answers, but not as a Ray head: the head's port is the one `ray start --head` "
            "printed (6379 by default), not the dashboard's"
        )


def disconnect() -> None:
    """The last of this process's pools gone: leave the cluster (and stop it, for --ray local)."""
    import ray

    global _users
    with _connection:
        _users -= 1
        if _users == 0 and ray.is_initialized():
            ray.shutdown()


def slots(address: str, resource: str) -> int:
    """Replicas the cluster holds: one per unit of the resource (bisect probes that many)."""
    import ray

    owned = connect(address)
    try:
        return int(ray.cluster_resources().get(resource, 0))
    finally:
        if owned:
            disconnect()


def first_line(exc: BaseException) -> str:
    """An error's first line (Ray's go on with the remote traceback)."""
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
