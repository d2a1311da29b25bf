"""RemoteRun: a run on another lab machine, with the interface RunSession uses for a local WorkerRun.

The run is a Ray generator task (console.cluster.task) placed by node labels; its batches are turned back into
the same protocol events, sample rows and outcome a local worker gives, on this object's own reader thread.
Nothing is retried (max_retries=0, retry_exceptions=False): a measurement repeated silently is a different
measurement, so a crashed worker or a lost node ends the run failed, with the cause. Cancel is
`ray.cancel(force=True)`: the node's task process is killed and its worker and sampler, which watch their
parent, exit with it; what was measured up to then is kept.

Clocks: the node stamps with its own monotonic clock. Within one boot of one machine (same kernel boot id) the
clocks are one; otherwise the
node's timestamps are moved onto the console's clock by the offset seen on the first batch (too late by that
batch's one-way delay, a few ms), so latencies and telemetry still share one axis. Durations are never touched.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from console.cluster import ClusterError, auth, facts, registry, short_key
from console.run.runner import Outcome, RunHandle

RUN_RESOURCE = "labconsole_run"  # one slot per node (node start declares it): measured runs never share a node
SCHEDULE_TIMEOUT_S = 60.0
SILENCE_TIMEOUT_S = 20.0  # the node task sends a heartbeat every second; this much silence is a lost node
_POLL_S = 0.05
_task = None


class RemoteRun(RunHandle):
    """Start with start(); events, samples and the outcome arrive on a reader thread, as with WorkerRun."""

    # ---- Public API
    def __init__(self, spec: Any, on_event: Callable[[dict[str, Any]], None], on_end: Callable[[Outcome], None],
                 *, address: str, on: dict[str, str] | None = None,
                 on_samples: Callable[[list[tuple]], None] | None = None,
                 on_sources: Callable[[list[dict[str, Any]]], None] | None = None,
                 on_node: Callable[[dict[str, Any]], None] | None = None, telemetry_hz: float | None = 10.0,
                 schedule_timeout_s: float = SCHEDULE_TIMEOUT_S, silence_timeout_s: float = SILENCE_TIMEOUT_S,
                 run_id: str | None = None, send_model: bool = False):
        super().__init__(on_end)
        self.spec = spec
        self.address = address
        self.selector = facts.selector_for(spec.to_dict(), on)
        self._on_event = on_event
        self._on_samples = on_samples or (lambda rows: None)
        self._on_sources = on_sources or (lambda sources: None)
        self._on_node = on_node or (lambda node: None)
        self._telemetry_hz = telemetry_hz
        self._schedule_timeout = schedule_timeout_s
        self._silence_timeout = silence_timeout_s
        self._run_id = run_id
        self._send_model = send_model  # the model file travels by content hash (console.cluster.model_transfer)
        self._cancel_at: float | None = None
        self._offset_ns = 0
        self.pid: int | None = None  # a local pid to watch: none, the run is elsewhere
        self.node: dict[str, Any] | None = None  # the node's facts, from its first batch
        self.stream_delays_ns: list[int] = []  # per batch: arrival here − sent there (node → console latency)
        self.first_batch_ns: int | None = None

    def start(self) -> None:
        threading.Thread(target=self._pump, name="remote-run-reader", daemon=True).start()

    def cancel(self) -> None:
        if self._cancel_at is None and not self._done.is_set():
            self._cancel_at = time.monotonic()

    # ---- Private API
    def _pump(self) -> None:
        ray = None
        try:
            from console.cluster.connect import connect

            ray = connect(self.address)
            outcome = self._drive(ray)
        except ClusterError as exc:
            outcome = Outcome("failed", str(exc))
        except Exception as exc:  # noqa: BLE001 — whatever Ray raises, the run ends with the reason
            outcome = Outcome("failed", auth.redact(f"dispatch failed: {type(exc).__name__}: {exc}"))
        finally:
            if ray is not None and self._run_id:
                registry.delete(ray, self._run_id)
        self._end(outcome)

    def _drive(self, ray: Any) -> Outcome:
        nodes = alive_nodes(ray)
        if not any(facts.matches(n["labels"], self.selector) and n["resources"].get(RUN_RESOURCE)
                   for n in nodes):
            return Outcome("failed", no_node_message(self.selector, nodes))
        offered = None
        if self._send_model and getattr(self.spec, "is_file", False):
            from console.cluster.model_transfer import offer

            offered = offer(ray, self.spec.model)
        gen = _remote(ray).options(label_selector=self.selector).remote(self.spec.to_dict(), self._telemetry_hz,
                                                                         offered)
        if self._run_id:
            registry.put(ray, self._run_id, {"run_id": self._run_id, "model": self.spec.model,
                                             "engine": self.spec.engine, "target": self.spec.target,
                                             "selector": self.selector, "node_id": None,
                                             "started": time.time()})
        sent_at = last = time.monotonic()
        cancel_sent = False
        while True:
            if self._cancel_at is not None and not cancel_sent:
                ray.cancel(gen, force=True)
                cancel_sent = True
            ready, _ = ray.wait([gen], timeout=_POLL_S)
            now = time.monotonic()
            if not ready:
                if cancel_sent and now - self._cancel_at > 10.0:
                    return self._cancelled("the task did not report back within 10 s of the cancel")
                if self.node is None and now - sent_at > self._schedule_timeout:
                    ray.cancel(gen, force=True)
                    return Outcome("failed", f"no node started the run within {self._schedule_timeout:g} s. "
                                             + no_node_message(self.selector, alive_nodes(ray), busy=True))
                if self.node is not None and now - last > self._silence_timeout:
                    ray.cancel(gen, force=True)
                    return Outcome("failed", f"node {self._node_name()} sent nothing for "
                                             f"{self._silence_timeout:g} s during {self._during()}: it is "
                                             "unreachable or hung; the run was stopped")
                continue
            try:
                ref = next(gen)
                batch = ray.get(ref)
            except StopIteration:
                return self._cancelled("") if cancel_sent else Outcome(
                    "failed", f"the task on node {self._node_name()} ended without a result during "
                              f"{self._during()}")
            except Exception as exc:  # noqa: BLE001 — Ray's error types say what was lost
                return self._cancelled("") if cancel_sent else self._lost(ray, exc)
            last = time.monotonic()
            if self.node is None and "node" in batch:
                self._meet(ray, batch["node"])
            outcome = self._deliver(batch)
            if outcome is not None:
                return outcome

    def _meet(self, ray: Any, node: dict[str, Any]) -> None:
        """The first batch: who runs it, and the clock offset to the console's."""
        from console.cluster.task import boot_id

        self.node = node
        same_clock = node.get("boot_id") is not None and node.get("boot_id") == boot_id()
        self._offset_ns = 0 if same_clock else time.perf_counter_ns() - int(node["t_ns"])
        self.first_batch_ns = time.perf_counter_ns()
        if self._run_id:
            registry.put(ray, self._run_id, {"run_id": self._run_id, "model": self.spec.model,
                                             "engine": self.spec.engine, "target": self.spec.target,
                                             "selector": self.selector, "node_id": node["node_id"],
                                             "hostname": node["host"].get("hostname"), "started": time.time()})
        self._on_node(node)

    def _deliver(self, batch: dict[str, Any]) -> Outcome | None:
        offset = self._offset_ns
        self.stream_delays_ns.append(time.perf_counter_ns() - (int(batch["sent_ns"]) + offset))
        if batch.get("sources") is not None:
            self._on_sources(batch["sources"])
        for event in batch.get("events") or []:
            if offset:
                _shift(event, offset)
            if event.get("type") == "phase":
                self._phase = event["phase"]
            self._on_event(event)
        rows = batch.get("samples")
        if rows:
            self._on_samples([(row[0] + offset, *row[1:]) for row in rows] if offset else rows)
        ended = batch.get("outcome")
        if ended is None:
            return None
        outcome = Outcome(**ended)
        if self.node is not None and outcome.status == "failed" and "on node" not in outcome.message:
            outcome.message = f"{outcome.message} (on node {self._node_name()})"
        return outcome

    def _lost(self, ray: Any, exc: BaseException) -> Outcome:
        from ray import exceptions as rex

        name = type(exc).__name__
        first = auth.redact(_first_sentence(str(exc)) or name)
        where = f"node {self._node_name()}" if self.node else "the node it was sent to"
        node_gone = isinstance(exc, (rex.NodeDiedError, rex.OwnerDiedError, rex.ObjectLostError)) or (
            self.node is not None and not _is_alive(ray, self.node["node_id"]))
        if node_gone:
            message = f"{where} was lost during {self._during()} ({name}: {first}); the run is not retried"
        elif isinstance(exc, rex.WorkerCrashedError) or "died" in first.lower() or "crash" in first.lower():
            message = (f"the Ray worker running the run on {where} died during {self._during()} ({name}: {first}); "
                       "the run is not retried")
        elif isinstance(exc, rex.TaskCancelledError):
            message = f"the run was cancelled on the cluster (not from this console) during {self._during()}"
        else:
            message = f"the task on {where} failed during {self._during()}: {name}: {first}"
        return Outcome("failed", message)

    def _cancelled(self, note: str) -> Outcome:
        message = (f"cancelled by the user; the task on node {self._node_name()} was stopped "
                   "(ray.cancel, force); measurements up to the stop are kept")
        return Outcome("cancelled", f"{message} ({note})" if note else message)

    def _node_name(self) -> str:
        if not self.node:
            return "?"
        return f"{self.node['host'].get('hostname')} ({str(self.node['node_id'])[:8]})"

    def _during(self) -> str:
        from engines import phases

        return phases.get(self._phase).during if self._phase else "start-up"


# ---- Public helpers
def alive_nodes(ray: Any) -> list[dict[str, Any]]:
    return [{"node_id": n["NodeID"], "labels": dict(n.get("Labels") or {}), "resources": n.get("Resources") or {},
             "address": n.get("NodeManagerAddress"), "is_head": bool((n.get("Resources") or {}).get(
                 "node:__internal_head__"))} for n in ray.nodes() if n.get("Alive")]


def no_node_message(selector: dict[str, str], nodes: list[dict[str, Any]], busy: bool = False) -> str:
    """Why no node fits, with the labels that exist, so the user can pick a value that does."""
    wanted = ", ".join(f"{short_key(k)}={v}" for k, v in selector.items())
    existing: dict[str, set[str]] = {}
    for node in nodes:
        if node["resources"].get(RUN_RESOURCE):
            for key, value in node["labels"].items():
                if key != "ray.io/node-id":
                    existing.setdefault(short_key(key), set()).add(value)
    if busy:
        head = f"The nodes matching {wanted} were busy with other runs, or none matches any more."
    else:
        head = f"no node of the cluster matches {wanted}."
    if not existing:
        return head + " The cluster has no Lab Console nodes (start one with `labconsole node start`)."
    listed = "; ".join(f"{key}={'|'.join(sorted(values))}" for key, values in sorted(existing.items()))
    return f"{head} Labels that exist: {listed}"


# ---- Private API
def _remote(ray: Any) -> Any:
    global _task
    if _task is None:
        from console.cluster.task import run_on_node

        _task = ray.remote(num_returns="streaming", max_retries=0, retry_exceptions=False, num_cpus=0,
                           resources={RUN_RESOURCE: 1}, name="labconsole-run")(run_on_node)
    return _task


def _is_alive(ray: Any, node_id: str) -> bool:
    try:
        return any(n["NodeID"] == node_id and n.get("Alive") for n in ray.nodes())
    except Exception:  # noqa: BLE001
        return False


def _first_sentence(text: str, limit: int = 160) -> str:
    """The gist of one of Ray's errors, which run to a paragraph of advice and ids: its first sentence, capped."""
    line = text.strip().splitlines()[0].strip() if text.strip() else ""
    head, dot, _ = line.partition(". ")
    sentence = head + ("." if dot else "")
    return sentence if len(sentence) <= limit else sentence[:limit - 1].rstrip() + "…"


def _shift(event: dict[str, Any], offset: int) -> None:
    t = event.get("t_ns")
    if isinstance(t, int):
        event["t_ns"] = t + offset
    elif isinstance(t, list):
        event["t_ns"] = [x + offset for x in t]
