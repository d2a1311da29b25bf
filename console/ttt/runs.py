"""A time-to-train outcome kept as a run in the history, so `history`, `compare` and `report` find it.

The run's spec says what was asked: scenario "time-to-train", the task ("ttt-mlp") as the model, engine
"torch.distributed", target "cpu" (gloo) or "cuda" (nccl), and the normalized options under `scenario_options`
less the seed, so the runs of one MLPerf-style score (same options, a seed each) form one series. The summary
keeps the whole result under `time_to_train` (the seed inside, at task.seed), its headline `figures` beside it
(time_to_train_s and steps_to_train, lower is better; energy_to_train_j when a counter was read), `passed`: the
target was reached, and `valid`: completed and reached. There are no per-step latencies (the figure is one time),
so `iterations` is the number of optimizer steps and compare sets the figures side by side.

A run is `completed` only when the result holds the contract's keys; a malformed one is stored `failed` with the
cause. Qt-free; reads never write.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from console.storage.launch import Outcome
from console.storage.runs import add_failure, check_result, checked_status, keep_run
from engines.ttt import NAME

SCENARIO = NAME
ENGINE = "torch.distributed"
KEYS = ("ranks", "backend", "reached", "time_to_train_s", "steps", "samples", "quality_curve", "target_quality",
        "energy_j", "energy_method", "task")

__all__ = ["spec_for", "summary_for", "store", "store_with_status", "problems_of", "is_ttt_run", "SCENARIO",
           "ENGINE"]


# ---- Public API
def spec_for(options: Mapping[str, Any], label: str | None = None) -> dict[str, Any]:
    """The spec a time-to-train run is stored under (see the module docstring)."""
    opts = {k: v for k, v in dict(options).items() if k not in ("seed", "placement")}
    return {"scenario": SCENARIO, "model": label or str(opts.get("task") or "ttt-mlp"), "engine": ENGINE,
            "target": "cuda" if opts.get("backend") == "nccl" else "cpu", "scenario_options": opts}


def problems_of(result: Any) -> list[str]:
    """What is wrong with a time-to-train result against the contract (empty when nothing)."""
    problems = check_result(NAME, result)
    if isinstance(result, dict):
        problems += [f"it lacks {key!r}" for key in KEYS if key not in result]
        if result.get("reached") is True and not isinstance(result.get("time_to_train_s"), (int, float)):
            problems.append("it says the target was reached but gives no time_to_train_s")
        if not isinstance(result.get("task"), dict) or "seed" not in (result.get("task") or {}):
            problems.append("its task does not name the seed")
    return problems


def summary_for(outcome: Outcome, status: str, cause: str | None) -> dict[str, Any]:
    """The summary stored with the run (see the module docstring)."""
    result = dict(outcome.result or {})
    reached = result.get("reached") is True
    summary: dict[str, Any] = {
        "time_to_train": result or None, "figures": dict(result.get("figures") or {}),
        "passed": reached if result else None, "valid": status == "completed" and reached,
        "status_reason": result.get("status_reason") or "", "cache_state": "n/a", "method": result.get("method"),
        "iterations": int(result.get("steps") or 0), "latency_ms": None,
        "latency_of": "none: one time-to-train per run, kept under time_to_train",
        "throughput_per_s": None, "duration_s": round(outcome.wall_s, 3), "invalid_reasons": [], "warnings": [],
    }
    if status == "completed" and not reached:
        summary["invalid_reasons"] = [result.get("status_reason") or "the target quality was not reached"]
    return add_failure(summary, outcome, status, cause)


def store(outcome: Outcome, db: Any, options: Mapping[str, Any] | None = None,
          tags: list[str] | None = None) -> str:
    """Keep `outcome` as a run in `db` (a HistoryStore or HistoryWriter); returns its run id."""
    return store_with_status(outcome, db, options, tags)[0]


def store_with_status(outcome: Outcome, db: Any, options: Mapping[str, Any] | None = None,
                      tags: list[str] | None = None) -> tuple[str, str, str | None]:
    """store(), also returning (status, cause) as stored; a completed outcome with a malformed result is stored
    failed with the cause."""
    status, cause = checked_status(outcome, problems_of, "time-to-train")
    result = outcome.result if isinstance(outcome.result, dict) else {}
    label = result.get("label")
    spec = spec_for(options or {}, label if isinstance(label, str) and label else None)
    run_id = keep_run(db, spec, status, summary_for(outcome, status, cause), cause, tags,
                      {"time_to_train": {"backend": (options or {}).get("backend"),
                                         "placement": result.get("placement"),
                                         "rank_hosts": result.get("rank_hosts"),
                                         "seed": (options or {}).get("seed")}})
    return run_id, status, cause


def is_ttt_run(run: Mapping[str, Any]) -> bool:
    """Whether a stored run (get_run/list_runs row) is a time-to-train run."""
    return str((run.get("spec") or {}).get("scenario") or run.get("scenario") or "") == SCENARIO
