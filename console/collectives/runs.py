"""A collectives outcome kept as a run in the history, so `history`, `compare` and `report` find it.

The run's spec says what was asked: scenario "collectives", the result's label as the model, engine
"torch.distributed", target "cpu" (gloo) or "cuda" (nccl), the normalized options under `scenario_options` (two
runs of the same options form a series). The summary keeps the whole result under `collectives`, its headline
`figures` beside it (each op's peak busbw in GB/s, its small-size latency in µs: names whose unit says which way is
better, as console.storage.figures reads them), and `valid`: completed with every op's result checked. There are
no per-call latencies (each size has its own time), so `iterations` is 0 and compare sets the figures side by side.

A run is `completed` only when the result holds the contract's keys; a malformed one, or an op whose check
failed, is stored `failed` with the cause. Qt-free; reads never write.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from console.storage.launch import Outcome
from console.storage.runs import add_failure, check_result, checked_status, keep_run

SCENARIO = "collectives"
ENGINE = "torch.distributed"
KEYS = ("backend", "ranks", "placement", "ops", "busbw_factor")

__all__ = ["spec_for", "summary_for", "store", "latest", "is_collectives_run", "SCENARIO", "ENGINE"]


# ---- Public API
def spec_for(options: Mapping[str, Any], label: str | None = None) -> dict[str, Any]:
    """The spec a collectives run is stored under (see the module docstring)."""
    opts = {k: v for k, v in dict(options).items() if k != "sizes_bytes"}
    return {"scenario": SCENARIO, "model": label or "collectives", "engine": ENGINE,
            "target": "cuda" if opts.get("backend") == "nccl" else "cpu", "scenario_options": opts}


def problems_of(result: Any) -> list[str]:
    """What is wrong with a collectives result against the contract (empty when nothing)."""
    problems = check_result("collectives", result)
    if isinstance(result, dict):
        problems += [f"it lacks {key!r}" for key in KEYS if key not in result]
        ops = result.get("ops")
        if isinstance(ops, dict):
            for op, rows in ops.items():
                if not isinstance(rows, list) or any(not isinstance(r, dict) or "busbw_gbs" not in r for r in rows):
                    problems.append(f"its {op} rows are not size rows with busbw_gbs")
        unchecked = [op for op, ok in (result.get("checked") or {}).items() if ok is not True]
        if unchecked:
            problems.append(f"the result check failed for {', '.join(unchecked)}")
    return problems


def summary_for(outcome: Outcome, status: str, cause: str | None) -> dict[str, Any]:
    """The summary stored with the run (see the module docstring)."""
    result = dict(outcome.result or {})
    summary: dict[str, Any] = {
        "collectives": result or None, "figures": dict(result.get("figures") or {}), "passed": None,
        "valid": status == "completed", "status_reason": result.get("status_reason") or "",
        "cache_state": "n/a", "method": result.get("method"), "iterations": 0, "latency_ms": None,
        "latency_of": "none: each size has its own time, kept under collectives.ops",
        "throughput_per_s": None, "duration_s": round(outcome.wall_s, 3), "invalid_reasons": [], "warnings": [],
    }
    return add_failure(summary, outcome, status, cause)


def store(outcome: Outcome, db: Any, options: Mapping[str, Any] | None = None,
          tags: list[str] | None = None) -> str:
    """Keep `outcome` as a run in `db` (a HistoryStore or HistoryWriter); returns its run id. The final status and
    cause are in the stored run (see status_of); a completed outcome with a malformed result is stored failed."""
    return store_with_status(outcome, db, options, tags)[0]


def store_with_status(outcome: Outcome, db: Any, options: Mapping[str, Any] | None = None,
                      tags: list[str] | None = None) -> tuple[str, str, str | None]:
    """store(), also returning (status, cause) as stored."""
    if not options and isinstance(outcome.result, dict):  # what the result says was asked
        options = {key: outcome.result.get(key) for key in ("backend", "ranks", "placement", "sizes", "iters",
                                                            "warmup", "trials", "rank_time")}
        options["ops"] = list(outcome.result.get("ops") or {})
    status, cause = checked_status(outcome, problems_of, "collectives")
    label = (outcome.result or {}).get("label") if isinstance(outcome.result, dict) else None
    spec = spec_for(options or {}, label if isinstance(label, str) and label else None)
    run_id = keep_run(db, spec, status, summary_for(outcome, status, cause), cause, tags,
                      {"collectives": {"backend": (options or {}).get("backend"),
                                       "placement": (options or {}).get("placement")}})
    return run_id, status, cause


def is_collectives_run(run: Mapping[str, Any]) -> bool:
    """Whether a stored run (get_run/list_runs row) is a collectives benchmark."""
    return str((run.get("spec") or {}).get("scenario") or run.get("scenario") or "") == SCENARIO


def latest(db: Any, n: int = 5) -> list[tuple[str, dict[str, Any]]]:
    """The newest `n` completed collectives runs as (run_id, result), newest first: what the window shows. Reads."""
    found: list[tuple[str, dict[str, Any]]] = []
    for run in db.list_runs(status="completed", engine=ENGINE, limit=max(50, 4 * n)):
        result = (run.get("summary") or {}).get("collectives")
        if is_collectives_run(run) and isinstance(result, dict):
            found.append((run["run_id"], result))
            if len(found) >= n:
                break
    return found
