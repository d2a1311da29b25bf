"""A storage benchmark's outcome kept as a run in the history, so `history`, `compare` and `report` find it.

The run's spec says what was asked: scenario "storage-<kind>", the result's label as the model, engine "storage",
target "cpu" (the console's host: the storage path is named in the options), and the options under
`scenario_options`, so two runs of the same options share a fingerprint (a series) and different ones do not.
The summary keeps the kind's whole result under `storage_bench` (its per-read latencies go to the run's
latencies instead, so `compare` works on them), the headline `figures` beside it, latency percentiles computed
here from those latencies (a percentile only where enough reads back it: p90 ≥ 64, p99 ≥ 662, LoadGen's rule),
and `valid`: the kind's pass rule, or for a kind without one (sweep, checkpoint, cold start) that its reads came
from the storage and not the page cache (cache_state cold or n/a).

A run is `completed` only when the kind returned a result that holds the contract's keys and everything it
returned was stored; a result that says it lost data (`lost` or `dropped` non-zero), a malformed one, or latencies
the history refused, make it `failed` with the cause. The run is created when the outcome is known (the result,
label included, arrives in one piece at the end; nothing partial would be worth keeping). Qt-free.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from console.storage.launch import Outcome

REQUIRED_KEYS = ("kind", "label", "passed", "status_reason", "cache_state", "method", "figures")
CACHE_STATES = ("cold", "warm", "mixed", "n/a")
SCENARIO_PREFIX = "storage-"
PERCENTILES = (("p50", 50.0), ("p90", 90.0), ("p99", 99.0))

__all__ = ["spec_for", "summary_for", "store_outcome", "is_storage_run", "storage_kind", "latest_results",
           "check_result"]


# ---- Public API
def spec_for(kind: str, options: Mapping[str, Any], label: str | None = None) -> dict[str, Any]:
    """The spec a storage run is stored under (see the module docstring)."""
    return {"scenario": f"{SCENARIO_PREFIX}{kind}", "model": label or f"storage {kind}", "engine": "storage",
            "target": "cpu", "scenario_options": dict(options), "storage_kind": kind}


def check_result(kind: str, result: Any) -> list[str]:
    """What is wrong with a kind's result against the shared contract (empty when nothing)."""
    if not isinstance(result, dict):
        return [f"the result is {type(result).__name__}, not a dict"]
    problems = [f"it lacks {key!r}" for key in REQUIRED_KEYS if key not in result]
    if result.get("kind") not in (None, kind):
        problems.append(f"its kind is {result.get('kind')!r}, not {kind!r}")
    if "passed" in result and result["passed"] not in (True, False, None):
        problems.append(f"passed is {result['passed']!r}, not true, false or null")
    if "cache_state" in result and result["cache_state"] not in CACHE_STATES:
        problems.append(f"cache_state is {result['cache_state']!r}, not one of {', '.join(CACHE_STATES)}")
    if "figures" in result and not isinstance(result["figures"], dict):
        problems.append("figures is not a {name: number} mapping")
    lost = _lost(result)
    if lost:
        problems.append(f"it reports lost data ({lost})")
    return problems


def summary_for(kind: str, outcome: Outcome, latency_ns: np.ndarray | None = None,
                status: str | None = None) -> dict[str, Any]:
    """The summary stored with the run: the result (less its latency pairs), its figures and pass rule,
    latency statistics of its reads, or the cause when it did not complete (`status`, default the outcome's:
    a run that is not completed is never valid)."""
    status = status or outcome.status
    result = dict(outcome.result or {})
    result.pop("latency_ns", None)
    figures, dropped = _finite_figures(result.get("figures"))
    if figures is not None:
        result["figures"] = figures
    durations = np.asarray(latency_ns if latency_ns is not None else [], dtype=np.float64) / 1e6
    summary: dict[str, Any] = {
        "storage_bench": result,
        "storage_kind": kind,
        "figures": figures or {},
        "passed": result.get("passed"),
        "valid": _valid(result, status),
        "status_reason": result.get("status_reason") or "",
        "cache_state": result.get("cache_state"),
        "method": result.get("method"),
        "iterations": int(durations.size),
        "latency_of": "each timed read or step the benchmark recorded (its latency_ns)",
        "latency_ms": _latency_block(durations),
        "throughput_per_s": None,
        "duration_s": round(outcome.wall_s, 3),
        "invalid_reasons": [],
        "warnings": [f"figure {name} was not a finite number and is stored as not available" for name in dropped],
    }
    if result.get("passed") is False:
        summary["invalid_reasons"].append({"rule": f"{kind} pass rule",
                                           "detail": result.get("status_reason") or "did not pass",
                                           "fix": _pass_fix(result)})
    elif result.get("passed") is None and result.get("cache_state") in ("warm", "mixed"):
        summary["invalid_reasons"].append({"rule": "read from storage, not the page cache",
                                           "detail": f"the result is {result['cache_state']}"
                                                     + (f": {result['status_reason']}" if result.get("status_reason")
                                                        else ""),
                                           "fix": _pass_fix(result)})
    if status != "completed":
        summary["message"] = outcome.message
        summary["error_kind"] = outcome.error_kind
        summary["progress"] = outcome.last_progress or None
    return summary


def store_outcome(store: Any, kind: str, options: Mapping[str, Any], outcome: Outcome,
                  tags: list[str] | None = None, samples: list[tuple] | None = None,
                  telemetry: dict[str, Any] | None = None) -> tuple[str, str, str | None]:
    """Keep `outcome` as a run in `store` (a HistoryStore, or a HistoryWriter: the same calls); returns
    (run_id, final status, cause or None). `samples`: telemetry rows (t_ns, source, metric, value, unit, method)
    taken while it ran (console.storage.telemetry), kept with the run; `telemetry`: what to say of them (rows
    dropped, why there are none). A completed outcome whose result
    breaks the contract, says it lost data, or whose latencies the history refused, is stored `failed` with the
    cause."""
    from console.history import HistoryError

    status, cause = outcome.status, outcome.message or None
    pairs = _latency_pairs((outcome.result or {}).get("latency_ns"))
    if status == "completed":
        problems = check_result(kind, outcome.result)
        if isinstance(pairs, str):
            problems.append(pairs)
        if problems:
            status, cause = "failed", f"the {kind} result cannot be kept as completed: {'; '.join(problems)}"
    t_ns, latency_ns = pairs if isinstance(pairs, tuple) else (np.zeros(0, np.int64), np.zeros(0, np.int64))
    label = (outcome.result or {}).get("label") if outcome.result else None
    run_id = store.create_run(spec_for(kind, options, label if isinstance(label, str) and label else None))
    if tags:
        _tag(store, run_id, tags)
    if samples:
        store.add_samples(run_id, samples)
    if len(t_ns):
        try:
            store.add_latencies(run_id, t_ns, latency_ns)
        except (HistoryError, ValueError) as exc:
            status, cause, t_ns, latency_ns = "failed", f"its latencies could not be stored ({exc})", t_ns[:0], \
                latency_ns[:0]
    summary = summary_for(kind, outcome, latency_ns, status)
    summary["storage_telemetry"] = {"rows": len(samples or []), **(telemetry or {})}
    if status != "completed":
        summary["message"] = cause
    try:
        store.finish_run(run_id, status, summary, error=cause if status != "completed" else None,
                         environment=_environment(kind))
    except HistoryError as exc:  # the latencies (written with the finish) were refused: say so, keep the rest
        store.finish_run(run_id, "failed", {**summary, "iterations": 0, "latency_ms": _latency_block(np.zeros(0))},
                         error=f"the run could not be stored whole ({exc})")
        return run_id, "failed", f"the run could not be stored whole ({exc})"
    if hasattr(store, "unstored"):  # a HistoryWriter: what it could not write makes the run failed
        if hasattr(store, "flush"):
            store.flush()
        missing = store.unstored(run_id)
        if missing:
            cause = f"the history lost part of the run ({missing})"
            store.finish_run(run_id, "failed", error=cause)
            store.flush()
            return run_id, "failed", cause
    return run_id, status, cause


def checked_status(outcome: Outcome, problems_of: Callable[[Any], list[str]],
                   what: str) -> tuple[str, str | None]:
    """(status, cause) to store: the outcome's own, or failed with the cause when a completed outcome's result
    breaks the contract (the kind's `problems_of`)."""
    status, cause = outcome.status, outcome.message or None
    problems = problems_of(outcome.result) if status == "completed" else []
    if problems:
        status, cause = "failed", f"the {what} result cannot be kept as completed: {'; '.join(problems)}"
    return status, cause


def add_failure(summary: dict[str, Any], outcome: Outcome, status: str, cause: str | None) -> dict[str, Any]:
    """The summary with why a run that did not complete ended (message, error kind, fix, last progress)."""
    if status != "completed":
        summary.update(message=cause, error_kind=outcome.error_kind, fix=outcome.fix,
                       progress=outcome.last_progress or None)
    return summary


def keep_run(db: Any, spec: dict[str, Any], status: str, summary: dict[str, Any], cause: str | None,
             tags: list[str] | None, environment: dict[str, Any]) -> str:
    """Create, tag and finish one run in `db` (a HistoryStore or HistoryWriter, flushed), with the worker's
    Python and platform beside `environment`; returns its run id. For the kinds without latencies
    (collectives, time-to-train)."""
    import platform

    run_id = db.create_run(spec)
    if tags and hasattr(db, "set_tags"):
        db.set_tags(run_id, tags)
    db.finish_run(run_id, status, summary, error=cause if status != "completed" else None,
                  environment={"worker": {"python": platform.python_version(), "platform": platform.system()},
                               **environment})
    if hasattr(db, "flush"):
        db.flush()
    return run_id


def is_storage_run(run: Mapping[str, Any]) -> bool:
    """Whether a stored run (get_run/list_runs row) is a storage benchmark."""
    return storage_kind(run) is not None


def storage_kind(run: Mapping[str, Any]) -> str | None:
    scenario = str((run.get("spec") or {}).get("scenario") or run.get("scenario") or "")
    return scenario[len(SCENARIO_PREFIX):] if scenario.startswith(SCENARIO_PREFIX) else None


def latest_results(store: Any, kinds: list[str], per_kind: int = 1) -> dict[str, list[dict[str, Any]]]:
    """The newest completed runs of each kind (run_id, started_at, label, result): what the Storage page shows
    when it opens. Reads only."""
    found: dict[str, list[dict[str, Any]]] = {kind: [] for kind in kinds}
    for run in store.list_runs(status="completed", engine="storage", limit=200):
        kind = storage_kind(run)
        if kind in found and len(found[kind]) < per_kind:
            bench = (run.get("summary") or {}).get("storage_bench")
            if isinstance(bench, dict):
                found[kind].append({"run_id": run["run_id"], "started_at": run["started_at"],
                                    "label": run.get("model"), "result": bench})
    return found


# ---- Private API
def _valid(result: Mapping[str, Any], status: str) -> bool:
    """A completed run is valid by its kind's pass rule; a kind without one (sweep, checkpoint, cold start) when
    its reads came from the storage (cold, or n/a), not from the page cache (warm, mixed)."""
    if status != "completed":
        return False
    if isinstance(result.get("passed"), bool):
        return bool(result["passed"])
    return result.get("cache_state") not in ("warm", "mixed")


def _latency_pairs(value: Any) -> tuple[np.ndarray, np.ndarray] | str:
    if value is None or (isinstance(value, list) and not value):
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    try:
        pairs = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        return "latency_ns is not a list of [t_ns, latency_ns] pairs"
    if pairs.ndim != 2 or pairs.shape[1] != 2:
        return f"latency_ns has shape {list(pairs.shape)}, not [n, 2] pairs"
    if not np.isfinite(pairs).all() or (pairs[:, 1] < 0).any():
        return "latency_ns holds a negative or non-finite value"
    order = np.argsort(pairs[:, 0], kind="stable")
    return pairs[order, 0].astype(np.int64), pairs[order, 1].astype(np.int64)


def _latency_block(durations_ms: np.ndarray) -> dict[str, Any]:
    from console.analysis.stats import describe, min_samples_for_percentile

    stats = describe(durations_ms)
    block: dict[str, Any] = {key: stats.get(key) for key in ("p50", "p90", "p99", "mean", "min", "max", "std")}
    block["ci95"] = {key: (stats.get("ci95") or {}).get(key) for key, _ in PERCENTILES}
    block["not_enough_samples"] = []
    for key, q in PERCENTILES:
        if stats["n"] and stats["n"] < min_samples_for_percentile(q):
            block[key], block["ci95"][key] = None, None
            block["not_enough_samples"].append(f"{key} needs ≥ {min_samples_for_percentile(q)} reads, "
                                               f"{stats['n']} were timed")
    return block


def _finite_figures(figures: Any) -> tuple[dict[str, Any] | None, list[str]]:
    if not isinstance(figures, dict):
        return None, []
    clean, dropped = {}, []
    for name, value in figures.items():
        if isinstance(value, float) and not math.isfinite(value):
            clean[str(name)] = None
            dropped.append(str(name))
        else:
            clean[str(name)] = value
    return clean, dropped


def _lost(result: Mapping[str, Any]) -> str:
    parts = []
    for key in ("lost", "dropped", "lost_samples", "errors"):
        value = result.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0:
            parts.append(f"{key} {value:g}")
    return ", ".join(parts)


def _pass_fix(result: Mapping[str, Any]) -> str:
    if result.get("cache_state") in ("warm", "mixed"):
        return ("make the data set larger than the page cache can hold (5× host RAM) or prove it cold, then run "
                "again")
    limited = result.get("limited_by")
    return f"the run names what limited it ({limited}); change that and run again" if limited else \
        "see the status reason; change what it names and run again"


def _tag(store: Any, run_id: str, tags: list[str]) -> None:
    if hasattr(store, "set_tags"):
        store.set_tags(run_id, tags)


def _environment(kind: str) -> dict[str, Any]:
    import platform

    return {"worker": {"python": platform.python_version(), "platform": platform.system()},
            "storage": {"kind": kind}}
