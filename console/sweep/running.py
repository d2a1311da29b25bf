"""Running a sweep: its possible points one at a time, each an ordinary stored run, grouped as one sweep.

- **Points run one at a time** (concurrent points would measure each other), each through `RunSession`, so each
  is a normal run in the history, tagged with `sweep_id` and its point. A point that fails (its worker dies, its
  target is missing at load) is recorded as failed and the sweep goes on: the points that ran are kept.
- **Impossible points are skipped** (they appear in the record as `skipped`, with the reason) unless
  `strict=True`, which refuses the whole sweep before anything runs.
- **Cancel stops after the current point** (`cancelled()` is asked between points); `SweepRun.stop(now=True)`
  also cancels the current run (the CLI's second Ctrl+C, the window's second Stop).

Qt-free: the window drives `SweepRun` from a plain thread and marshals `on_point` to the GUI itself.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from console.history import HistoryWriter
from console.sweep.expansion import expand
from console.sweep.grid import SweepGrid
from console.sweep.knee import KNEE_RULE, analyse
from engines.spec import RunSpec

PointCallback = Callable[[dict[str, Any]], None]


class SweepRun:
    """One sweep: `run()` blocks until every point ran (or the sweep was stopped) and returns the record.

    Thread-safe to `stop()` from another thread. `on_point(event)` gets plain dicts on the sweep's thread:
    {"type": "sweep_started", sweep_id, total, points, impossible}, {"type": "point_started", index, total,
    label, run_id}, {"type": "point_finished", index, total, result} and {"type": "sweep_finished", record}.
    `on_event(index, event)` gets every session event of the current point (live plots, progress);
    `session_options` are RunSession keywords (telemetry_hz, worker_entry, hub); `remote_for(point)` gives the
    RemoteRun factory of a point that runs on a lab node (an `on` axis, or a sweep sent to a cluster), or None.
    `noise_floor(target)`: this machine's noise floor for a target (console.machine.noise.noise_floor_for: the stored one,
    else a quick ~3-s measurement), asked once per target on the sweep's thread before its first local point —
    between points, so nothing of the sweep disturbs it and the window's GUI thread never waits for it; every
    local point is judged against it and, measuring until stable, aims for it.
    """

    def __init__(self, base: Mapping[str, Any], grid: SweepGrid, writer: HistoryWriter, *, name: str = "",
                 on_point: PointCallback | None = None, cancelled: Callable[[], bool] | None = None,
                 targets: Sequence[Mapping[str, Any]] | None = None, strict: bool = False,
                 on_event: Callable[[int, dict[str, Any]], None] | None = None,
                 session_options: Mapping[str, Any] | None = None,
                 remote_for: Callable[[Mapping[str, Any]], Any] | None = None,
                 noise_floor: Callable[[str], dict[str, Any] | None] | None = None):
        self.expansion = expand(base, grid, targets=targets, strict=strict)  # raises before anything runs
        self.base, self.grid, self.name = dict(base), grid, name
        self._writer = writer
        self._on_point = on_point or (lambda event: None)
        self._cancelled = cancelled or (lambda: False)
        self._on_event = on_event
        self._session_options = dict(session_options or {})
        self._remote_for = remote_for  # point → RunSession `remote=` factory (a lab node), None: run here
        self._floor_of = noise_floor
        self._floors: dict[str, dict[str, Any] | None] = {}  # target → its floor, asked once
        self._stop = threading.Event()
        self._stop_now = False
        self._lock = threading.Lock()
        self._session = None  # the running point's session, once started (guarded by _lock)
        self.sweep_id: str | None = None

    def _floor(self, target: str) -> dict[str, Any] | None:
        if target not in self._floors:
            try:
                self._floors[target] = self._floor_of(target)
            except Exception:  # noqa: BLE001 — a point without a floor is judged by the plain tolerance, and says so
                self._floors[target] = None
        return self._floors[target]

    @property
    def total(self) -> int:
        return len(self.expansion.points)

    def stop(self, now: bool = False) -> None:
        """Stop after the current point; `now` also cancels the current run (its measurements are kept)."""
        self._stop.set()
        if now:
            with self._lock:
                self._stop_now = True
                session = self._session
            if session is not None:
                session.cancel()

    def run(self) -> dict[str, Any]:
        """Run every possible point, one at a time; return the sweep record.

        Record: {sweep_id, name, status, grid, base, varying, points: [{index, point, label, run_id, status,
        message, latency_ms: {p50, p99}, throughput_per_s, valid, iterations}], skipped: [{point, label, reason}],
        knee, knees, knee_axis, knee_rule}.
        """
        from console.run.session import RunSession

        varying = self.grid.varying()
        self.sweep_id = self._writer.create_sweep(self.name, self.grid.to_dict(), self.base)
        total = self.total
        self._notify({"type": "sweep_started", "sweep_id": self.sweep_id, "total": total,
                      "points": [{k: p[k] for k in ("index", "point", "label")} for p in self.expansion.points],
                      "impossible": self.expansion.impossible})
        results: list[dict[str, Any]] = []
        stopped = False
        for planned in self.expansion.points:
            index = planned["index"]
            if stopped or self._stop.is_set() or self._cancelled():
                stopped = True
                results.append(point_result(planned, status="not run",
                                            message="the sweep was stopped before this point"))
                continue
            listener = None if self._on_event is None else (lambda event, i=index: self._on_event(i, event))
            session, started = None, False
            try:
                options = dict(self._session_options)
                remote = self._remote_for(planned["point"]) if self._remote_for is not None else None
                if remote is not None:
                    options["remote"] = remote
                elif self._floor_of is not None and options.get("noise_floor") is None:
                    options["noise_floor"] = self._floor(str(planned["spec"].get("target") or "cpu"))
                session = RunSession(RunSpec.from_dict(planned["spec"]), self._writer, listener=listener,
                                     **options)
                run_id = session.start()
                started = True
                with self._lock:
                    self._session = session  # only now can stop(now=True) cancel it
                    cancel_now = self._stop_now
                if cancel_now:
                    session.cancel()
                self._writer.tag_run(run_id, self.sweep_id, planned["point"])
                self._notify({"type": "point_started", "index": index, "total": total, "label": planned["label"],
                              "run_id": run_id, "point": planned["point"]})
                record = dict(session.wait() or {})
                node = (record.get("environment") or {}).get("node") or {}
                record["hostname"] = (node.get("host") or {}).get("hostname") or getattr(self._writer, "hostname",
                                                                                         None)
            except Exception as exc:  # noqa: BLE001 — one point that cannot start must not end the sweep
                if started:  # never leave a worker running behind the sweep's back
                    session.cancel()
                    session.wait(30)
                record = {"status": "failed", "run_id": session.run_id if started else None,
                          "message": f"the point could not start: {type(exc).__name__}: {exc}"}
            finally:
                with self._lock:
                    self._session = None
            result = point_result(planned, record=record)
            results.append(result)
            self._notify({"type": "point_finished", "index": index, "total": total, "result": result})
        status = sweep_status(results, stopped)
        analysis = analyse(results, varying)
        summary = {"status": status, "points": len(results), "counts": _counts(results),
                   "impossible": self.expansion.impossible, "knee": analysis["knee"], "knees": analysis["knees"],
                   "knee_axis": analysis["knee_axis"], "knee_rule": KNEE_RULE,
                   "not_run": [r["point"] for r in results if r["status"] == "not run"]}
        self._writer.finish_sweep(self.sweep_id, status, summary=summary)
        self._writer.flush()
        record = {"sweep_id": self.sweep_id, "name": self.name, "status": status, "grid": self.grid.to_dict(),
                  "base": self.base, "varying": varying, "points": results,
                  "skipped": [{**p, "status": "skipped"} for p in self.expansion.impossible], **analysis,
                  "knee_rule": KNEE_RULE}
        self._notify({"type": "sweep_finished", "record": record})
        return record

    def _notify(self, event: dict[str, Any]) -> None:
        try:
            self._on_point(event)
        except Exception:  # noqa: BLE001 — a faulty view must not stop the sweep
            import traceback

            traceback.print_exc()


def sweep_status(results: Sequence[Mapping[str, Any]], stopped: bool = False) -> str:
    """cancelled (stopped, or a point was), completed (every point that ran did), partial (some), failed (none)."""
    ran = [r for r in results if r["status"] not in ("not run", "skipped")]
    completed = sum(r["status"] == "completed" for r in ran)
    if stopped or any(r["status"] == "cancelled" for r in ran):
        return "cancelled"
    if completed == len(ran) and ran:
        return "completed"
    return "partial" if completed else "failed"


def point_result(planned: Mapping[str, Any], record: Mapping[str, Any] | None = None, status: str | None = None,
                 message: str = "") -> dict[str, Any]:
    """A point's entry in the sweep record, from its plan and its run's record (live, or read from the history)."""
    record = record or {}
    summary = record.get("summary") or {}
    latency = summary.get("latency_ms") or {}
    return {"index": planned["index"], "point": planned["point"], "label": planned["label"],
            "run_id": record.get("run_id"), "status": status or record.get("status") or "failed",
            "message": message or record.get("message") or "",
            "latency_ms": {"p50": latency.get("p50"), "p99": latency.get("p99"), "mean": latency.get("mean")},
            "throughput_per_s": summary.get("throughput_per_s"), "valid": bool(summary.get("valid")),
            "iterations": summary.get("iterations"), "hostname": record.get("hostname"),
            "until_stable": (summary.get("until_stable") or {}).get("text")}  # --until-stable: windows, spread


def _counts(results: Sequence[Mapping[str, Any]]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for r in results:
        counts[r["status"]] = counts.get(r["status"], 0) + 1
    return counts
