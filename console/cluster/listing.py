"""`labconsole cluster`: the nodes of a lab cluster, their labels, their targets and what runs on them.

Targets come from each node's own discovery (console.machine.targets on that node: cached per host, rediscovered in a
worker there when the engines changed), asked for by a small task pinned to the node; a node that does not
answer in time is listed with the reason instead of its targets.
"""

from __future__ import annotations

from typing import Any

from console.cluster import NODE_ID_LABEL, registry, short_key
from console.cluster.answers import node_answers
from console.cluster.dispatch import RUN_RESOURCE, alive_nodes

DISCOVERY_TIMEOUT_S = 120.0


def describe(ray: Any, with_targets: bool = True, timeout_s: float = DISCOVERY_TIMEOUT_S) -> dict[str, Any]:
    nodes = alive_nodes(ray)
    targets = _targets(ray, nodes, timeout_s) if with_targets else {}
    runs = registry.entries(ray)
    alive = {n["node_id"] for n in nodes}
    out = []
    for node in nodes:
        labels = {short_key(k): v for k, v in node["labels"].items() if k != NODE_ID_LABEL}
        found = targets.get(node["node_id"], {})
        out.append({"node_id": node["node_id"], "address": node["address"], "head": node["is_head"],
                    "runs_here": bool(node["resources"].get(RUN_RESOURCE)), "labels": labels,
                    "targets": found.get("targets"), "targets_error": found.get("error"),
                    "running": [r for r in runs if r.get("node_id") == node["node_id"]]})
    waiting = [r for r in runs if not r.get("node_id")]
    lost = [r for r in runs if r.get("node_id") and r["node_id"] not in alive]
    return {"nodes": out, "waiting": waiting, "lost": lost}


def window_targets(listing: dict[str, Any]) -> list[dict[str, Any]]:
    """The targets of a listing's run-taking nodes as the window's target list offers them: `node/target`
    (`lab-a/cpu`, the node named by its host label), each with `node` (node_id, host, address) and `target` (the
    id on the node). A node whose discovery failed is one unavailable entry (`lab-a/?`) that says why."""
    nodes = [n for n in listing.get("nodes") or [] if n.get("runs_here")]
    names = [str(n["labels"].get("host") or n["node_id"][:8]) for n in nodes]
    out: list[dict[str, Any]] = []
    for node, name in zip(nodes, names, strict=True):
        if names.count(name) > 1:
            name = f"{name}-{node['node_id'][:6]}"
        where = {"node_id": node["node_id"], "host": name, "address": node.get("address"),
                 "accel": node["labels"].get("accel")}
        if node.get("targets") is None:
            out.append({"id": f"{name}/?", "name": "targets unknown", "kind": "node", "available": False,
                        "engines": [], "engine_details": {}, "node": where, "target": None,
                        "reason": f"node {name}: {node.get('targets_error') or 'did not list its targets'}"})
            continue
        for target in node["targets"]:
            out.append({**target, "id": f"{name}/{target['id']}", "target": target["id"], "node": where,
                        "name": f"{target.get('name') or target['id']} (node {name})",
                        "engine_details": target.get("engine_details") or {}})
    return out


def fetch(address: str, timeout_s: float = DISCOVERY_TIMEOUT_S) -> dict[str, Any]:
    """Join the cluster at `address` and list it, targets included (for the window's background call)."""
    from console.cluster.connect import connect

    return describe(connect(address), with_targets=True, timeout_s=timeout_s)


# ---- Private API
def _discover_here() -> list[dict[str, Any]]:
    from console.machine.targets import discover_targets

    return discover_targets()


def _targets(ray: Any, nodes: list[dict[str, Any]], timeout_s: float) -> dict[str, dict[str, Any]]:
    task = ray.remote(num_cpus=0, max_retries=0, name="labconsole-targets")(_discover_here)
    refs = {node["node_id"]: task.options(label_selector={NODE_ID_LABEL: node["node_id"]}).remote()
            for node in nodes}
    return node_answers(ray, refs, timeout_s, _target_rows, _first_line)


def _target_rows(targets: list[dict[str, Any]]) -> dict[str, Any]:
    return {"targets": [{k: t.get(k) for k in ("id", "name", "kind", "available", "engines", "reason",
                                               "engine_details")} for t in targets]}


def _first_line(exc: Exception) -> str:
    return f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
