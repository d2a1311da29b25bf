"""Sweeps: one action runs a grid of configurations, each point an ordinary stored run, grouped as one sweep.

Why the rules are what they are:

- **Every point is validated before anything runs.** A sweep takes minutes; finding out at point 7 that bf16 does
  not exist on ONNX Runtime wastes them. `expand` builds and validates every point's RunSpec up front and, given
  the discovered targets, checks that the target exists and that the engine offers the precision there. A point
  that cannot run is *impossible*: it is listed with its reason. `run_sweep` skips impossible points (they appear
  in the record as `skipped`, with the reason) unless `strict=True`, which refuses the whole sweep. The CLI is
  strict unless `--skip-impossible` is given, so a typo never silently shrinks a grid; the window skips and shows
  the skipped rows. A grid with no possible point is always an error.
- **A value that is wrong on its own is an error, not an impossible point**: `--batch 1,x`, `--precision fp64`,
  `--batch 0`, duplicates, empty lists are refused naming the option and the value.
- **Points run one at a time** (concurrent points would measure each other), each through `RunSession`, so each is
  a normal run in the history, tagged with `sweep_id` and its point. A point that fails (its worker dies, its
  target is missing at load) is recorded as failed and the sweep goes on: the points that ran are kept.
- **Cancel stops after the current point** (`cancelled()` is asked between points); `SweepRun.stop(now=True)` also
  cancels the current run (the CLI's second Ctrl+C, the window's second Stop).

The knee (`KNEE_RULE`): points are grouped into series by every swept axis but one, the *knee axis* (batch if it
was swept with ≥ 2 values, else request rate, else threads). Along each series, the knee is the smallest value of
the knee axis whose throughput reaches `KNEE_FRACTION` (90%) of the series' highest throughput: past it, raising
the axis buys at most the last 10% of throughput, usually at a steep price in p99 latency, which the record
states (`gain_beyond_pct`, `p99_growth_beyond_pct`: from the knee to the series' last point). This "fraction of
the maximum" rule is used rather than "the first step gaining < 10%" because one noisy step cannot fool it.
The sweep's `knee` is the knee of the series with the highest throughput; `knees` has every series'.
A series with one completed point has no curve and no knee.

Qt-free: the window drives `SweepRun` from a plain thread and marshals `on_point` to the GUI itself.
"""

from __future__ import annotations

import dataclasses
import itertools
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from console.history import HistoryWriter
from engines import backends
from engines.spec import PRECISIONS, RunSpec, SpecError

# Grid axes, outermost first: batch varies fastest, so a series' points run back to back.
AXES = ("engine", "target", "precision", "threads", "qps", "batch")
AXIS_OPTIONS = {"batch": "--batch", "threads": "--threads", "precision": "--precision", "engine": "--engine",
                "target": "--target", "qps": "--qps"}
AXIS_UNITS = {"batch": "batch size (samples)", "qps": "request rate (queries/s)", "threads": "threads"}
KNEE_AXES = ("batch", "qps", "threads")
AXIS_NOUNS = {"batch": "batch", "qps": "request rate", "threads": "thread count"}
KNEE_FRACTION = 0.9
KNEE_RULE = (f"knee = along each series, the smallest value whose throughput reaches {KNEE_FRACTION:.0%} of the "
             "series' highest; the sweep's knee is that of the series with the highest throughput")
MAX_POINTS = 512
_SPEC_PREFIX = "\x00spec:"  # marks a reason that came from a SpecError (internal)
POINT_STATUSES = ("completed", "failed", "cancelled", "interrupted", "skipped", "not run")


class SweepError(ValueError):
    """A sweep cannot start; the message names the option (axis) and the value at fault."""

    def __init__(self, axis: str, message: str, impossible: list[dict[str, Any]] | None = None,
                 headline: str = ""):
        super().__init__(f"{axis}: {message}" if axis else message)
        self.axis = axis
        self.detail = message
        self.impossible = impossible or []
        self.headline = headline  # set when the message lists impossible points: the line before the list


# ---- Grid
@dataclass
class SweepGrid:
    """The values to sweep per axis; an empty axis keeps the base spec's value. `threads` may hold None
    (the engine's default); `qps` needs the server scenario."""

    batch: list[int] = field(default_factory=list)
    threads: list[int | None] = field(default_factory=list)
    precision: list[str] = field(default_factory=list)
    engine: list[str] = field(default_factory=list)
    target: list[str] = field(default_factory=list)
    qps: list[float] = field(default_factory=list)

    @classmethod
    def parse(cls, **texts: str | None) -> SweepGrid:
        """From comma-separated text per axis (CLI options, the window's fields); None or "" = not swept.

        `SweepGrid.parse(batch="1,2,4", precision="fp32, bf16")`. Raises SweepError naming the axis and value.
        """
        unknown = sorted(set(texts) - set(AXES))
        if unknown:
            raise SweepError(unknown[0], f"not a sweep axis; axes are {', '.join(AXES)}")
        values: dict[str, list[Any]] = {}
        for axis, text in texts.items():
            if text is None:
                continue
            values[axis] = _parse_list(axis, str(text))
        return cls(**values).validate()

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SweepGrid:
        unknown = sorted(set(data) - set(AXES))
        if unknown:
            raise SweepError(unknown[0], f"not a sweep axis; axes are {', '.join(AXES)}")
        return cls(**{axis: list(values) for axis, values in data.items()})

    def to_dict(self) -> dict[str, list[Any]]:
        """Only the swept axes, in AXES order (what the history stores)."""
        return {axis: list(getattr(self, axis)) for axis in AXES if getattr(self, axis)}

    def validate(self) -> SweepGrid:
        """Each value on its own: types, ranges, known names, no duplicates. Combinations are `expand`'s job."""
        if not self.to_dict():
            raise SweepError("", "the grid is empty: give at least one axis to sweep (--batch 1,2,4,8, "
                                 "--threads 1,2, --precision fp32,bf16, --engine torch,onnxruntime, --target, --qps)")
        for axis in AXES:
            seen: set[Any] = set()
            for value in getattr(self, axis):
                _check_value(axis, value)
                if value in seen:
                    raise SweepError(AXIS_OPTIONS[axis], f"{_show(value)} appears twice; give each value once")
                seen.add(value)
        size = 1
        for values in self.to_dict().values():
            size *= len(values)
        if size > MAX_POINTS:
            raise SweepError("", f"the grid has {size} points; at most {MAX_POINTS} run in one sweep "
                                 "(split it into several sweeps)")
        return self

    @property
    def size(self) -> int:
        size = 1
        for values in self.to_dict().values():
            size *= len(values)
        return size

    def varying(self) -> list[str]:
        """The axes with more than one value (those that tell points apart)."""
        return [axis for axis, values in self.to_dict().items() if len(values) > 1]


def supports_qps() -> bool:
    """True when this build's RunSpec carries `scenario_options` (the server scenario's request rate)."""
    return any(f.name == "scenario_options" for f in dataclasses.fields(RunSpec))


# ---- Expansion
@dataclass
class Expansion:
    points: list[dict[str, Any]]  # {"index", "point", "label", "spec"}: validated, runnable
    impossible: list[dict[str, Any]]  # {"point", "label", "reason"}


def expand(base: Mapping[str, Any], grid: SweepGrid, targets: Sequence[Mapping[str, Any]] | None = None,
           strict: bool = False) -> Expansion:
    """Every point of the grid on top of `base` (a RunSpec dict), validated before anything runs.

    `targets` (console.targets.discover_targets()) adds the checks only the machine can answer: does the target
    exist, does the engine run there, does it offer the precision. Raises SweepError for a bad grid, for a
    value wrong on its own, when no point is possible, and (strict) when any point is impossible.
    """
    grid = grid.validate()
    base = dict(base)
    try:
        RunSpec.from_dict(base)  # the shape only: the base alone may be invalid where every point is fine
    except SpecError as exc:
        raise SweepError(exc.field, str(exc).split(": ", 1)[1]) from None
    axes = grid.to_dict()
    if "qps" in axes:
        _check_qps_possible(base)
    varying = grid.varying()
    _check_each_value(base, axes)
    points, impossible = [], []
    for combo in itertools.product(*axes.values()):
        point = dict(zip(axes, combo, strict=True))
        label = point_label(point, varying)
        reason, spec = _point_spec(base, point, targets)
        if reason:
            impossible.append({"point": point, "label": label, "reason": reason})
            if reason.startswith(_SPEC_PREFIX):  # a spec field refused this point: keep its name for the message
                field_name, _, detail = reason[len(_SPEC_PREFIX):].partition(": ")
                impossible[-1].update(reason=detail, field=field_name)
        else:
            points.append({"index": len(points), "point": point, "label": label, "spec": spec})
    if not points:
        reasons = {(p.get("field", ""), p["reason"]) for p in impossible}
        if len(reasons) == 1:  # the same reason everywhere: the base (or the one target) is at fault, say just that
            field_name, reason = reasons.pop()
            raise SweepError(field_name, reason + (f" (all {len(impossible)} points)" if len(impossible) > 1 else ""),
                             impossible)
        headline = "no point of the grid can run"
        raise SweepError("", f"{headline}: {impossible_text(impossible)}", impossible, headline)
    if strict and impossible:
        headline = f"{len(impossible)} of {grid.size} points cannot run"
        raise SweepError("", f"{headline}: {impossible_text(impossible)}", impossible, headline)
    return Expansion(points, impossible)


def impossible_lines(impossible: Sequence[Mapping[str, Any]]) -> list[str]:
    """'onnxruntime · bf16 · b1, onnxruntime · bf16 · b2 — reason': one line per distinct reason, naming its points."""
    by_reason: dict[str, list[str]] = {}
    for p in impossible:
        reason = f"{p['field']}: {p['reason']}" if p.get("field") else p["reason"]
        by_reason.setdefault(reason, []).append(p["label"] or "the point")
    return [f"{', '.join(labels)} — {reason}" for reason, labels in by_reason.items()]


def impossible_text(impossible: Sequence[Mapping[str, Any]]) -> str:
    return " | ".join(impossible_lines(impossible))


def point_label(point: Mapping[str, Any], axes: Sequence[str] | None = None) -> str:
    """'b4 · 2 threads · bf16' — the axes that tell points apart (all of the point's when `axes` is None)."""
    parts = []
    for axis in AXES:
        if axis not in point or (axes is not None and axis not in axes):
            continue
        value = point[axis]
        if axis == "batch":
            parts.append(f"b{value}")
        elif axis == "threads":
            parts.append("default threads" if value is None else f"{value} thread{'s' if value != 1 else ''}")
        elif axis == "qps":
            parts.append(f"{_show(value)} qps")
        else:
            parts.append(str(value))
    return " · ".join(parts)


# ---- Running
PointCallback = Callable[[dict[str, Any]], None]


class SweepRun:
    """One sweep: `run()` blocks until every point ran (or the sweep was stopped) and returns the record.

    Thread-safe to `stop()` from another thread. `on_point(event)` gets plain dicts on the sweep's thread:
    {"type": "sweep_started", sweep_id, total, points, impossible}, {"type": "point_started", index, total,
    label, run_id}, {"type": "point_finished", index, total, result} and {"type": "sweep_finished", record}.
    `on_event(index, event)` gets every session event of the current point (live plots, progress).
    """

    def __init__(self, base: Mapping[str, Any], grid: SweepGrid, writer: HistoryWriter, *, name: str = "",
                 on_point: PointCallback | None = None, cancelled: Callable[[], bool] | None = None,
                 targets: Sequence[Mapping[str, Any]] | None = None, strict: bool = False,
                 on_event: Callable[[int, dict[str, Any]], None] | None = None,
                 session_options: Mapping[str, Any] | None = None):
        self.expansion = expand(base, grid, targets=targets, strict=strict)  # raises before anything runs
        self.base, self.grid, self.name = dict(base), grid, name
        self._writer = writer
        self._on_point = on_point or (lambda event: None)
        self._cancelled = cancelled or (lambda: False)
        self._on_event = on_event
        self._session_options = dict(session_options or {})
        self._stop = threading.Event()
        self._stop_now = False
        self._lock = threading.Lock()
        self._session = None  # the running point's session, once started (guarded by _lock)
        self.sweep_id: str | None = None

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
        from console.session import RunSession

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
                results.append(_result(planned, status="not run", message="the sweep was stopped before this point"))
                continue
            listener = None if self._on_event is None else (lambda event, i=index: self._on_event(i, event))
            session, started = None, False
            try:
                session = RunSession(RunSpec.from_dict(planned["spec"]), self._writer, listener=listener,
                                     **self._session_options)
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
                record = session.wait() or {}
            except Exception as exc:  # noqa: BLE001 — one point that cannot start must not end the sweep
                if started:  # never leave a worker running behind the sweep's back
                    session.cancel()
                    session.wait(30)
                record = {"status": "failed", "run_id": session.run_id if started else None,
                          "message": f"the point could not start: {type(exc).__name__}: {exc}"}
            finally:
                with self._lock:
                    self._session = None
            result = _result(planned, record=record)
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


def run_sweep(base: Mapping[str, Any], grid: SweepGrid, writer: HistoryWriter,
              on_point: PointCallback | None = None, cancelled: Callable[[], bool] | None = None,
              **options: Any) -> dict[str, Any]:
    """Run every possible point of `grid` on top of `base`, one at a time; return the sweep record.

    Record: {sweep_id, name, status, grid, base, varying, points: [{index, point, label, run_id, status, message,
    latency_ms: {p50, p99}, throughput_per_s, valid, iterations}], skipped: [{point, label, reason}], knee,
    knees, knee_axis, knee_rule}. Options: name, targets, strict, on_event, session_options (RunSession keywords,
    e.g. telemetry_hz, worker_entry, hub).
    """
    return SweepRun(base, grid, writer, on_point=on_point, cancelled=cancelled, **options).run()


def sweep_status(results: Sequence[Mapping[str, Any]], stopped: bool = False) -> str:
    ran = [r for r in results if r["status"] not in ("not run", "skipped")]
    completed = sum(r["status"] == "completed" for r in ran)
    if stopped or any(r["status"] == "cancelled" for r in ran):
        return "cancelled"
    if completed == len(ran) and ran:
        return "completed"
    return "partial" if completed else "failed"


# ---- Analysis
def analyse(points: Sequence[Mapping[str, Any]], varying: Sequence[str] | None = None) -> dict[str, Any]:
    """The knee axis, every series' knee and the sweep's knee (see the module docstring for the rule)."""
    completed = [p for p in points if p.get("status") == "completed" and p.get("throughput_per_s")]
    if varying is None:
        varying = _varying_of([p["point"] for p in points])
    knee_axis = next((axis for axis in KNEE_AXES if axis in varying), None)
    if knee_axis is None:
        return {"knee_axis": None, "knees": [], "knee": None}
    knees = []
    for series, members in _series(completed, knee_axis, varying).items():
        if len(members) < 2:
            continue
        members = sorted(members, key=lambda p: _sort_key(p["point"][knee_axis]))
        best = max(p["throughput_per_s"] for p in members)
        knee = next(p for p in members if p["throughput_per_s"] >= KNEE_FRACTION * best)
        last = members[-1]
        p99_knee, p99_last = knee["latency_ms"].get("p99"), last["latency_ms"].get("p99")
        knees.append({
            "series": series, "axis": knee_axis, "value": knee["point"][knee_axis], "index": knee["index"],
            "point": knee["point"], "label": knee["label"], "run_id": knee.get("run_id"),
            "throughput_per_s": knee["throughput_per_s"], "latency_ms": dict(knee["latency_ms"]),
            "fraction_of_max": knee["throughput_per_s"] / best, "max_throughput_per_s": best,
            "beyond": last["label"] if last is not knee else None,
            "gain_beyond_pct": (last["throughput_per_s"] / knee["throughput_per_s"] - 1) * 100
            if last is not knee else None,
            "p99_growth_beyond_pct": (p99_last / p99_knee - 1) * 100
            if last is not knee and p99_knee and p99_last else None,
            # the last value swept is the first to reach 90%: throughput was still rising, the knee may lie beyond
            "at_end": last is knee,
        })
    overall = max(knees, key=lambda k: k["max_throughput_per_s"]) if knees else None
    return {"knee_axis": knee_axis, "knees": knees, "knee": overall}


def knee_text(knee: Mapping[str, Any] | None, knee_axis: str | None = None) -> str:
    """One line for people: where the knee is and what going beyond it buys and costs."""
    if not knee:
        if knee_axis is None:
            return "no knee: sweep batch, request rate or threads with at least two values to find one"
        return "no knee: no series has two completed points"
    text = f"knee at {knee['label']}: {format_rate(knee['throughput_per_s'])} samples/s " \
           f"({knee['fraction_of_max']:.0%} of the series' best)"
    if knee.get("at_end"):
        text += (f"; throughput was still rising at the largest {AXIS_NOUNS.get(knee['axis'], knee['axis'])} "
                 "measured in its series, so the real knee may lie beyond it")
    elif knee.get("beyond"):
        gain = knee["gain_beyond_pct"]
        growth = knee["p99_growth_beyond_pct"]
        text += f"; going on to {knee['beyond']} changes throughput by {gain:+.0f}%"
        text += f" and p99 by {growth:+.0f}%" if growth is not None else " (p99 not backed by enough samples)"
    return text


def chart_data(record: Mapping[str, Any]) -> dict[str, Any]:
    """What widgets.sweep_chart draws, as plain data: one series per combination of the other swept axes."""
    varying = record.get("varying") or _varying_of([p["point"] for p in record["points"]])
    knee_axis = record.get("knee_axis") or next((a for a in KNEE_AXES if a in varying), None) or "batch"
    completed = [p for p in record["points"] if p.get("status") == "completed" and p.get("throughput_per_s")]
    series = []
    for name, members in _series(completed, knee_axis, varying).items():
        members = sorted(members, key=lambda p: _sort_key(p["point"].get(knee_axis)))
        series.append({"name": name or "all points", "points": [
            {"x": p["point"].get(knee_axis, record.get("base", {}).get(knee_axis)),
             "throughput": p["throughput_per_s"], "p50": p["latency_ms"].get("p50"),
             "p99": p["latency_ms"].get("p99"), "label": p["label"], "index": p["index"]} for p in members]})
    knee = record.get("knee")
    return {
        "x_label": AXIS_UNITS.get(knee_axis, knee_axis), "x_axis": knee_axis, "series": series,
        "knee": None if not knee else {"series": knee["series"] or "all points", "x": knee["value"],
                                       "throughput": knee["throughput_per_s"], "p50": knee["latency_ms"].get("p50"),
                                       "p99": knee["latency_ms"].get("p99"),
                                       "label": f"knee ≥ {knee['label']} (still rising)" if knee.get("at_end")
                                       else f"knee: {knee['label']}"},
    }


def record_from_history(sweep: Mapping[str, Any], runs: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Rebuild a sweep record (as `run_sweep` returns it) from `store.get_sweep` and `store.runs_of_sweep`."""
    grid = SweepGrid.from_dict(sweep.get("grid") or {})
    varying = grid.varying()
    stored = sweep.get("summary") or {}
    points = []
    for index, run in enumerate(runs):
        point = run.get("sweep_point") or {}
        planned = {"index": index, "point": point, "label": point_label(point, varying), "spec": run.get("spec")}
        points.append(_result(planned, record={"run_id": run["run_id"], "status": run["status"],
                                               "message": run.get("error") or "", "summary": run.get("summary")}))
    analysis = analyse(points, varying)
    return {"sweep_id": sweep["sweep_id"], "name": sweep.get("name") or "", "status": sweep["status"],
            "created_at": sweep.get("created_at"), "grid": grid.to_dict(), "base": sweep.get("base") or {},
            "varying": varying, "points": points,
            "skipped": [{**p, "status": "skipped"} for p in stored.get("impossible", [])],
            **analysis, "knee_rule": KNEE_RULE}


def report(record: Mapping[str, Any]) -> dict[str, Any]:
    """The CLI's JSON document."""
    return {"sweep_id": record["sweep_id"], "name": record.get("name", ""), "status": record["status"],
            "grid": record["grid"],
            "points": [{"point": p["point"], "label": p["label"], "run_id": p.get("run_id"), "status": p["status"],
                        "message": p.get("message") or "", "latency_ms": p["latency_ms"],
                        "throughput_per_s": p["throughput_per_s"], "valid": p["valid"]} for p in record["points"]],
            "skipped": [{"point": p["point"], "label": p["label"], "reason": p["reason"]}
                        for p in record.get("skipped", [])],
            "knee": record.get("knee"), "knees": record.get("knees", []), "knee_axis": record.get("knee_axis"),
            "knee_rule": record.get("knee_rule", KNEE_RULE)}


# ---- Private API
def _parse_list(axis: str, text: str) -> list[Any]:
    option = AXIS_OPTIONS[axis]
    items = [item.strip() for item in text.split(",")]
    if not any(items):
        raise SweepError(option, "empty list: give comma-separated values, e.g. " + _example(axis))
    if "" in items:
        raise SweepError(option, f"empty value in {text!r}: give comma-separated values, e.g. {_example(axis)}")
    values: list[Any] = []
    for item in items:
        if axis in ("batch", "threads"):
            if axis == "threads" and item.lower() in ("default", "auto"):
                values.append(None)
                continue
            try:
                values.append(int(item))
            except ValueError:
                raise SweepError(option, f"{item!r} is not a whole number (in {text!r})") from None
        elif axis == "qps":
            try:
                values.append(float(item))
            except ValueError:
                raise SweepError(option, f"{item!r} is not a number (in {text!r})") from None
            if values[-1].is_integer():
                values[-1] = int(values[-1])
        else:
            values.append(item)
    return values


def _example(axis: str) -> str:
    return {"batch": "1,2,4,8", "threads": "1,2,4", "precision": "fp32,bf16", "engine": "torch,onnxruntime",
            "target": "cpu,cuda:0", "qps": "10,20,40"}[axis]


def _check_value(axis: str, value: Any) -> None:
    option = AXIS_OPTIONS[axis]
    if axis in ("batch", "threads"):
        if axis == "threads" and value is None:
            return
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise SweepError(option, f"{_show(value)} is not a whole number ≥ 1")
    elif axis == "qps":
        if not isinstance(value, (int, float)) or isinstance(value, bool) or not value > 0 or value != value:
            raise SweepError(option, f"{_show(value)} is not a request rate > 0 (queries per second)")
    elif axis == "precision":
        if value not in PRECISIONS:
            raise SweepError(option, f"unknown precision {value!r}; allowed: {', '.join(PRECISIONS)}")
    elif axis == "engine":
        if value not in backends.names():
            raise SweepError(option, f"unknown engine {value!r}; allowed: {', '.join(backends.names())}")
    elif not isinstance(value, str) or not value:
        raise SweepError(option, f"{_show(value)} is not a target id (cpu, cuda:N, mps)")


def _show(value: Any) -> str:
    return repr(value) if isinstance(value, str) else str(value)


def _check_qps_possible(base: Mapping[str, Any]) -> None:
    if not supports_qps():
        raise SweepError("--qps", "request rates need the server scenario, which this build does not have yet "
                                  "(its RunSpec has no scenario_options); sweep batch, threads, precision, engine "
                                  "or target instead")
    import engines.spec

    users = getattr(engines.spec, "SCENARIO_OPTION_USERS", {}).get("qps", ("server",))
    scenario = base.get("scenario", "single-stream")
    if scenario not in users:
        raise SweepError("--qps", f"request rates apply to the {' and '.join(users)} scenarios, not {scenario}; "
                                  "use --scenario server")


def _apply(base: Mapping[str, Any], point: Mapping[str, Any]) -> dict[str, Any]:
    spec = {key: (dict(value) if isinstance(value, dict) else value) for key, value in base.items()}
    for axis, value in point.items():
        if axis == "qps":
            spec["scenario_options"] = {**(spec.get("scenario_options") or {}), "qps": value}
        else:
            spec[axis] = value
    return spec


def _check_each_value(base: Mapping[str, Any], axes: Mapping[str, list[Any]]) -> None:
    """A value the spec refuses on its own (target 'gpu', batch beyond the limit) is an error, not a skip.

    "On its own" = on a default spec (catalog mlp), so a value refused only in combination (torch for a .onnx
    file) is left to the points, where it makes them impossible.
    """
    neutral = {"scenario": base["scenario"]} if "qps" in axes and "scenario" in base else {}
    for axis, values in axes.items():
        for value in values:
            try:
                RunSpec.from_dict(_apply(neutral, {axis: value})).validate()
            except SpecError as exc:
                if exc.field == axis or exc.field.startswith("scenario_options"):
                    raise SweepError(AXIS_OPTIONS[axis], str(exc).split(": ", 1)[1]) from None


def _point_spec(base: Mapping[str, Any], point: Mapping[str, Any],
                targets: Sequence[Mapping[str, Any]] | None) -> tuple[str, dict[str, Any] | None]:
    """(reason it cannot run, "") or ("", the validated spec as a dict)."""
    try:
        spec = RunSpec.from_dict(_apply(base, point)).validate()
    except SpecError as exc:
        return _SPEC_PREFIX + str(exc), None
    reason = _capability(spec, targets) if targets else ""
    return reason, (None if reason else spec.to_dict())


def _capability(spec: RunSpec, targets: Sequence[Mapping[str, Any]]) -> str:
    """What the discovered targets say about this point; "" when it can run (or nothing is known)."""
    target = next((t for t in targets if t.get("id") == spec.target), None)
    if target is None:  # 'cuda' vs 'cuda:0', or a device that is not there
        kind = spec.target.partition(":")[0]
        same_kind = [t for t in targets if str(t.get("id", "")).partition(":")[0] == kind]
        if not same_kind:
            return f"target {spec.target} is not on this machine (`labconsole targets` lists what is)"
        if spec.target == kind and any(t.get("available") for t in same_kind):
            return ""
        target = same_kind[0] if not any(t.get("available") for t in same_kind) else None
        if target is None:
            ids = ", ".join(str(t["id"]) for t in same_kind)
            return f"target {spec.target} is not on this machine (it has {ids})"
    if not target.get("available", True):
        return f"target {spec.target} is not usable here: {target.get('reason') or 'not available'}"
    details = target.get("engine_details") or {}
    if not details:
        return ""  # discovery did not say: let the worker decide
    engine = details.get(spec.engine)
    if not engine or not engine.get("available"):
        why = (engine or {}).get("reason") or f"{spec.engine} is not installed"
        return f"{spec.engine} does not run on {spec.target}: {why}"
    offered = engine.get("precisions") or []
    if offered and spec.precision not in offered:
        return f"{spec.engine} offers no {spec.precision} on {spec.target} (it offers {', '.join(offered)})"
    return ""


def _result(planned: Mapping[str, Any], record: Mapping[str, Any] | None = None, status: str | None = None,
            message: str = "") -> dict[str, Any]:
    record = record or {}
    summary = record.get("summary") or {}
    latency = summary.get("latency_ms") or {}
    return {"index": planned["index"], "point": planned["point"], "label": planned["label"],
            "run_id": record.get("run_id"), "status": status or record.get("status") or "failed",
            "message": message or record.get("message") or "",
            "latency_ms": {"p50": latency.get("p50"), "p99": latency.get("p99"), "mean": latency.get("mean")},
            "throughput_per_s": summary.get("throughput_per_s"), "valid": bool(summary.get("valid")),
            "iterations": summary.get("iterations")}


def _counts(results: Sequence[Mapping[str, Any]]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for r in results:
        counts[r["status"]] = counts.get(r["status"], 0) + 1
    return counts


def _varying_of(points: Sequence[Mapping[str, Any]]) -> list[str]:
    return [axis for axis in AXES if len({_freeze(p.get(axis)) for p in points if axis in p}) > 1]


def _freeze(value: Any) -> Any:
    return value if not isinstance(value, list) else tuple(value)


def _series(points: Sequence[Mapping[str, Any]], knee_axis: str,
            varying: Sequence[str]) -> dict[str, list[Mapping[str, Any]]]:
    """Points grouped by every varying axis except the knee axis; the key is the group's label ("" = one)."""
    others = [axis for axis in varying if axis != knee_axis]
    groups: dict[str, list[Mapping[str, Any]]] = {}
    for p in points:
        key = point_label({a: p["point"].get(a) for a in others if a in p["point"]}, others)
        groups.setdefault(key, []).append(p)
    return groups


def _sort_key(value: Any) -> tuple[int, float]:
    return (0, 0.0) if value is None else (1, float(value))


def format_rate(value: float | None) -> str:
    """Throughput for people: 3 significant digits below 1000, whole numbers with separators above."""
    if value is None:
        return "—"
    return f"{round(value):,}" if abs(value) >= 1000 else f"{value:.3g}"
