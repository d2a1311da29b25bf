"""The Ray fleet as one more level of the topology graph (`labconsole topology --cluster ADDR`).

Each alive Ray node describes its own machine: a small task pinned to it (NodeAffinitySchedulingStrategy, hard)
calls `engines.topology.discover()` there, so sysfs, NVML and lspci are read on the machine they describe, never
guessed from the console's. The graphs come back and are hung under one root:

    fleet ──cluster──▶ cluster-node:<host> ──▶ <host>/<that node's own graph, ids prefixed "<host>/">

A node whose task fails or does not answer in time is still a cluster-node, with `attrs.not_available` saying why
(and the same under the fleet's `not_available`), so a fleet view never silently loses a machine. The link between
the fleet and a node is kind "cluster" with no speed: nothing here measures the network between machines.
Nothing is retried: a node that failed once is reported as failed.
"""

from __future__ import annotations

import socket
from collections.abc import Callable
from typing import Any

from console.cluster.answers import node_answers

GATHER_TIMEOUT_S = 60.0
FLEET_ID = "fleet"
_task = None


# ---- Public API
def gather(address: str, timeout_s: float = GATHER_TIMEOUT_S, *,
           discover: Callable[[], dict[str, Any]] | None = None) -> dict[str, Any]:
    """Join the cluster at `address` (as the console does: token, quiet driver) and return the fleet graph in the
    topology contract's shape. `timeout_s` bounds the whole gather; a node not done by then is listed with the
    reason. `discover` replaces engines.topology.discover on the nodes (it travels to them pickled); None = the
    real discovery.

    Raises ClusterUnavailable without Ray, ClusterError when the cluster cannot be joined (console.cluster.connect).
    """
    from console.cluster.connect import connect
    from console.cluster.dispatch import alive_nodes

    if not timeout_s > 0:
        raise ValueError(f"timeout_s must be > 0 seconds, got {timeout_s!r}")
    ray = connect(address)
    nodes = alive_nodes(ray)
    answers = _ask_nodes(ray, nodes, timeout_s, discover)
    return fleet_graph(address, nodes, answers)


def fleet_graph(address: str, nodes: list[dict[str, Any]], answers: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Pure: the fleet graph from Ray's node rows (console.cluster.dispatch.alive_nodes) and each node's answer
    ({"host", "topology"} or {"error"}), keyed by node_id. Split out so the assembly is tested without a cluster."""
    graph: dict[str, Any] = {
        "schema": 1, "host": socket.gethostname(), "source": f"cluster:{address}",
        "nodes": [{"id": FLEET_ID, "kind": "fleet", "label": f"Ray cluster {address}", "parent": None,
                   "attrs": {"address": address, "nodes": len(nodes)}}],
        "links": [], "gpu_matrix": None, "not_available": {}}
    names = _host_names(nodes, answers)
    for node in nodes:
        answer = answers.get(node["node_id"]) or {"error": "no answer was recorded for this node"}
        _add_node(graph, node, names[node["node_id"]], answer)
    return graph


def topology_on_node(discover: Callable[[], dict[str, Any]] | None = None) -> dict[str, Any]:
    """What the Ray task runs on its node: {"host": the node's host name (as its runs are recorded), "topology":
    engines.topology.discover() there}."""
    from console.history import host

    if discover is None:
        try:
            from engines.topology import discover
        except ImportError as exc:
            raise RuntimeError(f"this node's Lab Console has no topology discovery ({exc}): install the console's "
                               "version on the node and restart it (`labconsole node start`)") from exc
    return {"host": host.describe()["hostname"], "topology": discover()}


# ---- Private API
def _ask_nodes(ray: Any, nodes: list[dict[str, Any]], timeout_s: float,
               discover: Callable[[], dict[str, Any]] | None) -> dict[str, dict[str, Any]]:
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    refs = {node["node_id"]: _remote(ray).options(
        scheduling_strategy=NodeAffinitySchedulingStrategy(node["node_id"], soft=False)).remote(discover)
        for node in nodes}
    return node_answers(ray, refs, timeout_s, lambda answer: answer, _cause,
                        late=" (busy, or its discovery hung)")


def _remote(ray: Any) -> Any:
    global _task
    if _task is None:  # num_cpus=0: reading sysfs needs no slot, and must not wait behind a run on the node
        _task = ray.remote(num_cpus=0, max_retries=0, retry_exceptions=False,
                           name="labconsole-topology")(topology_on_node)
    return _task


def _cause(exc: BaseException) -> str:
    """The error raised in the task, not Ray's wrapper around it: its type and first line."""
    inner = getattr(exc, "cause", None) or exc
    text = str(inner).strip()
    line = next((part for part in reversed(text.splitlines()) if part.strip()), "") if text else ""
    return f"{type(inner).__name__}: {line[:300]}" if line else type(inner).__name__


def _host_names(nodes: list[dict[str, Any]], answers: dict[str, dict[str, Any]]) -> dict[str, str]:
    """Each node's name in the graph: its `host` label (what `labconsole cluster` shows), else the host name its
    task reported, else the start of its node id; a name two nodes share gets the node id's start appended."""
    names = {}
    for node in nodes:
        reported = (answers.get(node["node_id"]) or {}).get("host")
        names[node["node_id"]] = str(node["labels"].get("labconsole/host") or reported or node["node_id"][:8])
    taken = list(names.values())
    return {node_id: f"{name}-{node_id[:6]}" if taken.count(name) > 1 else name for node_id, name in names.items()}


def _add_node(graph: dict[str, Any], node: dict[str, Any], name: str, answer: dict[str, Any]) -> None:
    node_id = f"cluster-node:{name}"
    resources = node.get("resources") or {}
    attrs: dict[str, Any] = {
        "host": name, "ip": node.get("address"), "node_id": node["node_id"], "head": bool(node.get("is_head")),
        "resources": {"CPU": resources.get("CPU"), "GPU": resources.get("GPU"), "memory": resources.get("memory")},
        "reported_host": answer.get("host"), "gpu_matrix": None, "source": None, "not_available": None}
    graph["nodes"].append({"id": node_id, "kind": "cluster-node", "label": f"{name} ({node.get('address')})",
                           "parent": FLEET_ID, "attrs": attrs})
    graph["links"].append({
        "id": f"cluster:{name}", "kind": "cluster", "a": FLEET_ID, "b": node_id, "current": None, "max": None,
        "theoretical_gbs": None, "current_gbs": None, "state": "unknown",
        "note": f"Ray node at {node.get('address')}; the network between machines is not measured here"})
    topology = answer.get("topology")
    if not isinstance(topology, dict):
        why = answer.get("error") or "the node's task returned no topology"
        attrs["not_available"] = why
        graph["not_available"][name] = why
        return
    _hang(graph, topology, prefix=f"{name}/", parent=node_id)
    attrs["gpu_matrix"] = topology.get("gpu_matrix")
    attrs["source"] = topology.get("source")
    for what, why in (topology.get("not_available") or {}).items():
        graph["not_available"][f"{name}/{what}"] = why


def _hang(graph: dict[str, Any], topology: dict[str, Any], prefix: str, parent: str) -> None:
    """Copy one node's graph into the fleet's: every id prefixed, its roots hung under the cluster-node."""
    def pid(value: Any) -> Any:
        return f"{prefix}{value}" if isinstance(value, str) else value

    for item in topology.get("nodes") or []:
        graph["nodes"].append({**item, "id": pid(item.get("id")),
                               "parent": pid(item["parent"]) if item.get("parent") else parent})
    for link in topology.get("links") or []:
        graph["links"].append({**link, "id": pid(link.get("id")), "a": pid(link.get("a")), "b": pid(link.get("b"))})
