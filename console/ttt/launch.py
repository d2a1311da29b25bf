"""Run one time-to-train run in a spawned worker (console.storage.launch.run_kind, kind "time-to-train"): the worker
imports torch and starts the ranks, the console never does. Options are checked here first, so a typo costs no
worker.
Qt-free: the window calls it from a thread, the CLI directly.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

from console.storage.launch import DEFAULT_TIMEOUT_S, Outcome, run_kind
from engines.ttt import KIND, NAME
from engines.ttt.errors import TimeToTrainError
from engines.ttt.options import normalize

KINDS = {NAME: KIND}

__all__ = ["run", "KINDS"]


def run(options: Mapping[str, Any], on_progress: Callable[[dict[str, Any]], None] | None = None,
        cancel: threading.Event | None = None, timeout_s: float = DEFAULT_TIMEOUT_S) -> Outcome:
    """Check `options`, then run once in a worker; an Outcome whatever happens (bad input: failed with the fix,
    error_kind "bad-input")."""
    started = time.monotonic_ns()
    try:
        opts = normalize(options)
    except TimeToTrainError as exc:
        return Outcome(NAME, "failed", cause=exc.message, fix=exc.fix or None, error_kind="bad-input",
                       started_ns=started)
    opts.pop("placement", None)  # the worker derives it again from cluster
    return run_kind(NAME, opts, on_progress=on_progress, timeout_s=timeout_s, cancel=cancel, kinds=KINDS)

