"""Ray placement for ranks: join the cluster, reserve one bundle per rank in a SPREAD placement group, start one
actor per bundle, and collect the actors' answers naming the rank (and its host) that failed.

Shared by the collectives benchmark (engines.collectives.ray_ranks) and data-parallel training
(engines.ddp.ray_launch). Why Ray and not a launcher of our own: Ray already knows the nodes, their resources and
their health, and a placement group reserves every rank's share before any rank starts, so a run either gets all
its ranks or says it cannot, with the cluster's resources and the fix. SPREAD puts ranks on different nodes where
it can (what a cross-node collective is for). The group is removed whatever happens.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

ERROR_GRACE_S = 1.5  # after a rank's error, how long to look for a rank whose actor died (the real cause)
# after an error that is a lost peer's symptom (its socket closed), longer: Ray declares an actor on a lost node
# dead only after the node's health checks fail (seconds), while its peer's connection breaks at once
PEER_GRACE_S = 20.0
PEER_SYMPTOMS = ("connection closed by peer", "connection reset", "broken pipe", "econnreset", "connection refused")

__all__ = ["placed", "start_actors", "collect", "failure_text"]


# ---- Public API
@contextlib.contextmanager
def placed(address: str, bundles: Sequence[dict[str, float]], *, name: str, wait_s: float,
           error_cls: Callable[[str, str], Exception]) -> Iterator[tuple[Any, Any]]:
    """(ray, group) with every bundle reserved; `error_cls(message, fix)` raised when the cluster cannot hold them
    within `wait_s`. Joins the cluster at `address` if this process has not; the group is removed on exit."""
    import ray
    from ray.util.placement_group import placement_group, remove_placement_group

    if not ray.is_initialized():
        ray.init(address=address, namespace="labconsole", log_to_driver=False, logging_level="WARNING")
    group = placement_group([dict(b) for b in bundles], strategy="SPREAD", name=name)
    try:
        try:
            ray.get(group.ready(), timeout=wait_s)
        except ray.exceptions.GetTimeoutError:
            shown = _bundles_text(bundles)
            raise error_cls(
                f"the cluster at {address} could not place {len(bundles)} ranks of {shown} within {wait_s:g} s "
                f"(it has {ray.cluster_resources()})", "ask for fewer --ranks, or add nodes with free CPUs/GPUs"
            ) from None
        yield ray, group
    finally:
        remove_placement_group(group)


def start_actors(ray: Any, group: Any, actor_cls: type, bundle: dict[str, float], n: int,
                 **options: Any) -> list[Any]:
    """One `actor_cls` actor per bundle of `group` (bundle i holds rank i); `options` go to Ray's .options()
    (max_concurrency for an actor that answers while it runs)."""
    from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

    remote = ray.remote(actor_cls)
    return [remote.options(num_cpus=bundle.get("CPU", 0), num_gpus=bundle.get("GPU", 0), **options,
                           scheduling_strategy=PlacementGroupSchedulingStrategy(
                               group, placement_group_bundle_index=rank)).remote() for rank in range(n)]


def collect(ray: Any, refs: Sequence[Any], progress: Callable[[dict[str, Any]], None], label: str = "rank", *,
            stall_s: float, hosts: Sequence[str] | None = None, tick_s: float | None = None,
            on_tick: Callable[[], None] | None = None, where: Callable[[int], str] | None = None) -> list[Any]:
    """Each ref's value, in order; RuntimeError naming the failing rank, its host (`hosts`) and where it last said
    it was (`where(rank)`).

    Until one rank ends, a hung collective is ended by the backend's own timeout and a lost node by Ray; once one
    rank has ended the rest end at the same barrier, so one still running `stall_s` later is stuck and the run
    ends naming it. With `on_tick`, the wait wakes every `tick_s` to call it (drain streamed messages, say the
    ranks are alive); without, it sleeps in ray.wait."""
    index = {ref: rank for rank, ref in enumerate(refs)}
    results: dict[int, Any] = {}
    pending = list(refs)
    first_done_at: float | None = None
    while pending:
        if on_tick is None:
            done, pending = ray.wait(pending, num_returns=1, timeout=stall_s if results else None)
        else:
            done, pending = ray.wait(pending, num_returns=1, timeout=tick_s)
            on_tick()
            if not done and (first_done_at is None or time.monotonic() - first_done_at <= stall_s):
                continue
        if not done:
            stuck = sorted(index[ref] for ref in pending)
            raise RuntimeError(f"{label}(s) {', '.join(map(str, stuck))} still running {stall_s:g} s after "
                               f"{label}(s) {', '.join(map(str, sorted(results)))} finished: a hung {label} or node")
        rank = index[done[0]]
        try:
            results[rank] = ray.get(done[0])
        except Exception as exc:  # RayActorError (rank's node or process gone), RayTaskError (it raised)
            rank, exc = _first_death(ray, rank, exc, pending, index)
            place = f" {where(rank)}" if where is not None and where(rank) else ""
            raise RuntimeError(failure_text(rank, exc, label, hosts) + place) from None
        first_done_at = first_done_at or time.monotonic()
        progress({"text": f"{label} {rank} finished", "fraction": len(results) / len(refs)})
    return [results[rank] for rank in range(len(refs))]


def failure_text(rank: int, exc: BaseException, label: str = "rank", hosts: Sequence[str] | None = None) -> str:
    """'rank 1 failed on the cluster (host lab-b): RayActorError: <its last line>'."""
    text = str(exc).strip().splitlines()
    host = f" (host {hosts[rank]})" if hosts and rank < len(hosts) and hosts[rank] else ""
    return f"{label} {rank} failed on the cluster{host}: {type(exc).__name__}: {text[-1] if text else ''}"


# ---- Private API
def _first_death(ray: Any, rank: int, exc: BaseException, pending: list[Any],
                 index: dict[Any, int]) -> tuple[int, BaseException]:
    """The rank to blame: when `rank` raised (its peer's connection broke, say) and another rank's actor died
    within ERROR_GRACE_S, the dead one is the cause. Ray's errors are matched by name (no ray import here)."""
    if _is_death(exc) or not pending:
        return rank, exc
    symptom = any(words in str(exc).lower() for words in PEER_SYMPTOMS)
    try:
        more, _ = ray.wait(pending, num_returns=len(pending), timeout=PEER_GRACE_S if symptom else ERROR_GRACE_S)
    except Exception:  # noqa: BLE001 — the first failure stands
        return rank, exc
    for ref in sorted(more, key=lambda r: index[r]):
        try:
            ray.get(ref)
        except Exception as other:  # noqa: BLE001
            if _is_death(other):
                return index[ref], other
    return rank, exc


def _is_death(exc: BaseException) -> bool:
    return any(cls.__name__ in ("RayActorError", "ActorDiedError", "ActorUnavailableError", "NodeDiedError",
                                "WorkerCrashedError") for cls in type(exc).__mro__)


def _bundles_text(bundles: Sequence[dict[str, float]]) -> str:
    shapes = {tuple(sorted(b.items())) for b in bundles}
    return str(dict(bundles[0])) if len(shapes) == 1 else ", ".join(str(dict(b)) for b in bundles)
