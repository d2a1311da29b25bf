"""Machine cards of the fleet: each node measures its own card (the same worker `labconsole machine` starts, run
there by a Ray task) and the console keeps it in its history under that node's host, so `whatif --onto HOST`
can project a run onto any lab machine.

A card task takes the node's run slot (RUN_RESOURCE), so it never measures beside a run on that node, and is
never retried: a card measured twice is two measurements. One node failing does not lose the others' cards.
"""

from __future__ import annotations

from typing import Any

from console.cluster import ClusterError, auth, label_key
from console.cluster.dispatch import RUN_RESOURCE, alive_nodes, no_node_message
from console.cluster.facts import YES, matches, target_label

CARD_TIMEOUT_S = 1800.0  # as console.machine.cards.MEASURE_TIMEOUT_S: a slow disk can take minutes
_task = None


# ---- Public API
def measure_on_nodes(address: str, on: dict[str, str] | None, target: str = "cpu", *, repeats: int = 5,
                     quick: bool = False, timeout_s: float = CARD_TIMEOUT_S) -> list[dict[str, Any]]:
    """Measure `target`'s card on every node that matches `on` and has the target, all at once (each node measures
    itself). One entry per node: {"node_id", "host" (the node's host row), "card"} or {"node_id", "error"}.

    Raises ClusterError when no node matches (the message lists the labels that exist)."""
    from console.cluster.connect import connect

    ray = connect(address)
    selector = {label_key(key): value for key, value in (on or {}).items()}
    selector.setdefault(target_label(target), YES)
    nodes = alive_nodes(ray)
    chosen = [n for n in nodes if n["resources"].get(RUN_RESOURCE) and matches(n["labels"], selector)]
    if not chosen:
        raise ClusterError(no_node_message(selector, nodes))
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    refs = [(node, _remote(ray).options(scheduling_strategy=NodeAffinitySchedulingStrategy(node["node_id"],
                                                                                           soft=False))
             .remote(target, repeats, quick)) for node in chosen]
    results = []
    for node, ref in refs:
        try:
            results.append({"node_id": node["node_id"], **ray.get(ref, timeout=timeout_s)})
        except Exception as exc:  # noqa: BLE001 — a lost node, a failed worker, a timeout: that node only
            ray.cancel(ref, force=True)
            results.append({"node_id": node["node_id"], "labels": node["labels"],
                            "error": auth.redact(f"{type(exc).__name__}: {_first_line(exc)}")})
    return results


def card_on_node(target: str, repeats: int, quick: bool) -> dict[str, Any]:
    """What the Ray task runs on the node: {"host": the node's host row, "card": its card}. The card is named by
    the node's host (as its runs are), not by the name its worker's socket reports."""
    from console.history import host
    from console.machine.cards import default_storage_dir, measure

    row = host.describe()
    card = measure(target, str(default_storage_dir()), repeats=repeats, quick=quick)
    card["host"] = row.get("hostname") or card.get("host")
    return {"host": row, "card": card}


# ---- Private API
def _remote(ray: Any) -> Any:
    global _task
    if _task is None:
        _task = ray.remote(max_retries=0, retry_exceptions=False, num_cpus=0, resources={RUN_RESOURCE: 1},
                           name="labconsole-machine-card")(card_on_node)
    return _task


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0][:300] if text else type(exc).__name__
