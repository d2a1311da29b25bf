"""A finished run's record — status, summary, findings, baseline comparison, storage state — worked out in one place.

Why one owner: the session that ran it, the recovery of a run a dead console left `running`, `analyze`, a run on a
cluster node and the Run page all need the same facts about a finished run; each once worked them out itself. Here
they are computed from what was measured and what was read, and nothing here does I/O: what must be read or
measured (the machine card, what the history failed to store, the baseline, a fresh noise floor) comes through a
`Reads` the caller supplies, asked only when the record needs it, in the order the record needs it.
"""

from __future__ import annotations

import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from console.analysis import profile_view
from console.analysis.summary import summarize

PROFILE_KEYS = ("engine", "iterations", "wall_s", "op_time_s", "trace_path", "counters", "notes", "per_iteration")


class Reads(Protocol):
    """What a record needs from outside: the caller's I/O, each asked at most once."""

    def noise_floor_now(self, summary: dict[str, Any]) -> dict[str, Any] | None:
        """A fresh noise floor to judge the run again by (the floor made it INVALID), else None."""

    def card(self) -> dict[str, Any] | None:
        """The machine card the findings are judged against; None without one (raises: no findings, a note)."""

    def lost(self) -> dict[str, Any] | None:
        """What of the run the history could not store (`storage_lost`), None when all of it is stored."""

    def baseline(self) -> tuple[dict[str, Any], dict[str, Any], np.ndarray] | None:
        """The run as the baseline verdict reads it (spec, environment, hostname, fingerprint), its configuration's
        stored baseline run and that run's latencies; None when it has none (or is its own)."""


@dataclass
class Measured:
    """What the worker, the sampler and the console delivered for one run (plain data)."""

    latency_ns: np.ndarray
    t_ns: np.ndarray
    result: dict[str, Any] | None = None  # the worker's result event (None: it sent none)
    loaded: dict[str, Any] | None = None
    samples: list[tuple] = field(default_factory=list)
    window_ns: tuple[int, int] | None = None  # the measuring phase, what energy and telemetry cover
    phases: list[list[Any]] = field(default_factory=list)
    profile: dict[str, Any] | None = None  # the profile event minus its op rows
    ops: list[dict[str, Any]] = field(default_factory=list)
    t0_ns: int = 0


@dataclass
class Context:
    """Where and how the run ran: what the summary is judged by and what it states beside its figures."""

    run_id: str
    spec: dict[str, Any]  # RunSpec.to_dict()
    environment: dict[str, Any]
    rules: Any = None  # ValidityRules
    noise_floor: dict[str, Any] | None = None
    warnings: list[str] = field(default_factory=list)  # beyond the worker's hygiene (telemetry, console cost)
    notes: list[str] = field(default_factory=list)  # the console's cost notes
    console_cpu: dict[str, Any] | None = None
    clock: Callable[[], int] = time.perf_counter_ns


@dataclass
class Finished:
    """The run's end before it is stored: status, message, summary, and the card the findings used."""

    status: str
    message: str | None
    summary: dict[str, Any]
    card: dict[str, Any] | None = None
    lost: dict[str, Any] | None = None  # what the history could not store, when the run lost data

    @property
    def error(self) -> str | None:
        return self.message if self.status != "completed" else None


# ---- Public API
def finish(measured: Measured, context: Context, outcome: Any, reads: Reads) -> Finished:
    """The summary with its findings, storage state and baseline verdict, and the status a run that lost data
    takes (`failed`, whatever the worker said). `outcome`: console.run.runner.Outcome (status, message, result, error)."""
    spec = context.spec
    summary = measured_summary(measured, spec, context.rules, context.noise_floor, reads.noise_floor_now)
    hygiene = context.environment.get("hygiene") or {}
    summary["partition"], summary["console_cpu"] = context.environment.get("partition"), context.console_cpu
    summary["warnings"] = list(hygiene.get("warnings") or []) + list(context.warnings)
    summary["notes"] = summary["warnings"] + list(context.notes) + summary["notes"]
    summary["t0_ns"] = measured.t0_ns
    summary["t_end_ns"] = context.clock()
    summary["phases"] = measured.phases
    if measured.profile is not None:
        # per_iteration (≤ 64 × 64 op times): a stored run's verdict is resampled again when it is re-judged
        summary["profile"] = {key: measured.profile.get(key) for key in PROFILE_KEYS}
        summary["profile"]["ops"] = len(measured.ops)
    card = _add_findings(summary, spec, measured, reads)
    status, message = outcome.status, outcome.message
    lost = reads.lost()
    if lost is not None:
        status, message = failed_storing(summary, lost, status, message)
    if status == "completed":
        _add_baseline(summary, measured, reads)
    if outcome.error:
        summary["traceback"] = outcome.error.get("traceback")
    return Finished(status, message, summary, card, lost)


def record(finished: Finished, measured: Measured, context: Context) -> dict[str, Any]:
    """The `finished` event a session hands its listeners and `wait()` returns."""
    return {"type": "finished", "run_id": context.run_id, "status": finished.status, "message": finished.message,
            "summary": finished.summary, "spec": context.spec, "environment": context.environment,
            "profile": measured.profile, "ops": measured.ops, "card": finished.card}


def measured_summary(measured: Measured, spec: dict[str, Any], rules: Any, noise_floor: dict[str, Any] | None,
                     noise_floor_now: Callable[[dict[str, Any]], dict[str, Any] | None] | None = None
                     ) -> dict[str, Any]:
    """The statistics, energy and validity of what was measured, judged by `noise_floor` — again by a fresh one
    when `noise_floor_now` gives one; when energy or telemetry cannot be summarised, the latency figures alone
    with a note saying why (the run must still end and be stored)."""
    batch, scenario = int(spec.get("batch") or 1), spec.get("scenario")
    try:
        summary = _summarize(measured, spec, rules, noise_floor)
        fresh = noise_floor_now(summary) if noise_floor_now is not None else None
        if fresh is not None:  # the floor decided INVALID: judged again by the machine as it is now
            noise_floor = fresh
            summary = _summarize(measured, spec, rules, noise_floor)
    except Exception as exc:  # noqa: BLE001 — the run must still end and be stored, with the reason
        traceback.print_exc()
        summary = summarize(measured.latency_ns, measured.result, measured.loaded, batch, scenario=scenario,
                            rules=rules, noise_floor=noise_floor)
        summary["notes"].insert(0, f"energy/telemetry summary failed ({type(exc).__name__}: {exc}); "
                                   "latency figures are unaffected")
    return summary


def storage_lost(measured: int, missing: dict[str, Any] | None) -> dict[str, Any] | None:
    """The summary's `storage` block from what a writer could not store (HistoryWriter.unstored: iterations,
    samples, writes, error); None when nothing is missing."""
    if missing is None:
        return None
    cause = missing.get("error")
    stored = max(0, measured - missing["iterations"])
    parts = [f"{missing['iterations']} of its {measured} measured iterations"]
    if missing["samples"]:
        parts.append(f"{missing['samples']} telemetry samples")
    if missing["writes"]:
        parts.append(f"{missing['writes']} other records (such as its end or its profile)")
    fix = getattr(cause, "fix", None)  # a HistoryError says what went wrong and what to do
    message = (f"the history could not store all of this run: {', '.join(parts)} are missing from it"
               + (f" ({cause.problem}). Fix: {fix}" if fix is not None and hasattr(cause, "problem") else ""))
    return {"complete": False, "measured_iterations": measured, "stored_iterations": stored,
            "missing_iterations": missing["iterations"], "missing_samples": missing["samples"],
            "missing_writes": missing["writes"], "cause": str(cause) if cause is not None else None,
            "message": message}


def failed_storing(summary: dict[str, Any], lost: dict[str, Any], status: str,
                   message: str | None) -> tuple[str, str]:
    """A run whose data did not all reach the history is `failed`, whatever the worker said; the summary
    (computed from everything measured) stays, and says how much the history lacks."""
    summary["stored"] = lost
    summary["notes"].insert(0, lost["message"])
    if status == "failed" and message:
        return "failed", f"{message}; {lost['message']}"
    return "failed", lost["message"]


def interrupted_summary(spec: dict[str, Any], t_ns: np.ndarray, latency_ns: np.ndarray, batch: int, rules: Any,
                        computed_at: str) -> dict[str, Any]:
    """The summary of a run a dead console left `running`, from the latencies it committed: never valid, and it
    says what is missing (console.history.recovery reads the rows)."""
    span_s = float(t_ns[-1] + latency_ns[-1] - t_ns[0]) / 1e9 if len(t_ns) else None
    summary = summarize(latency_ns, {"measured_s": span_s} if span_s else None, None, batch, t_ns=t_ns,
                        mode=str(spec.get("mode") or "inference"), rules=rules,
                        scenario=spec.get("scenario") if isinstance(spec.get("scenario"), str) else None)
    stored = int(latency_ns.size)
    reason = {"rule": "interrupted",
              "detail": f"the run was interrupted; this summary covers only the {stored} iterations stored "
                        "before the console stopped",
              "fix": "rerun it (the lost part is whatever it measured after its last commit, about a second)"}
    summary["valid"] = False
    summary["invalid_reasons"] = [reason, *summary["invalid_reasons"]]
    summary["notes"].insert(0, f"{reason['detail']} — {reason['fix']}")
    summary["stored"] = {
        "complete": False, "stored_iterations": stored, "missing_iterations": None,
        "missing": "whatever the run measured after its last commit (up to about a second); its load time, "
                   "first inference and telemetry summary were never stored",
        "computed_at": computed_at,
    }
    return summary


def roofs_card(record: dict[str, Any], lookup: Callable[[str], dict[str, Any] | None] | None
               ) -> dict[str, Any] | None:
    """The card a finished run's op table is held against: the one its findings used (the record's "card"), else
    this host's looked up for its target; none for a run on a cluster node, whose machine is not this host's."""
    if (record.get("environment") or {}).get("node"):
        return None
    if "card" in record:
        return record["card"]
    return lookup(str((record.get("spec") or {}).get("target") or "cpu")) if lookup is not None else None


def op_table(record: dict[str, Any], card: dict[str, Any] | None) -> list[dict[str, Any]]:
    """The run's op rows with efficiency, bound and roof from `card` (copies; plain rows without a card)."""
    precision = str((record.get("spec") or {}).get("precision") or "fp32")
    return profile_view.annotated_ops(record.get("ops") or [], card, precision)


def analysis_verdict(record: dict[str, Any], card: dict[str, Any] | None) -> dict[str, Any] | None:
    """The verdict of a finished analysed run: the one stored with it (judged against the card its findings
    used), else judged now against `card`; None when the run has no op table or did not complete."""
    if record.get("status", "completed") != "completed":
        return None
    return (record.get("summary") or {}).get("bottleneck") or profile_view.verdict(record, card)


# ---- Private API
def _summarize(measured: Measured, spec: dict[str, Any], rules: Any,
               noise_floor: dict[str, Any] | None) -> dict[str, Any]:
    return summarize(measured.latency_ns, measured.result, measured.loaded, int(spec.get("batch") or 1),
                     t_ns=measured.t_ns, samples=measured.samples, window_ns=measured.window_ns,
                     mode=spec.get("mode") or "inference", scenario=spec.get("scenario"), rules=rules,
                     noise_floor=noise_floor)


def _add_findings(summary: dict[str, Any], spec: dict[str, Any], measured: Measured,
                  reads: Reads) -> dict[str, Any] | None:
    """The verdict, decoder and storage findings against the card; never loses the run. The card used."""
    from console.analysis.findings import add_findings

    try:
        card = reads.card()
        add_findings(summary, spec, measured.profile, measured.ops, card)
    except Exception as exc:  # noqa: BLE001 — a finding that fails is a note, not a lost run
        summary["notes"].append(f"findings could not be added ({type(exc).__name__}: {exc})")
        return None
    return card


def _add_baseline(summary: dict[str, Any], measured: Measured, reads: Reads) -> None:
    """The verdict against this configuration's baseline, when it has one; never loses the run."""
    from console.analysis.baseline import verdict

    try:
        stored = reads.baseline()
        if stored is None:
            return
        run, baseline, baseline_latency_ns = stored
        block = verdict(run, measured.latency_ns, baseline, baseline_latency_ns)
    except Exception as exc:  # noqa: BLE001 — a comparison that fails is a note, not a lost run
        summary["notes"].append(f"not compared with its baseline ({type(exc).__name__}: {exc})")
        return
    if block is not None:
        summary["baseline"] = block
