"""Start a data-parallel run's ranks as Ray actors across a lab cluster (`--ranks N --cluster ADDR`).

The same contract as engines.ddp.launch.run_ranks, which starts them as local processes: every rank runs
`target` (engines.ddp.rank.rank_main for `run --ranks`, engines.ttt.rank.ray_rank for time-to-train; named as
"module:function", so each node imports it itself), the driver sees its messages through `on_message(tag, rank, payload)` and gets every
rank's output in rank order, or a RuntimeError naming the rank, its host and the cause.

How the ranks are placed (engines.collectives.placement): one bundle per rank in a SPREAD placement group —
{"CPU": threads} for gloo (threads: --threads, else 1), {"CPU": 1, "GPU": 1} for nccl — reserved before any rank
starts, so a cluster that cannot hold them says so within the place time-out, with what it has and the fix.
The rendezvous is rank 0's node (its address as Ray knows it, a free port found there).

Why the actors buffer: Ray has no pipe from an actor to the driver. Each actor answers two calls at once
(max_concurrency 2): `run` trains, and `drain` hands over the messages `rank_main` sent since the last drain. The
driver drains every actor about every TICK_S while it waits on the runs, so step batches arrive while the ranks
measure (the run's latencies and its stall watchdog see them), and whatever is left comes back with the result.
A rank that dies (its node lost, its process killed) or raises ends the run; every actor is killed and the group
removed whatever happens.
"""

from __future__ import annotations

import os
import socket
import threading
from collections.abc import Callable
from typing import Any

from engines.collectives.placement import collect, placed, start_actors

TICK_S = 0.25  # how often the driver drains the actors' messages while they run
DDP_TARGET = "engines.ddp.rank:rank_main"  # (rank, plan, addr, port, send) -> output; raises on failure
PLACE_TIMEOUT_S = 60.0  # at most this long to reserve every rank's bundle (and at most half the load time-out)
DRAIN_TIMEOUT_S = 30.0
HIDDEN = ("result", "error")  # what on_message never sees (the launcher's, as in engines.collectives.local_ranks)

__all__ = ["run_ranks", "RankActor", "PlacementError", "bundle_for", "place_timeout"]


class PlacementError(RuntimeError):
    """The cluster cannot hold the ranks: what it lacks, and the fix."""

    def __init__(self, message: str, fix: str = ""):
        super().__init__(f"{message}: {fix}" if fix else message)
        self.message, self.fix = message, fix

    def __reduce__(self):
        return (type(self), (self.message, self.fix))


class RankActor:
    """One rank on the node its bundle was placed on; `run` and `drain` are served at the same time."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._messages: list[tuple] = []

    def where(self) -> tuple[str, int, str]:
        """(address as Ray knows it, a free port there, host name as the history records it)."""
        from engines.collectives.rank import free_port, node_address

        ip = node_address()
        host = os.environ.get("LABCONSOLE_HOSTNAME") or socket.gethostname()
        return ip, free_port("0.0.0.0" if ":" not in ip else "::"), host

    def run(self, rank: int, plan: dict[str, Any], addr: str, port: int, target: str = DDP_TARGET) -> dict[str, Any]:
        """The target's output and the messages not drained yet; its exception propagates (Ray wraps it)."""
        import importlib

        module, _, function = target.partition(":")
        output = getattr(importlib.import_module(module), function)(rank, plan, addr, port, self._send)
        return {"output": output, "messages": self.drain()}

    def drain(self) -> list[tuple]:
        with self._lock:
            messages, self._messages = self._messages, []
        return messages

    def _send(self, message: tuple) -> None:
        with self._lock:
            self._messages.append(message)


# ---- Public API
def run_ranks(plan: dict[str, Any], progress: Callable[[dict[str, Any]], None],
              on_message: Callable[[str, int, Any], None], *, target: str = DDP_TARGET,
              name: str = "ddp") -> list[dict[str, Any]]:
    """Every rank's output, in rank order, from ranks Ray placed on the cluster at plan["cluster"], each running
    `target` ("module:function"). `on_message(tag, rank, payload)` sees every message but "result" and "error"
    (it may raise: cancel)."""
    ranks, address = int(plan["ranks"]), plan["cluster"]
    bundle = bundle_for(plan)
    plan = {**plan, "threads_per_rank": plan.get("threads_per_rank") or int(bundle["CPU"])}  # the bundle's CPUs
    wait_s = place_timeout(plan)
    with placed(address, [bundle] * ranks, name=f"labconsole-{name}-{ranks}", wait_s=wait_s,
                error_cls=PlacementError) as (ray, group):
        actors: list[Any] = []
        try:
            actors = start_actors(ray, group, RankActor, bundle, ranks, max_concurrency=2)
            wheres = ray.get([actor.where.remote() for actor in actors], timeout=max(wait_s, 60.0))
            hosts = [host for _, _, host in wheres]
            ip, port, _ = wheres[0]
            progress({"text": f"placed {ranks} ranks on {', '.join(hosts)}: rendezvous {ip}:{port}",
                      "fraction": 0.0, "rank_hosts": hosts})
            refs = [actor.run.remote(rank, plan, ip, port, target) for rank, actor in enumerate(actors)]
            seen = _Seen(on_message)
            outs = collect(ray, refs, progress, stall_s=float(plan["stall_timeout_s"]), hosts=hosts, tick_s=TICK_S,
                           on_tick=lambda: _drain(ray, actors, seen), where=seen.where)
            for rank, out in enumerate(outs):
                seen.deliver(rank, out["messages"])
            return [out["output"] for out in outs]
        finally:
            for actor in actors:
                ray.kill(actor)


def bundle_for(plan: dict[str, Any]) -> dict[str, float]:
    """One rank's reservation: a GPU and a CPU for nccl; for gloo the rank's threads in CPUs (at least one)."""
    if plan["backend"] == "nccl":
        return {"CPU": 1.0, "GPU": 1.0}
    return {"CPU": float(max(1, int(plan.get("threads_per_rank") or 1)))}


def place_timeout(plan: dict[str, Any]) -> float:
    """Seconds to wait for every bundle: PLACE_TIMEOUT_S, or half the load time-out when that is shorter (the
    worker is silent while it waits, and the console stops a worker silent for the load time-out)."""
    return min(PLACE_TIMEOUT_S, float(plan.get("load_timeout_s") or PLACE_TIMEOUT_S * 2) / 2)


# ---- Private API
class _Seen:
    """Messages handed on in order, and where each rank last said it was (for the message of a failure)."""

    def __init__(self, on_message: Callable[[str, int, Any], None]) -> None:
        self.on_message = on_message
        self.last: dict[int, str] = {}
        self.measured: int | None = None

    def deliver(self, rank: int, messages: list[tuple]) -> None:
        for tag, sender, payload in messages:
            self._note(tag, sender, payload)
            if tag not in HIDDEN:
                self.on_message(tag, sender, payload)

    def where(self, rank: int) -> str:
        return self.last.get(rank, "before its first step (starting, importing torch, building the model, "
                                   "joining the group)")

    def _note(self, tag: str, rank: int, payload: Any) -> None:
        payload = payload if isinstance(payload, dict) else {}
        if tag == "ready":
            self.last[rank] = "after loading, before its first step"
        elif tag == "phase" and payload.get("phase") == "warmup" and payload.get("measured_steps") is not None:
            self.measured = int(payload["measured_steps"])
        elif tag == "progress" and "step" in payload:
            self.last[rank] = f"after warm-up step {payload['step']} of {payload.get('of', '?')} (the last it reported)"
        elif tag == "steps" and "first" in payload:
            done = int(payload["first"]) + len(payload.get("t0_ns") or payload.get("step_s") or [])
            of = f" of {self.measured}" if self.measured else ""
            self.last[rank] = f"after measured step {done}{of} (the last it reported)"


def _drain(ray: Any, actors: list[Any], seen: _Seen) -> None:
    """Every live actor's messages since the last drain, handed on. An actor that cannot answer (dead) is left
    to `collect`, which names it; on_message's own exceptions (cancel) propagate."""
    refs = [actor.drain.remote() for actor in actors]
    for rank, ref in enumerate(refs):
        try:
            messages = ray.get(ref, timeout=DRAIN_TIMEOUT_S)
        except Exception:  # noqa: BLE001 — RayActorError, GetTimeoutError: the run's own wait reports it
            continue
        seen.deliver(rank, messages)
