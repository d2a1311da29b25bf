"""Summaries stored in an older shape, read in today's: the one place a stored summary's keys are upgraded.

Why: until issue 24, summary["storage"] meant two things. console.analysis.findings puts a run's storage reads
beside the machine's ceiling there (model file, input data, checkpoints: docs/storage.md), and a run whose data did
not all reach the history (console.analysis.finished_run.storage_lost, an interrupted run's summary) put its
{"complete": False, "stored_iterations", ...} there too, overwriting the finding. The second now has its own key,
summary["stored"]; a row stored before keeps it under "storage" (told apart by its "complete" key) and is read
as if it had been stored today. Qt-free, plain dicts.
"""

from __future__ import annotations

from typing import Any

__all__ = ["read_summary"]


def read_summary(summary: Any) -> Any:
    """`summary` (a decoded run summary, or None) in today's shape, changed in place and returned."""
    if isinstance(summary, dict) and "stored" not in summary:
        old = summary.get("storage")
        if isinstance(old, dict) and "complete" in old:  # what the history lacked, stored under "storage"
            summary["stored"] = summary.pop("storage")
    return summary
