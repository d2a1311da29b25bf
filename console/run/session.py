"""A run session: one worker run plus its telemetry, its history record and its summary.

The window and the CLI both go through this class, so a run started from either is measured,
stored and summarised the same way. Listeners get plain dicts on background threads; the window
marshals them onto the GUI thread itself.
"""

from __future__ import annotations

import shutil
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from console import paths
from console.analysis import finished_run
from console.history import HistoryError, HistoryWriter
from console.run import partition as console_partition
from console.run.console_cpu import ConsoleCpu, validity_notes
from console.run.runner import Outcome, WorkerRun
from console.telemetry.hub import TelemetryHub
from engines.spec import RunSpec
from engines.worker import worker_main

Listener = Callable[[dict[str, Any]], None]


class RunSession:
    """Start with `start()`, stop early with `cancel()`, get the final record from `wait()`.

    Events passed to `listener`: every worker protocol event, plus console events
    {"type": "started", run_id, t0_ns, spec}, {"type": "samples", rows}, {"type": "sources", sources}
    and finally {"type": "finished", run_id, status, message, summary, spec, environment, profile, ops, card}
    (profile: the worker's profile event minus its op rows, or None when the run was not profiled; card: the machine
    card its findings were judged against, None without one). The record is console.analysis.finished_run's.
    """

    # ---- Public API
    def __init__(self, spec: RunSpec, writer: HistoryWriter, listener: Listener | None = None,
                 telemetry_hz: float | None = 10.0, worker_entry: Callable[..., None] = worker_main,
                 hub: TelemetryHub | None = None, remote: Callable[..., Any] | None = None, pool: Any = None,
                 partition: Any = None, rules: Any = None,
                 noise_floor: dict[str, Any] | None = None):
        """`hub`: the console's shared telemetry (the window's); without one, the session samples at
        `telemetry_hz` itself for the run's duration (the CLI), or not at all when that is None.

        `remote`: run elsewhere instead of in a local worker — a factory (console.cluster.dispatch.RemoteRun
        with its address bound) called as remote(spec, on_event, on_end, on_samples=, on_sources=, on_node=,
        telemetry_hz=, run_id=). The node samples its own telemetry, so the session's hub is not used; the run
        is recorded under the node's host once the node reports (`{"type": "node", ...}` to the listener).

        `pool`: the window's console.run.worker_pool.WorkerPool: the run takes its spare worker when it has one (the
        environment's `worker_start` says warm, warming or cold) and a new spare is made when the run has ended.

        `partition`: a console.run.partition.Partition: while the run lasts the console and its sampler keep to its
        console cores and the worker gets its worker cores; the environment's `partition` records both sets (or
        "not confined (why)"), and the summary's `console_cpu` what the console used while measuring.

        `rules`: the validity rules the run is judged by (console.analysis.rules_file.RulesInForce; None: the
        defaults and the data folder's rules.toml). They are stored with the run (environment.validity_rules),
        and a run measuring until stable aims for them."""
        from console.analysis import rules_file

        self.spec = spec.validate()
        self.rules = rules if rules is not None else rules_file.in_force()
        if noise_floor is None and remote is None and getattr(writer, "path", None):
            # the stored floor (the card's, or a recent quick one): the run aims for it and is judged by it
            from console.machine import noise

            noise_floor = noise.usable(spec.target, writer.path)
        rules_file.aim(self.spec, self.rules.rules, noise_floor)  # until stable: the allowance it is judged by
        self.run_id = uuid.uuid4().hex
        self._writer = writer
        self._listener = listener or (lambda event: None)
        self._telemetry_hz = telemetry_hz
        self._entry = worker_entry
        self._chunks: list[np.ndarray] = []
        self._t_chunks: list[np.ndarray] = []
        self._samples: list[tuple] = []
        self._loaded: dict[str, Any] | None = None
        self._environment: dict[str, Any] = {"validity_rules": self.rules.to_dict()}
        self._phases: list[list[Any]] = []
        self._profile: dict[str, Any] | None = None  # the profile event minus its ops (analyze)
        self._ops: list[dict[str, Any]] = []
        self._record: dict[str, Any] | None = None
        self._finished = threading.Event()
        self._hub = hub
        self._own_hub = hub is None and bool(telemetry_hz)
        self._subscription: int | None = None
        self._remote = remote
        # The machine's noise floor the run is judged against (console.machine.noise; the CLI and a sweep measure one before
        # the run when none is usable); None: none was stored at the start, looked up again when the run ends.
        self._noise_floor = noise_floor
        self._pool = pool if remote is None else None
        self._host: dict[str, Any] | None = None  # the node's host row, for a remote run
        if remote is not None:
            self._hub, self._own_hub = None, False
        self._partition = partition if partition is not None else console_partition.not_applied(
            "no partition given to this run: the console shares the worker's cores")
        if remote is not None:
            self._partition = console_partition.not_applied("the run is on a cluster node; the console is not there")
        self._hold: console_partition.Hold | None = None
        self._console_cpu: ConsoleCpu | None = None

    def start(self) -> str:
        self.t0_ns = time.perf_counter_ns()
        self._writer.create_run(self.spec.to_dict(), self.run_id)
        self._emit({"type": "started", "run_id": self.run_id, "t0_ns": self.t0_ns, "spec": self.spec.to_dict()})
        if self._remote is None and self._partition.confined:  # before anything is spawned: children inherit it
            self._hold = console_partition.Hold(self._partition, self._hub.pid if self._hub is not None else None)
            self._hold.acquire()
        try:  # anything that fails before the worker runs (spawn, sampler, subscription): no run, cores back
            if self._remote is not None:
                self._worker = self._remote(self.spec, self._on_worker_event, self._on_worker_end,
                                            on_samples=self._on_samples, on_sources=self._on_sources,
                                            on_node=self._on_node, telemetry_hz=self._telemetry_hz, run_id=self.run_id)
            else:
                self._worker = WorkerRun(self.spec, self._on_worker_event, self._on_worker_end, entry=self._entry,
                                         pool=self._pool, partition=self._partition)
            if self._own_hub:
                self._hub = TelemetryHub(rate_hz=self._telemetry_hz)
                self._hub.start()
                if self._hold is not None:
                    self._hold.add_sampler(self._hub.pid)
            if self._remote is None:
                self._console_cpu = ConsoleCpu(self._hub.pid if self._hub is not None else None)
            if self._hub is not None:
                self._subscription = self._hub.subscribe(self._on_samples, self._on_sources)
            self._worker.start()
        except BaseException:
            if self._hold is not None:
                self._hold.release()
            raise
        if self._remote is None:
            self._environment["worker_start"] = getattr(self._worker, "start_kind", "cold")
        self._environment["partition"] = console_partition.environment(
            self._partition, self._hold, getattr(self._worker, "placement", None))
        if self._hub is not None:
            self._hub.watch(self._worker.pid)
        return self.run_id

    def cancel(self) -> None:
        self._worker.cancel()

    @property
    def noise_floor(self) -> dict[str, Any] | None:
        """The machine's noise floor this run is judged by (and, until stable, aims for); None: none known yet."""
        return self._noise_floor

    def use_noise_floor(self, floor: dict[str, Any] | None) -> None:
        """Before `start()`: judge by `floor` and, measuring until stable, aim for it (the window measures a quick
        floor off the GUI thread after making the session, console.ui.run_controller); None changes nothing."""
        if floor is None or self._remote is not None:
            return
        from console.analysis import rules_file

        self._noise_floor = floor
        rules_file.aim(self.spec, self.rules.rules, floor)

    def wait(self, timeout: float | None = None) -> dict[str, Any] | None:
        """Block until the run is finished and stored; returns the `finished` record."""
        self._finished.wait(timeout)
        return self._record

    @property
    def finished(self) -> bool:
        return self._finished.is_set()

    # ---- Private API
    def _emit(self, event: dict[str, Any]) -> None:
        try:
            self._listener(event)
        except Exception:  # noqa: BLE001 — a faulty view must not stop measurement or storage
            import traceback

            traceback.print_exc()

    def _on_worker_event(self, event: dict[str, Any]) -> None:
        kind = event["type"]
        if kind == "latencies":
            self._chunks.append(np.asarray(event["latency_ns"], dtype=np.int64))
            self._t_chunks.append(np.asarray(event["t_ns"], dtype=np.int64))
            self._writer.add_latencies(self.run_id, event["t_ns"], event["latency_ns"])
        elif kind == "phase":
            self._phases.append([event["phase"], event["t_ns"]])
            if self._console_cpu is not None:  # the console's own CPU over the measuring phase only
                if event["phase"] == "measuring":
                    self._console_cpu.start()
                else:
                    self._console_cpu.stop()
        elif kind == "hello":
            self._environment["worker"] = event["versions"]
            self._environment["hygiene"] = event.get("hygiene")
            self._environment["sandbox"] = event.get("sandbox")  # engines.sandbox: what confined the worker
        elif kind == "loaded":
            self._loaded = event
            per_call = (event.get("details") or {}).get("samples_per_call")
            if isinstance(per_call, int) and per_call >= 1:  # a model file's batch, read from its inputs
                self.spec.batch = per_call
            self._environment["engine"] = {"versions": event.get("versions", {}), **event.get("details", {})}
            if event.get("hygiene") is not None:  # sampled over the load (an older worker sent it in hello)
                self._environment["hygiene"] = event["hygiene"]
            self._writer.set_environment(self.run_id, self._environment)
        elif kind == "result" and event.get("hygiene") is not None:  # its sample outlasted a quick load
            self._environment["hygiene"] = event["hygiene"]  # stored with the run's end (finish_run)
        elif kind == "profile":
            event = self._keep_profile(event)
        self._emit(event)

    def _keep_profile(self, event: dict[str, Any]) -> dict[str, Any]:
        """Store the op rows and the Chrome trace with the run; the trace moves next to the history
        (<history dir>/traces/<run_id>.json), since the worker wrote it to a temporary file."""
        ops = list(event.get("ops") or [])
        profile = {k: v for k, v in event.items() if k not in ("v", "type", "ops")}
        profile["notes"] = list(profile.get("notes") or [])
        source = profile.get("trace_path")
        if source:
            try:
                kept = _traces_dir(self._writer) / f"{self.run_id}.json"
                kept.parent.mkdir(parents=True, exist_ok=True)
                shutil.move(source, kept)
                profile["trace_path"] = str(kept)
                self._writer.add_artifact(self.run_id, "trace", str(kept), kept.stat().st_size)
            except OSError as exc:
                profile["trace_path"] = None
                profile["notes"].append(f"the Chrome trace could not be kept ({exc})")
        if ops:
            self._writer.add_ops(self.run_id, ops)
        self._profile, self._ops = profile, ops
        return {**event, **profile}

    def _on_node(self, node: dict[str, Any]) -> None:
        """A remote run reached its node: record the run under that node's host, keep its facts."""
        self._host = dict(node.get("host") or {})
        self._environment["node"] = {"host": self._host, "node_id": node.get("node_id"),
                                     "labels": node.get("labels") or {}}
        self._writer.set_host(self.run_id, self._host)
        self._writer.set_environment(self.run_id, self._environment)
        self._emit({"type": "node", "run_id": self.run_id, **self._environment["node"]})

    def _on_samples(self, rows: list[tuple]) -> None:
        self._writer.add_samples(self.run_id, rows)
        # Kept for the run's energy and telemetry summary; per-core rows are many and summarised by cpu.util.
        self._samples.extend(row for row in rows if not _is_per_core(row[2]))
        self._emit({"type": "samples", "rows": rows})

    def _on_sources(self, sources: list[dict[str, Any]]) -> None:
        self._environment["telemetry"] = sources
        self._emit({"type": "sources", "sources": sources})

    def _measurement_window(self) -> tuple[int, int] | None:
        """From the `measuring` phase to the next phase (or now): what energy and telemetry are summarised over."""
        starts = [t for phase, t in self._phases if phase == "measuring"]
        if not starts:
            return None
        later = [t for phase, t in self._phases if t > starts[0] and phase != "measuring"]
        return starts[0], (later[0] if later else time.perf_counter_ns())

    def _on_worker_end(self, outcome: Outcome) -> None:
        console_cpu = self._console_cpu.result() if self._console_cpu is not None else None
        if self._hold is not None:
            self._hold.release()  # the console and the sampler get their cores back: nothing measures now
        if self._hub is not None:
            self._hub.unsubscribe(self._subscription)
            self._hub.watch(None)
            if self._own_hub:
                self._hub.stop()
        measured = finished_run.Measured(
            latency_ns=np.concatenate(self._chunks) if self._chunks else np.empty(0, dtype=np.int64),
            t_ns=np.concatenate(self._t_chunks) if self._t_chunks else np.empty(0, dtype=np.int64),
            result=outcome.result, loaded=self._loaded, samples=self._samples,
            window_ns=self._measurement_window(), phases=self._phases, profile=self._profile, ops=self._ops,
            t0_ns=self.t0_ns)
        cost_warnings, cost_notes = validity_notes(self._environment.get("partition"), console_cpu,
                                                   local=self._remote is None)
        context = finished_run.Context(
            run_id=self.run_id, spec=self.spec.to_dict(), environment=self._environment, rules=self.rules.rules,
            noise_floor=self._noise_floor_used(), warnings=self._telemetry_death() + cost_warnings,
            notes=cost_notes, console_cpu=console_cpu)
        measured_count = int(measured.latency_ns.size)
        finished = finished_run.finish(measured, context, outcome, _Reads(self, measured_count))
        try:
            self._writer.finish_run(self.run_id, finished.status, summary=finished.summary, error=finished.error,
                                    environment=self._environment)
        except HistoryError:  # the writer stopped: the run still ends, and says it was not stored
            pass
        if finished.lost is None:  # the run's end itself may not reach the disk
            lost = storage_problem(self._writer, self.run_id, measured_count)
            if lost is not None:
                finished.status, finished.message = finished_run.failed_storing(
                    finished.summary, lost, finished.status, finished.message)
        self._record = finished_run.record(finished, measured, context)
        self._finished.set()
        self._emit(self._record)
        if self._pool is not None:  # nothing of this run measures any more: the next run's worker can warm up
            self._pool.prepare(self.spec.engine)

    def _noise_floor_used(self) -> dict[str, Any] | None:
        """The noise floor given, else this host's recent stored one (never measured here: the run is over and a
        measurement now would delay its result); None for a run on a cluster node, whose noise is not this host's."""
        if self._remote is not None:
            return None
        if self._noise_floor is None and getattr(self._writer, "path", None):
            from console.machine import noise

            try:
                self._noise_floor = noise.recent(self.spec.target, self._writer.path)
            except Exception:  # noqa: BLE001 — no floor is judged by the plain tolerance, and says so
                self._noise_floor = None
        return self._noise_floor

    def _noise_floor_now(self, summary: dict[str, Any]) -> bool:
        """A run the noise floor made INVALID (unsteady beyond it, or a drift beyond its wander) takes a quick draw
        now, after the worker has exited (console.machine.noise.measure_after_run, ~5 s), and is judged again by it: True
        when it took one. Why: on a shared VM the machine's noise changes from minute to minute (a pool of calm
        draws, then runs whose windows jittered 16–60%), so the floor measured minutes earlier is not the noise
        this run met; the draw right after it is the nearest measurement that does not disturb it. A drifting or
        unsteady workload stays so on a calm machine. Not for a run on a cluster node, nor without a floor."""
        failed = {reason.get("rule") for reason in summary.get("invalid_reasons") or []}
        if self._remote is not None or self._noise_floor is None or not failed & {"stability", "drift"} \
                or not getattr(self._writer, "path", None):
            return False
        from console.machine import noise

        self._emit({"type": "phase", "phase": "noise floor", "t_ns": time.perf_counter_ns()})
        fresh = noise.measure_after_run(self.spec.target, self._writer.path, self._noise_floor)
        if fresh is None:
            return False
        self._noise_floor = fresh
        return True

    def _telemetry_death(self) -> list[str]:
        """A warning when the telemetry sampler died, with what its samples of this run cover."""
        death = getattr(self._hub, "death", None) if self._hub is not None else None
        if not death:
            return []
        from console.telemetry.coverage import sampler_death_note

        return [sampler_death_note(death, self.t0_ns, [row[0] for row in self._samples],
                                   self._measurement_window())]


def storage_problem(writer: HistoryWriter, run_id: str, measured: int) -> dict[str, Any] | None:
    """What of a run the history could not store, as the summary's `storage` block; None when all of it is
    stored. Flushes first, so rows still waiting for a failing disk count as missing."""
    try:
        writer.flush()
    except (HistoryError, RuntimeError):  # stopped or closed: what it holds is counted below
        pass
    unstored = getattr(writer, "unstored", None)
    return finished_run.storage_lost(measured, unstored(run_id) if unstored is not None else None)


class _Reads:
    """What a finished run's record reads (console.analysis.finished_run.Reads): this session's history, its
    host's machine card and noise floor."""

    def __init__(self, session: RunSession, measured: int):
        self._session, self._measured = session, measured

    def noise_floor_now(self, summary: dict[str, Any]) -> dict[str, Any] | None:
        return self._session._noise_floor if self._session._noise_floor_now(summary) else None

    def card(self) -> dict[str, Any] | None:
        """This host's card; none for a run on a cluster node, whose machine (the node) this console may not hold."""
        session = self._session
        path = getattr(session._writer, "path", None)
        if not path or session._host:
            return None
        from console.machine.cards import card_to_judge_by

        return card_to_judge_by(session.spec.target, path)

    def lost(self) -> dict[str, Any] | None:
        return storage_problem(self._session._writer, self._session.run_id, self._measured)

    def baseline(self) -> tuple[dict[str, Any], dict[str, Any], np.ndarray] | None:
        """This run's configuration's baseline, in the series of the host it is recorded under (a remote run's:
        the node's)."""
        from console.analysis.baseline import stored_baseline
        from console.analysis.fingerprint import configuration, fingerprint
        from console.history import jsoncols, open_reader

        session = self._session
        writer = session._writer
        path = getattr(writer, "path", None)
        if path is None or not Path(path).is_file():
            return None
        spec = jsoncols.finite(session.spec.to_dict())
        host_id, hostname = getattr(writer, "host_id", None), getattr(writer, "hostname", None)
        if session._host:  # a remote run: its series and baseline are the node's
            host_id, hostname = session._host.get("host_id"), session._host.get("hostname")
        run = {"run_id": session.run_id, "spec": spec, "environment": session._environment, "hostname": hostname,
               "fingerprint": fingerprint(configuration(spec, session._environment, hostname, host_id))}
        with open_reader(path) as reader:
            stored = stored_baseline(reader, run)
        return (run, *stored) if stored is not None else None


def _traces_dir(writer: HistoryWriter) -> Path:
    """Traces live beside the history database they belong to (the user's data directory by default)."""
    db = getattr(writer, "path", None)
    return (Path(db).parent if db else paths.data_dir()) / "traces"


def _is_per_core(metric: str) -> bool:
    return metric.startswith("cpu") and metric[3:4].isdigit()
