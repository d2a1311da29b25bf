"""The machine card an analysis is judged against, whichever surface asks: this host's stored card for the target,
else one measured now and kept in the history (once per host and target).

Why one function: the window's Analyze once profiled with no card stored and judged without roofs ("Bound by
compute" for a batch-1 MLP at 2% of the CPU's peak), while `labconsole analyze` of the same spec measured the card
first and said "cache-resident". Both now ask here before the run starts, so the session's stored verdict (which
console.analysis.findings judges against the stored card) cannot differ by surface. The lookup is
console.machine's, the one the CLI always used. Qt-free: the window calls `card_for_analysis` on a background
thread, `analysis_verdict` anywhere.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from console.analysis import profile_view


@dataclass(frozen=True)
class AnalysisCard:
    """The card (None when it could not be had), why not (`note`, "" with a card), and whether it was measured
    now rather than read from the history."""

    card: dict[str, Any] | None
    note: str = ""
    measured: bool = False


# ---- Public API
def stored_card(target: str, db: str | os.PathLike | None = None) -> dict[str, Any] | None:
    """This host's stored card for `target` that an analysis would use; None when one must be measured first (or
    the history cannot be read: measuring then says why). A short read of the history: the window asks it on the
    GUI thread to know whether to wait for a measurement."""
    from console.history import HistoryError
    from console.machine import stored_card as stored

    try:
        return stored(target, db)
    except (HistoryError, OSError):
        return None


def card_for_analysis(target: str, db: str | os.PathLike | None = None,
                      on_progress: Callable[[str], None] | None = None) -> AnalysisCard:
    """The stored card, else one measured now (minutes; `on_progress(text)` hears each step, on a helper thread)
    and stored, so the run's verdict is judged against it. Never raises: a card that cannot be had is a note, and
    the op table stands without roofs (the verdict then says the card is missing)."""
    from console.machine import card_for
    from console.machine import stored_card as stored

    try:
        had = stored(target, db)
        if had is not None:
            return AnalysisCard(had)
        return AnalysisCard(card_for(target, db=db, on_progress=on_progress), measured=True)
    except Exception as exc:  # noqa: BLE001 — a worker's error comes back as is; the analysis goes on without roofs
        return AnalysisCard(None, f"no machine card ({type(exc).__name__}: {exc}): ops shown without roofs")


def analysis_verdict(record: dict[str, Any], card: dict[str, Any] | None) -> dict[str, Any] | None:
    """The verdict of a finished analysed run: the one stored with it (judged by the session against the card
    above), else judged now against `card`; None when the run has no op table or did not complete."""
    if record.get("status", "completed") != "completed":
        return None
    return (record.get("summary") or {}).get("bottleneck") or profile_view.verdict(record, card)
