"""What runs on the node: a Ray generator task that measures a RunSpec there and streams everything back.

The measurement itself runs exactly as a local one: a spawn-context worker process (console.run.runner.WorkerRun →
engines.worker) with a telemetry sampler watching it (console.telemetry), both on this node. So the timed loop
shares its process with nothing Ray does, a crashed engine is diagnosed here as it is locally (signal, stall,
time-outs), and the telemetry is this node's. This task only forwards: protocol events, sample rows and the
outcome, in batches, as soon as they arrive (about every 100 ms while measuring, a heartbeat every second when
quiet), so the console can tell a silent node from a slow model.

Batch format (plain data): {"sent_ns": node clock, "events": [...], "samples": [...], "sources": [...] | None,
"node": {...} (first batch only), "outcome": {...} (last batch only)}.
"""

from __future__ import annotations

import dataclasses
import os
import queue
import time
from typing import Any

HEARTBEAT_S = 1.0


# ---- Public API
def run_on_node(spec_data: dict[str, Any], telemetry_hz: float | None, offered: dict[str, Any] | None = None):
    """The generator the Ray task runs (see dispatch.RemoteRun for the console side); `offered`: a model file sent
    by content hash (console.cluster.model_transfer), used in place of the spec's path."""
    from console.history import host
    from console.run.runner import WorkerRun
    from console.telemetry.hub import TelemetryHub
    from engines import protocol
    from engines.spec import RunSpec, SpecError

    yield {"sent_ns": time.perf_counter_ns(), "events": [], "samples": [], "sources": None,
           "node": _node_facts(host.describe())}
    try:
        spec = RunSpec.from_dict(spec_data)
        if offered is not None:
            received = _received(offered)
            if isinstance(received, str):
                yield _refusal(protocol, "load", received)
                return
            spec.model = str(received)
        problem = unreadable_model(spec)  # before validate(), whose "not found" would not say where
        if problem:
            yield _refusal(protocol, "load", problem)
            return
        spec.validate()
    except (SpecError, TypeError) as exc:
        yield _refusal(protocol, "spec", f"the node could not read the spec: {exc}")
        return
    inbox: queue.SimpleQueue = queue.SimpleQueue()
    run = WorkerRun(spec, lambda event: inbox.put(("event", event)), lambda outcome: inbox.put(("end", outcome)))
    hub = TelemetryHub(rate_hz=telemetry_hz) if telemetry_hz else None
    if hub is not None:
        hub.start()
        hub.subscribe(lambda rows: inbox.put(("samples", rows)), lambda sources: inbox.put(("sources", sources)))
    ended = False
    try:
        run.start()
        if hub is not None:
            hub.watch(run.pid)
        while not ended:
            batch = {"events": [], "samples": [], "sources": None}
            items: list[tuple[str, Any]] = []
            try:
                items.append(inbox.get(timeout=HEARTBEAT_S))
                while True:
                    items.append(inbox.get_nowait())
            except queue.Empty:
                pass
            for kind, item in items:
                if kind == "event":
                    batch["events"].append(item)
                elif kind == "samples":
                    batch["samples"].extend(item)
                elif kind == "sources":
                    batch["sources"] = item
                else:
                    if hub is not None:
                        hub.stop()
                        hub = None
                    batch["outcome"] = dataclasses.asdict(item)
                    ended = True
            batch["sent_ns"] = time.perf_counter_ns()
            yield batch
    finally:
        if not ended:  # the consumer went away (a cooperative cancel): do not leave the worker running
            run.cancel()
            run.wait(10.0)
        if hub is not None:
            hub.stop()


def unreadable_model(spec: Any) -> str | None:
    """Why this node cannot read the spec's model file, or None: files are not sent with a run."""
    if not getattr(spec, "is_file", False):
        return None
    import socket

    path = str(spec.model)
    if not os.path.isfile(path):
        why = "it does not exist here"
    elif not os.access(path, os.R_OK):
        why = "this node's user may not read it"
    else:
        return None
    return (f"refused: the model file {path} is not readable on node {socket.gethostname()} ({why}). A run does "
            "not carry its model file unless asked: put the file at the same path on that node, send it with "
            "--send-model, or choose a node that has it with --on host=NAME")


# ---- Private API
def _received(offered: dict[str, Any]) -> Any:
    """The node's copy of a sent model file, or why it could not be received (a message)."""
    import socket

    import ray

    from console import paths
    from console.cluster.model_transfer import receive

    try:
        return receive(ray, offered, paths.data_dir())
    except (ValueError, OSError) as exc:
        return f"refused: node {socket.gethostname()} could not receive the model file {offered.get('name')!r}: {exc}"


def _node_facts(host_row: dict[str, Any]) -> dict[str, Any]:
    import ray

    context = ray.get_runtime_context()
    node_id = context.get_node_id()
    labels = next((n.get("Labels") or {} for n in ray.nodes() if n.get("NodeID") == node_id), {})
    return {"host": host_row, "node_id": node_id, "task_pid": os.getpid(), "labels": dict(labels),
            "boot_id": boot_id(), "t_ns": time.perf_counter_ns()}


def boot_id() -> str | None:
    """The kernel's id of this boot (Linux): two processes with the same one share one monotonic clock."""
    try:
        with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as handle:
            return handle.read().strip() or None
    except OSError:
        return None


def _refusal(protocol: Any, kind: str, message: str) -> dict[str, Any]:
    error = protocol.make("error", kind=kind, message=message, traceback="")
    return {"sent_ns": time.perf_counter_ns(), "events": [error], "samples": [], "sources": None,
            "outcome": {"status": "failed", "message": message, "result": None, "error": error, "exitcode": None}}
