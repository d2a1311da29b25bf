"""A profiled run's op table against the machine's roofs, and its verdict: what `analyze` and the window show.

Why one place: the command line and the Run page must put the same roofs under the same op rows and ask the
verdict the same question (console.analysis.roofline and .bottleneck do the judging; this only assembles their
input from a finished run). Qt-free.
"""

from __future__ import annotations

from typing import Any

from console.analysis import roofline, verdict_stability

PROFILE_ITERATIONS = 10  # what `analyze` and the window's Analyze profile when not told otherwise


def annotated_ops(ops: list[dict[str, Any]], card: dict[str, Any] | None, precision: str) -> list[dict[str, Any]]:
    """The op rows with efficiency, bound and roof from the card (copies; unchanged without a usable card)."""
    if not card:
        return [dict(op) for op in ops]
    try:
        return roofline.annotate(ops, card, precision)
    except roofline.RooflineError:
        return [dict(op) for op in ops]


def analysis_run(record: dict[str, Any], card: dict[str, Any] | None) -> dict[str, Any]:
    """The run dict console.analysis.bottleneck.diagnose reads, from a RunSession `finished` record."""
    profile = dict(record.get("profile") or {})
    return {"spec": record.get("spec") or {}, "summary": record.get("summary") or {},
            "ops": list(record.get("ops") or []), "profile": profile, "machine": card,
            "counters": profile.get("counters")}


def verdict(record: dict[str, Any], card: dict[str, Any] | None) -> dict[str, Any] | None:
    """The bottleneck verdict of a profiled run; None when the run has no op table to judge."""
    if not record.get("ops"):
        return None
    return verdict_stability.judge(analysis_run(record, card))  # with its stability over the profiled iterations
