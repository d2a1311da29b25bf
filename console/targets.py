"""Target discovery, run in a short-lived worker process so the console itself never imports torch."""

from __future__ import annotations

import concurrent.futures
import multiprocessing
from typing import Any

from engines.targets import discover


def discover_targets(timeout_s: float = 120.0) -> list[dict[str, Any]]:
    """Ask a spawn-context worker what this machine has; a failure is reported as a target list, not raised."""
    ctx = multiprocessing.get_context("spawn")
    try:
        with concurrent.futures.ProcessPoolExecutor(max_workers=1, mp_context=ctx) as pool:
            return pool.submit(discover).result(timeout=timeout_s)
    except Exception as exc:  # noqa: BLE001 — the caller still needs a usable list
        return [{"id": "cpu", "name": "CPU", "kind": "cpu", "available": True, "engines": ["torch"],
                 "reason": "", "note": f"target discovery failed: {type(exc).__name__}: {exc}"}]
