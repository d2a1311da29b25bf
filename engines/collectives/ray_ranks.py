"""Place a collectives run's ranks across a Ray cluster: one placement-group bundle per rank, one actor per bundle,
and the rendezvous at rank 0's node (its address as Ray knows it, a free port found there).

Why Ray and not a launcher of our own: Ray already knows the nodes, their resources and their health, and a
placement group reserves every rank's share before any rank starts, so a run either gets all its ranks or says
it cannot. SPREAD puts ranks on different nodes where it can (what a cross-node collective is for); a rank that
dies (a node lost, an actor killed) ends the run with the cause. The actors, the group and the rendezvous are
removed whatever happens.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from engines.collectives.errors import CollectivesError
from engines.collectives.placement import collect, placed, start_actors

__all__ = ["run_ray", "RankActor"]


class RankActor:
    """One rank, living on the node its bundle was placed on."""

    def address(self) -> tuple[str, int, str]:
        import socket

        from engines.collectives.rank import free_port, node_address

        ip = node_address()
        return ip, free_port("0.0.0.0" if ":" not in ip else "::"), socket.gethostname()

    def run(self, rank: int, plan: dict[str, Any], master_addr: str, master_port: int) -> dict[str, Any]:
        from engines.collectives.rank import run_rank

        return run_rank(rank, plan, master_addr, master_port)


# ---- Public API
def run_ray(plan: dict[str, Any], progress: Callable[[dict[str, Any]], None]) -> list[dict[str, Any]]:
    """Each rank's run_rank output, in rank order, from ranks Ray placed; CollectivesError when the cluster cannot
    hold them, RuntimeError naming the rank when one fails."""
    ranks, address, wait_s = int(plan["ranks"]), plan["cluster"], float(plan["place_timeout_s"])
    bundle = {"CPU": 1.0, "GPU": 1.0} if plan["backend"] == "nccl" else {"CPU": 1.0}
    with placed(address, [bundle] * ranks, name=f"labconsole-collectives-{ranks}", wait_s=wait_s,
                error_cls=CollectivesError) as (ray, group):
        progress({"text": f"placed {ranks} ranks on the cluster", "fraction": 0.0})
        actors: list[Any] = []
        try:
            actors = start_actors(ray, group, RankActor, bundle, ranks)
            ip, port, host = ray.get(actors[0].address.remote(), timeout=max(wait_s, 60.0))
            progress({"text": f"rank 0 on {host} ({ip}): rendezvous {ip}:{port}", "fraction": 0.0})
            refs = [actor.run.remote(rank, plan, ip, port) for rank, actor in enumerate(actors)]
            return _collect(ray, refs, plan, progress)
        finally:
            for actor in actors:
                ray.kill(actor)


# ---- Private API
def _collect(ray: Any, refs: list[Any], plan: dict[str, Any],
             progress: Callable[[dict[str, Any]], None]) -> list[dict[str, Any]]:
    return collect(ray, refs, progress, stall_s=float(plan["stall_timeout_s"]))
