"""Stored runs as files other tools read: csv (one row per iteration, or one per run), json (the whole run) and a
Chrome trace.

Why streamed: a one-hour run at 2,000 iterations/s holds 7 million iterations; each format is written chunk by
chunk as the history stores them (64k iterations), so memory stays flat and the first bytes leave at once.
Times are relative to the run's start (the session's t0 on the same monotonic clock as latencies and telemetry),
so runs from different days and machines line up. JSON is strict (no NaN: a non-finite figure becomes null).
"""

from __future__ import annotations

import csv
import heapq
import math
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, TextIO

import numpy as np

from console.history import jsoncols, latency_codec

__all__ = ["FORMATS", "EXPORT_FORMAT", "SUMMARY_COLUMNS", "export_runs", "run_start_ns", "write_csv", "write_json",
           "write_summary_csv", "write_trace"]

FORMATS = ("csv", "json", "trace")
EXPORT_FORMAT = "labconsole-export"  # the json export's `format`; `labconsole run --spec` reads it back
EXPORT_VERSION = 1
CSV_HEADER = "run_id,iteration,t_ns,latency_ms\n"
# `--summary` csv: one row per run, the run_summary view's columns (what the History table shows)
SUMMARY_COLUMNS = ("run_id", "name", "status", "started_at", "ended_at", "hostname", "model", "engine", "target",
                   "precision", "batch", "scenario", "fingerprint", "iterations", "p50_ms", "p99_ms", "mean_ms",
                   "throughput_per_s", "valid", "energy_j_per_inference", "energy_method", "baseline_verdict",
                   "tags", "note")
_RUN_FIELDS = ("run_id", "name", "status", "started_at", "ended_at", "error", "hostname", "host_id", "model",
               "engine", "target", "batch", "scenario", "precision", "fingerprint", "configuration", "tags", "note",
               "sweep_id", "sweep_point", "spec", "summary", "environment")
_LATENCY_TID, _PHASE_TID = 1, 1000  # extra latency lanes (overlapping iterations) take 2, 3 …


# ---- Public API
def export_runs(store: Any, runs: Sequence[Mapping[str, Any]], fmt: str, out: TextIO,
                summary: bool = False) -> dict[str, int]:
    """Write `runs` (rows from store.get_run) to `out` in `fmt`; returns {runs, iterations, samples}.
    `summary`: the csv form with one row per run (write_summary_csv) instead of one per iteration."""
    writers = {"csv": write_summary_csv if summary else write_csv, "json": write_json, "trace": write_trace}
    if fmt not in writers:
        raise ValueError(f"unknown export format {fmt!r}; use one of {', '.join(FORMATS)}")
    if summary and fmt != "csv":
        raise ValueError(f"the summary form is a csv (one row per run); {fmt} always holds whole runs")
    return writers[fmt](store, runs, out)


def run_start_ns(run: Mapping[str, Any], first_t_ns: int | None = None) -> int:
    """Where a run's relative time axis starts: the session's t0 when stored, else its first timestamp."""
    t0 = (run.get("summary") or {}).get("t0_ns")
    if isinstance(t0, int) and not isinstance(t0, bool):
        return t0
    return int(first_t_ns or 0)


def write_csv(store: Any, runs: Sequence[Mapping[str, Any]], out: TextIO) -> dict[str, int]:
    """run_id, iteration (0-based, arrival order), t_ns (iteration start after the run start, integer
    nanoseconds: exact), latency_ms (six decimals: exact to the stored nanosecond)."""
    out.write(CSV_HEADER)
    iterations = 0
    for run in runs:
        t0 = _start(store, run)
        index = 0
        for t_ns, latency_ns in latency_chunks(store, run["run_id"]):
            numbers = np.arange(index, index + len(t_ns))
            ms = latency_ns / 1e6
            prefix = run["run_id"] + ","
            out.write("".join(f"{prefix}{i},{t},{lat:.6f}\n"
                              for i, t, lat in zip(numbers.tolist(), (t_ns - t0).tolist(), ms.tolist(),
                                                   strict=True)))
            index += len(t_ns)
        iterations += index
    return {"runs": len(runs), "iterations": iterations, "samples": 0}


def write_summary_csv(store: Any, runs: Sequence[Mapping[str, Any]], out: TextIO) -> dict[str, int]:
    """One row per run: SUMMARY_COLUMNS (the run_summary view's plain figures; tags joined by ';', a missing or
    non-finite figure empty). Reads no latencies: a thousand runs are a thousand rows."""
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(SUMMARY_COLUMNS)
    iterations = 0
    for run in runs:
        writer.writerow([_cell(column, run.get(column)) for column in SUMMARY_COLUMNS])
        iterations += int(run.get("iterations") or 0)
    return {"runs": len(runs), "iterations": iterations, "samples": 0}


def write_json(store: Any, runs: Sequence[Mapping[str, Any]], out: TextIO) -> dict[str, int]:
    """{format, version, runs: [run row + t0_ns, reproduce, ops, latencies {t_ns, latency_ns} (integers, t
    relative to t0_ns), samples [{t_ns (relative), source, metric, value, unit, method}]]}."""
    from console.spec.reproduce import reproduce_command

    out.write(f'{{"format": "{EXPORT_FORMAT}", "version": {EXPORT_VERSION}, "runs": [')
    iterations = samples = 0
    for number, run in enumerate(runs):
        t0 = _start(store, run)
        head = {field: run.get(field) for field in _RUN_FIELDS}
        head.update(t0_ns=t0, reproduce=reproduce_command(run), ops=store.ops(run["run_id"]))
        text = _strict(head)
        out.write((",\n" if number else "\n") + text[:-1] + ', "latencies": {"t_ns": [')
        first = True
        for t_ns, _ in latency_chunks(store, run["run_id"]):
            out.write(("" if first else ",") + ",".join(map(str, (t_ns - t0).tolist())))
            first = False
        out.write('], "latency_ns": [')
        first = True
        for _, latency_ns in latency_chunks(store, run["run_id"]):
            out.write(("" if first else ",") + ",".join(map(str, latency_ns.tolist())))
            first = False
            iterations += len(latency_ns)
        out.write(']}, "samples": [')
        for index, (t_ns, source, metric, value, unit, method) in enumerate(sample_rows(store, run["run_id"])):
            row = {"t_ns": t_ns - t0, "source": source, "metric": metric, "value": value, "unit": unit,
                   "method": method}
            out.write(("," if index else "") + _strict(row))
            samples += 1
        out.write("]}")
    out.write("\n]}\n")
    return {"runs": len(runs), "iterations": iterations, "samples": samples}


def write_trace(store: Any, runs: Sequence[Mapping[str, Any]], out: TextIO) -> dict[str, int]:
    """Chrome trace events (JSON object format; Perfetto and chrome://tracing open it): each run one process,
    one complete ('X') event per iteration on its latency track (overlapping iterations on extra lanes),
    its phases (loading, warm-up, measuring …) as spans, telemetry as counter ('C') events per metric; µs from
    the run's start."""
    out.write('{"displayTimeUnit": "ms", "otherData": ' + _strict({"exporter": "labconsole",
                                                                   "runs": [run["run_id"] for run in runs]}))
    out.write(', "traceEvents": [\n')
    events = _EventWriter(out)
    iterations = samples = 0
    for pid, run in enumerate(runs, start=1):
        t0 = _start(store, run)
        events.meta(pid, None, "process_name", f"run {run['run_id'][:8]} · {_label(run)}")
        events.meta(pid, None, "process_sort_index", pid, key="sort_index")
        lanes = _Lanes()
        last_end = t0
        index = 0
        for t_ns, latency_ns in latency_chunks(store, run["run_id"]):
            ts = (t_ns - t0) / 1e3
            dur = latency_ns / 1e3
            tids = lanes.assign(t_ns, t_ns + latency_ns)
            events.raw("".join(
                f'{{"name":"iteration","cat":"latency","ph":"X","ts":{start:.3f},"dur":{length:.3f},'
                f'"pid":{pid},"tid":{tid},"args":{{"i":{i}}}}},\n'
                for i, start, length, tid in zip(range(index, index + len(t_ns)), ts.tolist(), dur.tolist(),
                                                 tids.tolist(), strict=True)))
            index += len(t_ns)
            last_end = max(last_end, int((t_ns + latency_ns).max()))
        iterations += index
        for lane in range(lanes.count):
            events.meta(pid, _LATENCY_TID + lane, "thread_name", "latency" if lane == 0 else f"latency {lane + 1}")
        for t_ns, _source, metric, value, unit, _method in sample_rows(store, run["run_id"]):
            if value is None or not math.isfinite(value):
                continue  # a counter needs a number; a missing reading leaves a gap
            name = f"{metric} ({unit})" if unit else metric
            events.add({"name": name, "ph": "C", "ts": round((t_ns - t0) / 1e3, 3), "pid": pid,
                        "args": {"value": value}})
            samples += 1
            last_end = max(last_end, t_ns)
        phases = (run.get("summary") or {}).get("phases") or []
        end = (run.get("summary") or {}).get("t_end_ns") or last_end
        if phases:
            events.meta(pid, _PHASE_TID, "thread_name", "phases")
        for number, (phase, start) in enumerate(phases):
            stop = phases[number + 1][1] if number + 1 < len(phases) else max(end, start)
            events.add({"name": str(phase), "cat": "phase", "ph": "X", "ts": round((start - t0) / 1e3, 3),
                        "dur": round(max(stop - start, 0) / 1e3, 3), "pid": pid, "tid": _PHASE_TID})
    events.close()
    out.write("\n]}\n")
    return {"runs": len(runs), "iterations": iterations, "samples": samples}


def latency_chunks(store: Any, run_id: str) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """A run's (t_ns, latency_ns) chunk by chunk in arrival order: the whole run is never held at once."""
    cursor = store.db.execute("SELECT t0_ns, data FROM latency_chunks WHERE run_id = ? ORDER BY seq", [run_id])
    for t0, data in cursor:
        yield latency_codec.decode(t0, data)


def sample_rows(store: Any, run_id: str) -> Iterator[tuple[int, str, str, float | None, str, str]]:
    """A run's telemetry rows (t_ns, source, metric, value, unit, method) in time order, from a cursor."""
    yield from store.db.execute("SELECT t_ns, source, metric, value, unit, method FROM samples WHERE run_id = ? "
                                "ORDER BY t_ns, rowid", [run_id])


# ---- Private API
class _EventWriter:
    """Writes events separated by commas; the trace format allows no trailing comma, so one event is held."""

    def __init__(self, out: TextIO):
        self._out = out
        self._held: str | None = None

    def raw(self, lines: str) -> None:
        """Events already formatted, each ending with ',\\n'."""
        if lines:
            self._flush()
            self._held = lines[:-2]

    def add(self, event: Mapping[str, Any]) -> None:
        self._flush()
        self._held = _strict(event)

    def meta(self, pid: int, tid: int | None, name: str, value: Any, key: str = "name") -> None:
        event: dict[str, Any] = {"name": name, "ph": "M", "pid": pid, "args": {key: value}}
        if tid is not None:
            event["tid"] = tid
        self.add(event)

    def close(self) -> None:
        if self._held is not None:
            self._out.write(self._held)
            self._held = None

    def _flush(self) -> None:
        if self._held is not None:
            self._out.write(self._held + ",\n")
            self._held = None


class _Lanes:
    """Overlapping iterations (server, multi-stream) on separate tracks: a trace viewer needs the complete
    events of one track to nest, and concurrent queries do not. Single-stream runs stay on one lane."""

    def __init__(self) -> None:
        self._free: list[tuple[int, int]] = []  # (end_ns, lane) of each lane's last event
        self.count = 0

    def assign(self, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
        if self.count <= 1 and len(starts) and np.all(starts[1:] >= ends[:-1]) and \
                (not self._free or self._free[0][0] <= starts[0]):
            self._free = [(int(ends[-1]), 0)]
            self.count = 1
            return np.full(len(starts), _LATENCY_TID)
        lanes = np.empty(len(starts), dtype=np.int64)
        for position in np.argsort(starts, kind="stable").tolist():
            start, end = int(starts[position]), int(ends[position])
            if self._free and self._free[0][0] <= start:
                _, lane = heapq.heappop(self._free)
            else:
                lane, self.count = self.count, self.count + 1
            heapq.heappush(self._free, (end, lane))
            lanes[position] = _LATENCY_TID + lane
        return lanes


def _start(store: Any, run: Mapping[str, Any]) -> int:
    t0 = (run.get("summary") or {}).get("t0_ns")
    if isinstance(t0, int) and not isinstance(t0, bool):
        return t0
    firsts = [row[0] for row in (
        store.db.execute("SELECT t0_ns FROM latency_chunks WHERE run_id = ? ORDER BY seq LIMIT 1",
                         [run["run_id"]]).fetchone(),
        store.db.execute("SELECT MIN(t_ns) FROM samples WHERE run_id = ?", [run["run_id"]]).fetchone(),
    ) if row and row[0] is not None]
    return run_start_ns(run, min(firsts) if firsts else None)


def _cell(column: str, value: Any) -> Any:
    """A summary csv cell: empty for a missing or non-finite figure; whole numbers stored as REAL written whole."""
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return ""
    if column == "tags":
        return ";".join(str(tag) for tag in value)
    if column in ("valid", "iterations") and isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def _label(run: Mapping[str, Any]) -> str:
    return " · ".join(str(part) for part in (run.get("model"), run.get("engine"), run.get("target"),
                                             f"b{run.get('batch')}") if part is not None)


def _strict(value: Any) -> str:
    return jsoncols.dumps(value, "export")
