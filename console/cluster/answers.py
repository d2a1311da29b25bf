"""One Ray task per node, and each node's answer or why there is none: what the cluster listing (targets) and the
cluster topology both ask of every node."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from console.cluster import auth


def node_answers(ray: Any, refs: dict[str, Any], timeout_s: float, take: Callable[[Any], dict[str, Any]],
                 failed: Callable[[Exception], str], late: str = "") -> dict[str, dict[str, Any]]:
    """node id → `take(answer)`, or {"error": why}: a node that did not answer within `timeout_s` (its task
    cancelled; `late` adds the likely reason), or whose task raised (`failed(exc)` says it, credentials stripped by
    console.cluster.auth.redact: the listing and the topology show these). One node's failure is its own entry,
    never the fleet's."""
    ready, _ = ray.wait(list(refs.values()), num_returns=len(refs), timeout=timeout_s) if refs else ([], [])
    ready_set = set(ready)
    out: dict[str, dict[str, Any]] = {}
    for node_id, ref in refs.items():
        if ref not in ready_set:
            ray.cancel(ref, force=True)
            out[node_id] = {"error": f"the node did not answer within {timeout_s:g} s{late}"}
            continue
        try:
            out[node_id] = take(ray.get(ref))
        except Exception as exc:  # noqa: BLE001 — one node's failure is that node's entry, not the fleet's
            out[node_id] = {"error": auth.redact(failed(exc))}
    return out
