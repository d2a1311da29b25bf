"""Run a collectives benchmark in a spawned worker (console.storage.launch.run_kind, kind "collectives"): the
worker imports torch and starts the ranks, the console never does. Options are checked here first, so a typo
costs no worker; a --cluster address is checked for a listener and a token before the worker tries to join it.
Qt-free: the window calls it from a thread, the CLI directly."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

from console.storage.launch import DEFAULT_TIMEOUT_S, Outcome, run_kind
from engines.collectives import KIND
from engines.collectives.errors import CollectivesError
from engines.collectives.options import normalize

KINDS = {"collectives": KIND}

__all__ = ["run", "KINDS"]


def run(options: Mapping[str, Any], on_progress: Callable[[dict[str, Any]], None] | None = None,
        cancel: threading.Event | None = None, timeout_s: float = DEFAULT_TIMEOUT_S) -> Outcome:
    """Check `options`, then run the benchmark in a worker; an Outcome whatever happens (bad input: failed with
    the fix, error_kind "bad-input")."""
    started = time.monotonic_ns()
    try:
        opts = normalize(options)
        if opts["cluster"]:
            _check_cluster(opts["cluster"])
    except CollectivesError as exc:
        return Outcome("collectives", "failed", cause=exc.message, fix=exc.fix or None, error_kind="bad-input",
                       started_ns=started)
    opts.pop("sizes_bytes", None)  # the worker derives it again from `sizes`
    return run_kind("collectives", opts, on_progress=on_progress, timeout_s=timeout_s, cancel=cancel, kinds=KINDS)


def _check_cluster(address: str) -> None:
    """Token and listener before any worker starts (the worker inherits RAY_AUTH_MODE=token from here)."""
    from console.cluster import ClusterError, ClusterUnavailable
    from console.cluster.connect import check_joinable

    try:
        check_joinable(address)
    except (ClusterError, ClusterUnavailable) as exc:
        raise CollectivesError(str(exc), "") from None  # ClusterError's text names its own fix
