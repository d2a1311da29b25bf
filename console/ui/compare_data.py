"""What the Compare page shows, read from the history as plain data (Qt-free, so it runs on a worker thread).

`gather(db_path, run_ids)` opens its own read-only connection (SQLite connections stay on the thread that made
them), reads each run's measured latencies, its telemetry and its configuration's series, and computes:
- per run: latencies in ms, summary figures, telemetry per metric on seconds since the run started;
- the delta table against the first run: p50 by console.analysis.compare (ratio of medians, block-bootstrap
  interval, the block test's p, verdict — faster / slower / equivalent / undecided — and the smallest difference
  the pair could resolve); p99, throughput and energy per inference as a ratio only, with no interval, said so;
- what differs between the first run and each other (console.analysis.fingerprint.differences);
- per configuration, its series (median latency per completed run over time), its baseline, and the change
  points console.analysis.regressions finds (the same as `labconsole regressions`), on valid runs.
"""

from __future__ import annotations

import math
import os
import re
from datetime import datetime
from typing import Any

import numpy as np

from console.analysis.compare import compare
from console.analysis.fingerprint import differences
from console.history import HistoryError, open_reader

LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
MIN_ITERATIONS = 2  # console.analysis.compare needs two values a side
RATIO_ONLY = "ratio only, no interval"
# Telemetry offered first when the runs share it; per-core series follow the totals.
PREFERRED_METRICS = ("cpu.util", "worker.cpu", "worker.rss", "mem.used", "gpu.util", "gpu.power", "power",
                     "gpu.mem.used", "cpu.freq")
_PER_CORE = re.compile(r"^cpu\d+\.")


# ---- Public API
def gather(db_path: str | os.PathLike, run_ids: list[str]) -> dict[str, Any]:
    """Everything the Compare page draws for these runs (2 or more; the first is the reference)."""
    store = open_reader(db_path)
    try:
        return _gather(store, run_ids)
    finally:
        store.close()


def run_label(run: dict[str, Any]) -> str:
    """"mlp · torch · cpu · b1 · fp32" — what was measured, short (a storage benchmark: its label and kind)."""
    from console.report.storage_section import storage_label

    if storage_label(run):
        return str(storage_label(run))
    spec = run.get("spec") or {}
    parts = [run.get("model"), run.get("engine"), run.get("target"), f"b{run.get('batch')}",
             run.get("precision") or spec.get("precision")]
    threads = spec.get("threads")
    if threads:
        parts.append(f"{threads} threads")
    return " · ".join(str(p) for p in parts if p not in (None, ""))


def configuration_title(config: dict[str, Any] | None) -> str:
    config = config or {}
    parts = [config.get("model"), config.get("engine"), config.get("target"),
             f"b{config['batch']}" if config.get("batch") is not None else None, config.get("precision"),
             f"{config['threads']} threads" if config.get("threads") else None, config.get("scenario"),
             f"on {config['host']}" if config.get("host") else None]
    model = str(parts[0] or "")
    if model.startswith("sha256:"):
        parts[0] = "model " + model[7:19] + "…"
    return " · ".join(str(p) for p in parts if p not in (None, ""))


def epoch_seconds(iso: Any) -> float | None:
    if not isinstance(iso, str) or not iso:
        return None
    try:
        moment = datetime.fromisoformat(iso.strip().replace("Z", "+00:00"))
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.astimezone()
    return moment.timestamp()


# ---- Private helpers
def _gather(store: Any, run_ids: list[str]) -> dict[str, Any]:
    runs, missing = [], []
    for run_id in run_ids:
        run = store.get_run(run_id)
        if run is None:
            missing.append(run_id)
            continue
        runs.append(run)
    if len(runs) < 2:
        raise HistoryError(f"a comparison needs two runs; {len(runs)} of {len(run_ids)} are in the history"
                           + (f" (missing: {', '.join(r[:8] for r in missing)})" if missing else ""),
                           "select two or more runs on the History page.", getattr(store, "path", None))
    shown = []
    several_hosts = len({run.get("hostname") for run in runs}) > 1  # then each label says which machine
    for position, run in enumerate(runs):
        _, latency_ns = store.latencies(run["run_id"])
        summary = run.get("summary") or {}
        shown.append({
            "run_id": run["run_id"], "letter": LETTERS[position % len(LETTERS)], "label": run_label(run) + (f" · on {run.get('hostname') or '?'}" if several_hosts else ""),
            "hostname": run.get("hostname"), "name": run.get("name") or "", "status": run.get("status"), "started_at": run.get("started_at"),
            "fingerprint": run.get("fingerprint"), "valid": summary.get("valid"),
            "latency_ms": np.asarray(latency_ns, dtype=np.float64) / 1e6, "summary": summary,
        })
    return {
        "runs": shown,
        "missing": missing,
        "telemetry": _telemetry(store, runs),
        "deltas": _deltas(shown),
        "differences": [{"letter": other["letter"], "run_id": other["run_id"],
                         "items": differences(runs[0], run)} for other, run in zip(shown[1:], runs[1:], strict=True)],
        "trends": _trends(store, runs, shown),
    }


def _telemetry(store: Any, runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Metrics every run has, each run's series on seconds since its own start, and each metric's unit."""
    per_run = []
    for run in runs:
        summary = run.get("summary") or {}
        series: dict[str, dict[str, Any]] = {}
        rows = store.samples(run["run_id"])
        t0 = summary.get("t0_ns") or (min((r["t_ns"] for r in rows), default=0))
        for row in rows:
            if row["value"] is None:
                continue
            entry = series.setdefault(row["metric"], {"source": row["source"], "unit": row["unit"], "t": [], "v": []})
            if row["source"] != entry["source"]:
                continue  # one source per metric and run (two samplers of one quantity would interleave)
            entry["t"].append((row["t_ns"] - t0) / 1e9)
            entry["v"].append(row["value"])
        per_run.append(series)
    shared = set(per_run[0]) if per_run else set()
    for series in per_run[1:]:
        shared &= set(series)
    metrics = sorted(shared, key=_metric_order)
    return {
        "metrics": [{"metric": m, "unit": per_run[0][m]["unit"] or ""} for m in metrics],
        "series": {m: [(np.asarray(s[m]["t"]), np.asarray(s[m]["v"], dtype=np.float64)) for s in per_run]
                   for m in metrics},
    }


def _metric_order(metric: str) -> tuple:
    if metric in PREFERRED_METRICS:
        return (0, PREFERRED_METRICS.index(metric), metric)
    return (2 if _PER_CORE.match(metric) else 1, 0, metric)


def _deltas(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per metric and run after the first (p50 of every run first, then p99 …): value, reference value,
    ratio, interval, verdict, method."""
    reference = runs[0]
    rows: list[dict[str, Any]] = []
    for other in runs[1:]:
        rows.append(_latency_delta(reference, other))
        for metric, unit, path, better in (("p99 latency", "ms", ("latency_ms", "p99"), "lower"),
                                           ("throughput", _throughput_unit(other), ("throughput_per_s",), "higher"),
                                           ("energy per inference", "J", ("energy", "joules_per_inference"), "lower")):
            a, b = _figure(reference["summary"], path), _figure(other["summary"], path)
            if a is None and b is None and metric == "energy per inference":
                continue  # no energy measured for either run: not a row of dashes
            ratio = b / a if a and b is not None else None
            why = RATIO_ONLY if ratio is not None else "not compared: " + (
                "A has no value" if a is None else "no value for this run" if b is None else
                "the reference is 0")
            rows.append({"metric": metric, "unit": unit, "letter": other["letter"], "reference": a, "value": b,
                         "ratio": ratio, "ci95": None, "verdict": None, "better": better, "method": why})
    order = ["p50 latency", "p99 latency", "throughput", "energy per inference"]
    return sorted(rows, key=lambda row: order.index(row["metric"]))  # stable: runs in order within a metric


def _latency_delta(reference: dict[str, Any], other: dict[str, Any]) -> dict[str, Any]:
    row = {"metric": "p50 latency", "unit": "ms", "letter": other["letter"], "better": "lower",
           "reference": _median(reference["latency_ms"]), "value": _median(other["latency_ms"]),
           "ratio": None, "ci95": None, "verdict": None, "p_value": None}
    n_a, n_b = reference["latency_ms"].size, other["latency_ms"].size
    if min(n_a, n_b) < MIN_ITERATIONS:
        row["method"] = (f"not compared: {n_a} and {n_b} measured iterations (at least {MIN_ITERATIONS} each)")
        return row
    try:
        result = compare(reference["latency_ms"], other["latency_ms"])
    except ValueError as exc:
        row["method"] = f"not compared: {exc}"
        return row
    # compare() speaks of "A" and "B"; the run here may be C or D
    explanation = re.sub(r"\bB\b", other["letter"], result["explanation"])
    row.update(ratio=result["ratio"], ci95=result["ci95"], verdict=result["verdict"], p_value=result["p_value"],
               mde=result["mde"], method=f"{result['p_label']} = {result['p_value']:.2g}; {result['mde_text']}",
               explanation=f"{explanation} Ratio of medians; {result['interval_method']}.")
    return row


def _trends(store: Any, runs: list[dict[str, Any]], shown: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per configuration of the compared runs (first seen first): its completed runs over time."""
    try:
        from console.analysis.changepoints import MIN_SIZE
        from console.analysis.regressions import change_points, run_median_ms
    except ImportError:  # the change-point module is not installed with this build
        change_points, run_median_ms, MIN_SIZE = None, None, 0
    letters = {run["run_id"]: run["letter"] for run in shown}
    baselines = {b["fingerprint"]: b["run_id"] for b in store.baselines()}
    trends, seen = [], []
    for run in runs:
        fingerprint = run.get("fingerprint")
        if not fingerprint or fingerprint in seen:
            continue
        seen.append(fingerprint)
        series = store.series(fingerprint)
        points = []
        for member in series:
            median = ((member.get("summary") or {}).get("latency_ms") or {}).get("p50")
            at = epoch_seconds(member.get("started_at"))
            if not isinstance(median, (int, float)) or not math.isfinite(median) or median <= 0 or at is None:
                continue
            points.append({"run_id": member["run_id"], "t": at, "median_ms": float(median),
                           "valid": bool((member.get("summary") or {}).get("valid")),
                           "letter": letters.get(member["run_id"])})
        steps, note = [], ""
        if change_points is None:
            note = "change points not available in this build"
        else:
            valid = [m for m in series if (m.get("summary") or {}).get("valid") and run_median_ms(m) is not None]
            times = {p["run_id"]: p["t"] for p in points}
            try:
                steps = [{"t": _between(times, p["last_good_run"], p["first_bad_run"]), "ratio": p["ratio"],
                          "ci95": p["ci95"], "p_value": p["p_value"], "direction": p["direction"],
                          "first_bad_run": p["first_bad_run"], "last_good_run": p["last_good_run"]}
                         for p in change_points(valid)]
            except ValueError as exc:
                note = f"change points not computed: {exc}"
            if not steps and not note:
                note = (f"no change point: {len(valid)} valid runs of the {2 * MIN_SIZE} needed"
                        if len(valid) < 2 * MIN_SIZE else f"no change point in {len(valid)} valid runs")
        trends.append({"fingerprint": fingerprint, "title": configuration_title(run.get("configuration")),
                       "points": points, "baseline_run_id": baselines.get(fingerprint), "change_points": steps,
                       "note": note})
    return trends


def _between(times: dict[str, float], good: str, bad: str) -> float | None:
    """Where a step is drawn: halfway between the last good run and the first bad one."""
    if good in times and bad in times:
        return (times[good] + times[bad]) / 2
    return times.get(bad)


def _figure(summary: dict[str, Any], path: tuple[str, ...]) -> float | None:
    value: Any = summary
    for key in path:
        value = value.get(key) if isinstance(value, dict) else None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return float(value)


def _median(values: np.ndarray) -> float | None:
    return float(np.median(values)) if values.size else None


def _throughput_unit(run: dict[str, Any]) -> str:
    unit = (run.get("summary") or {}).get("throughput_unit")
    return str(unit) if unit else "samples/s"
