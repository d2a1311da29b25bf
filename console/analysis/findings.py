"""What a measurement alone cannot say, added to a finished run's summary from this host's machine card.

Why here, once: the verdict (for a profiled run), the decoder's bandwidth utilization (generate), and storage
reads beside their ceiling are judged the same way whether the run came from the window, `run` or `analyze`, and
are stored with the run, so the history, the summary card and a report all read the same finding. Each judges
what the run's scenario reported (decode bytes, storage reads), never the scenario's name, so a new scenario
that reports those figures is judged the same way. The card is
passed in (console.machine.cards.card_to_judge_by reads it from the history; a summary never starts a measurement);
without one, each block says what it could not judge and why.
"""

from __future__ import annotations

from typing import Any

from console.analysis import decoder, scaling_verdict, verdict_stability
from console.analysis.storage import storage_block


def add_findings(summary: dict[str, Any], spec: dict[str, Any], profile: dict[str, Any] | None,
                 ops: list[dict[str, Any]], card: dict[str, Any] | None) -> dict[str, Any]:
    """Set summary["bottleneck"] (a profiled run, or a data-parallel run's breakdown), ["decoder"] (via decoder.annotate), ["storage"] and ["machine_card"]."""
    summary["machine_card"] = ({"card_id": card.get("card_id"), "host": card.get("host"),
                                "measured_at": card.get("measured_at")} if card else None)
    if ops or scaling_verdict.ddp_of(summary) is not None:  # a DDP run's breakdown is its evidence, profile or not
        summary["bottleneck"] = verdict_stability.judge({  # with its stability over the profiled iterations
            "spec": spec, "summary": summary, "ops": ops, "profile": dict(profile or {}), "machine": card,
            "counters": (profile or {}).get("counters")})
    decoder.annotate(summary, card)  # a run whose scenario reported decode bytes per token (generate)
    storage = storage_block(summary, card)
    if storage is not None:
        summary["storage"] = storage
    return summary
