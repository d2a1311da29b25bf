"""Paint less while a run measures: the window's plots, progress bar and demo screen compete with the measured
worker for CPU, so what the window shows would otherwise be partly a property of the window.

PaintBudget watches the run events the RunController delivers: when the `measuring` phase begins it turns the live
plots down to the quiet rates (widgets.live_plot.set_quiet: the latency trace at ~2 Hz with coarser decimation,
telemetry and per-core lines at the sampler's rate or slower, nothing redrawn that is not on screen); when that phase
ends — the next phase, or the run finishing, failing or being cancelled — it turns them back up, and every visible
plot redraws in full at once. Everything that paints follows the plots' one timer (live_plot.paint_clock).
"""

from __future__ import annotations

from typing import Any

from PySide6 import QtCore

from widgets.live_plot import PaintRates, quiet_rates, set_quiet

MEASURING = "measuring"


class PaintBudget(QtCore.QObject):
    """Quiet painting for exactly the measuring phase of each run the window shows."""

    # ---- Public API
    def __init__(self, rates: PaintRates | None = None, sampler_hz: float | None = None,
                 parent: QtCore.QObject | None = None):
        """`rates`: the quiet rates (the settings'; default PaintRates()); `sampler_hz`: the telemetry sampler's
        rate, which telemetry plots never outpace."""
        super().__init__(parent)
        self.rates = (rates or PaintRates()).for_sampler(sampler_hz)
        self.quiet_phases = 0  # measuring phases seen (for tests and the benchmark's record)

    def handle(self, event: dict[str, Any]) -> None:
        """One session event (GUI thread, after the pages have handled it)."""
        kind = event.get("type")
        if kind == "phase":
            if event.get("phase") == MEASURING:
                self.quiet_phases += 1
                set_quiet(self.rates)
            else:
                set_quiet(None)
        elif kind in ("started", "finished"):
            set_quiet(None)

    @property
    def quiet(self) -> bool:
        return quiet_rates() is not None

    def release(self) -> None:
        """Full-speed painting again (the window closes, or its controller goes away mid-run)."""
        set_quiet(None)
