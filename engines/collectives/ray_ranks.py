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
    import ray
    from ray.util.placement_group import placement_group, remove_placement_group
    from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

    ranks, address, wait_s = int(plan["ranks"]), plan["cluster"], float(plan["place_timeout_s"])
    if not ray.is_initialized():
        ray.init(address=address, namespace="labconsole", log_to_driver=False, logging_level="WARNING")
    bundle = {"CPU": 1.0, "GPU": 1.0} if plan["backend"] == "nccl" else {"CPU": 1.0}
    group = placement_group([dict(bundle) for _ in range(ranks)], strategy="SPREAD",
                            name=f"labconsole-collectives-{ranks}")
    actors: list[Any] = []
    try:
        try:
            ray.get(group.ready(), timeout=wait_s)
        except ray.exceptions.GetTimeoutError:
            raise CollectivesError(
                f"the cluster at {address} could not place {ranks} ranks of {bundle} within {wait_s:g} s "
                f"(it has {ray.cluster_resources()})", "ask for fewer --ranks, or add nodes with free CPUs/GPUs"
            ) from None
        progress({"text": f"placed {ranks} ranks on the cluster", "fraction": 0.0})
        remote = ray.remote(RankActor)
        actors = [remote.options(num_cpus=bundle["CPU"], num_gpus=bundle.get("GPU", 0),
                                 scheduling_strategy=PlacementGroupSchedulingStrategy(
                                     group, placement_group_bundle_index=rank)).remote() for rank in range(ranks)]
        ip, port, host = ray.get(actors[0].address.remote(), timeout=max(wait_s, 60.0))
        progress({"text": f"rank 0 on {host} ({ip}): rendezvous {ip}:{port}", "fraction": 0.0})
        refs = [actor.run.remote(rank, plan, ip, port) for rank, actor in enumerate(actors)]
        return _collect(ray, refs, plan, progress)
    finally:
        for actor in actors:
            ray.kill(actor)
        remove_placement_group(group)


# ---- Private API
def _collect(ray: Any, refs: list[Any], plan: dict[str, Any],
             progress: Callable[[dict[str, Any]], None]) -> list[dict[str, Any]]:
    index = {ref: rank for rank, ref in enumerate(refs)}
    results: dict[int, dict[str, Any]] = {}
    pending = list(refs)
    stall_s = float(plan["stall_timeout_s"])
    while pending:
        # Until one rank ends, a hung collective is ended by the backend's own timeout (stall_timeout_s, given to
        # init_process_group) and a lost node by Ray; once one rank has ended, the rest end at the same barrier,
        # so one still running stall_timeout_s later is stuck.
        done, pending = ray.wait(pending, num_returns=1, timeout=stall_s if results else None)
        if not done:
            stuck = sorted(index[ref] for ref in pending)
            raise RuntimeError(f"rank(s) {', '.join(map(str, stuck))} still running {stall_s:g} s after rank(s) "
                               f"{', '.join(map(str, sorted(results)))} finished: a hung rank or node")
        rank = index[done[0]]
        try:
            results[rank] = ray.get(done[0])
        except Exception as exc:  # RayActorError (rank's node or process gone), RayTaskError (it raised)
            text = str(exc).strip().splitlines()
            raise RuntimeError(f"rank {rank} failed on the cluster: {type(exc).__name__}: "
                               f"{text[-1] if text else ''}") from None
        progress({"text": f"rank {rank} finished", "fraction": len(results) / len(refs)})
    return [results[rank] for rank in range(len(refs))]
