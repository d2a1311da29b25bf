"""Join a running lab cluster as a driver (the console's side): token on, quiet, one connection per process."""

from __future__ import annotations

import socket
import sys
import threading
from typing import Any

from console.cluster import ClusterError, auth, available, require_ray

NAMESPACE = "labconsole"
_lock = threading.Lock()
_address: str | None = None
REACH_TIMEOUT_S = 5.0


def connect(address: str) -> Any:
    """Connect this process to the cluster at `address` (HOST:PORT, or "auto"); returns the ray module.

    Raises ClusterUnavailable without the extra, ClusterError without a token or when the cluster refuses us.
    """
    global _address
    if not available():
        require_ray()  # raises ClusterUnavailable with the install command, before any talk of tokens
    imported_before = "ray" in sys.modules
    auth.require_token()  # before importing ray: it reads RAY_AUTH_MODE when it starts
    if _address != address:
        check_reachable(address)  # ray.init waits minutes on an address nothing answers at
    ray = require_ray()
    if imported_before:  # Ray read its configuration already: have it read RAY_AUTH_MODE=token again
        from ray._raylet import Config

        Config.initialize("")
    with _lock:
        if ray.is_initialized():
            if _address in (None, address):
                return ray
            ray.shutdown()
        try:
            ray.init(address=address, namespace=NAMESPACE, log_to_driver=False, logging_level="WARNING",
                     configure_logging=True)
        except Exception as exc:  # noqa: BLE001 — Ray raises ConnectionError, RuntimeError, AuthenticationError …
            raise ClusterError(auth.redact(
                f"could not join the Ray cluster at {address}: {type(exc).__name__}: {exc}. Check the address "
                "(the head prints it at `labconsole node start --head`) and that this machine has the same "
                "token as the head")) from exc
        _address = address
        _diagnostics_to_stderr()
        return ray


def check_reachable(address: str, timeout_s: float = REACH_TIMEOUT_S) -> None:
    """ClusterError, naming the fix, when nothing accepts a connection at HOST:PORT ("auto" is not checked)."""
    if address == "auto":
        return
    host, sep, port = address.strip().rpartition(":")
    if not sep or not host or not port.isdigit():
        raise ClusterError(f"{address!r} is not a cluster address: give the head's HOST:PORT, e.g. 10.0.0.5:6379 "
                           "(the head prints it at `labconsole node start --head`)")
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout_s):
            pass
    except OSError as exc:
        raise ClusterError(
            f"nothing answers at {address} ({exc.strerror or type(exc).__name__}): start the head there with "
            "`labconsole node start --head` (add --host ADDRESS to reach it from other machines), or check the "
            "address and port it printed") from exc


def check_joinable(address: str) -> None:
    """What a worker that joins the cluster itself needs, checked here before it is spawned: Ray installed
    (ClusterUnavailable), a token (turned on for this process and so for the worker, which inherits
    RAY_AUTH_MODE=token) and a listener at `address` (ClusterError naming the fix). Joins nothing."""
    if not available():
        require_ray()  # raises ClusterUnavailable with the install command
    auth.require_token()
    check_reachable(address)


def disconnect() -> None:
    global _address
    with _lock:
        ray = require_ray()
        if ray.is_initialized():
            ray.shutdown()
        _address = None


def _diagnostics_to_stderr() -> None:
    """Ray's driver prints cluster messages ("(raylet) a worker died …") to stdout, where they would break
    `--json`; they are diagnostics, so they go to stderr."""
    try:
        from ray._private import worker as ray_worker
    except ImportError:
        return
    original = getattr(ray_worker, "print_to_stdstream", None)
    if original is None or getattr(original, "_labconsole", False):
        return

    def to_stderr(data, *args, **kwargs):
        return original({**data, "is_err": True}, *args, **kwargs)

    to_stderr._labconsole = True  # type: ignore[attr-defined]
    ray_worker.print_to_stdstream = to_stderr
