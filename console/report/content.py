"""What a report holds, read from the history: the runs (a run, a comparison, a sweep or an analysed run), their
latencies and telemetry on each run's own clock, the comparison of each run against the first, the sweep's
points, the op table and the machine card's roofs.

Read-only and Qt-free: the history is only read (the caller opens it with `open_reader`), and everything here is
plain data that the HTML and PDF writers lay out the same way.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

import numpy as np

from console import __version__
from console.analysis import compare as comparing
from console.analysis.fingerprint import differences
from console.analysis.profile_view import annotated_ops
from console.machine.cards import newest_card
from console.report.export import run_start_ns
from console.spec.reproduce import reproduce_command

MAX_RUNS = 8  # beyond this, overlaid charts stop being readable: a sweep's points are shown as a curve instead
# Telemetry charts, most telling first: power (energy is why the lab asks), then utilisation, then memory.
# A storage benchmark stores only the storage source's samples (console.storage.telemetry): its device's read
# MB/s and queue depth are then the charts.
METRIC_PREFERENCE = (("power", "W"), ("util", "%"), ("worker.rss", "GiB"), ("read_mb_s", "MB/s"),
                     ("queue_depth", "requests"))
MAX_TELEMETRY_CHARTS = 3


class ReportError(ValueError):
    """A report cannot be made; the message names the problem and the fix."""


@dataclass
class RunView:
    """One run as the report shows it; `letter` (A, B, …) ties its rows, legend entries and commands together."""

    run: dict[str, Any]
    letter: str
    label: str
    t_s: np.ndarray  # iteration start, seconds from the run's start
    latency_ms: np.ndarray
    telemetry: dict[str, dict[str, Any]]  # metric → {t_s, values, unit, method}
    ops: list[dict[str, Any]]
    reproduce: dict[str, Any]

    @property
    def summary(self) -> dict[str, Any]:
        return self.run.get("summary") or {}

    @property
    def spec(self) -> dict[str, Any]:
        return self.run.get("spec") or {}


@dataclass
class Report:
    kind: str  # run | comparison | sweep (an analysed run is a run with ops)
    runs: list[RunView]
    deltas: list[dict[str, Any]] = field(default_factory=list)  # each later run against A: compare() + letters
    differences: list[list[dict[str, Any]]] = field(default_factory=list)  # per later run, what differs from A
    sweep: dict[str, Any] | None = None
    card: dict[str, Any] | None = None  # the machine card whose roofs an analysed run is drawn against
    generated_at: str = ""
    version: str = __version__

    @property
    def analysed(self) -> bool:
        return any(view.ops for view in self.runs)


# ---- Public API
def gather(store: Any, run_ids: list[str], sweep_id: str | None = None) -> Report:
    """The report of `run_ids` (prefixes allowed) or of one sweep; ReportError when a run or sweep is unknown."""
    sweep = None
    if sweep_id is not None:
        sweep = store.get_sweep(sweep_id)
        if sweep is None:
            raise ReportError(f"there is no sweep {sweep_id!r} in {store.path}: `labconsole history --json` lists "
                              "the sweeps (or pick one on the History page's Sweeps tab)")
        run_ids = [run["run_id"] for run in store.runs_of_sweep(sweep["sweep_id"])] + list(run_ids)
    if not run_ids:
        raise ReportError("no run to report: name one or more runs (`labconsole history` lists them) or a sweep")
    runs = []
    for run_id in dict.fromkeys(run_ids):
        run = store.get_run(run_id)
        if run is None:
            raise ReportError(f"there is no run {run_id!r} in {store.path}: check the id (`labconsole history` "
                              "lists them)")
        if all(run["run_id"] != seen["run_id"] for seen in runs):  # a prefix and the whole id: one run, once
            runs.append(run)
    views = [_view(store, run, _letter(i), with_series=sweep is None or len(runs) <= MAX_RUNS)
             for i, run in enumerate(runs)]
    kind = "sweep" if sweep is not None else ("comparison" if len(views) > 1 else "run")
    report = Report(kind, views, sweep=sweep, generated_at=datetime.now(timezone.utc).isoformat(timespec="seconds"))
    if kind == "comparison":
        first = views[0]
        for view in views[1:]:
            report.deltas.append(_delta(first, view))
            report.differences.append(differences(first.run, view.run))
    if report.analysed:
        analysed = next(view for view in views if view.ops)
        report.card = newest_card(store, analysed.run.get("target") or "cpu")
        for view in views:
            view.ops = annotated_ops(view.ops, report.card, view.summary.get("precision") or "fp32")
    return report


def run_label(run: dict[str, Any]) -> str:
    """model · engine · target · precision · batch N (· name), as people read a configuration."""
    from console.report.storage_section import storage_label
    from engines import backends

    if storage_label(run):  # a storage benchmark has no engine, precision or batch: its label and kind
        return str(storage_label(run))
    from console.report.collectives_section import collectives_label

    if collectives_label(run):  # nor has a collectives run
        return str(collectives_label(run))

    engine = run.get("engine") or (run.get("spec") or {}).get("engine") or "?"
    try:
        engine = backends.info(engine).label
    except KeyError:
        pass
    parts = [str(run.get("model") or "?"), engine, str(run.get("target") or "?"),
             str((run.get("summary") or {}).get("precision") or (run.get("spec") or {}).get("precision") or "fp32"),
             f"batch {run.get('batch') or (run.get('spec') or {}).get('batch') or 1}"]
    if run.get("name"):
        parts.append(str(run["name"]))
    return " · ".join(parts)


# ---- Private API
def _letter(index: int) -> str:
    return chr(ord("A") + index) if index < 26 else f"R{index + 1}"


def _view(store: Any, run: dict[str, Any], letter: str, with_series: bool) -> RunView:
    t_ns, latency_ns = store.latencies(run["run_id"]) if with_series else (np.empty(0), np.empty(0))
    start = run_start_ns(run, int(t_ns[0]) if len(t_ns) else None)
    t_s = (np.asarray(t_ns, dtype=np.int64) - start) / 1e9 if len(t_ns) else np.empty(0)
    return RunView(run, letter, run_label(run), t_s, np.asarray(latency_ns, dtype=float) / 1e6,
                   _telemetry(store, run["run_id"], start) if with_series else {}, store.ops(run["run_id"]),
                   reproduce_command(run))


def _telemetry(store: Any, run_id: str, start_ns: int) -> dict[str, dict[str, Any]]:
    """The most telling metrics of the run (METRIC_PREFERENCE), each {t_s, values, unit, method}."""
    chosen: list[str] = []
    names = store.metrics(run_id)
    for key, _unit in METRIC_PREFERENCE:
        for name in names:
            if key in name and name not in chosen and not name.startswith(("cpu0", "cpu1", "cpu2", "cpu3")):
                chosen.append(name)
                break
    out = {}
    for name in chosen[:MAX_TELEMETRY_CHARTS]:
        rows = [row for row in store.samples(run_id, name) if row["value"] is not None]
        if rows:
            out[name] = {"t_s": np.asarray([(row["t_ns"] - start_ns) / 1e9 for row in rows]),
                         "values": np.asarray([row["value"] for row in rows], dtype=float),
                         "unit": rows[0]["unit"], "method": rows[0]["method"], "source": rows[0]["source"]}
    return out


def _delta(a: RunView, b: RunView) -> dict[str, Any]:
    """B against A by the console's compare (ratio of medians with its block interval, Mann-Whitney U on the same
    blocks' medians, what was resolved and the minimum detectable effect); None fields when either run has no
    latencies."""
    if a.latency_ms.size < 2 or b.latency_ms.size < 2:
        return {"a": a.letter, "b": b.letter, "verdict": None, "ratio": None, "ci95": None, "p_value": None,
                "explanation": "one of the runs stored no latencies, so they cannot be compared"}
    result = comparing.compare(a.latency_ms, b.latency_ms)
    return {"a": a.letter, "b": b.letter, **result}
