"""Analyze's first step in the window: this host's machine card for the target, as `labconsole analyze` has it.

Why: a verdict is judged against the card stored when the run ends (console.analysis.findings). The CLI measured
one first; the window did not, and so judged a fresh machine's runs without roofs. Here the window asks the same
Qt-free function (console.machine.cards.card_for_analysis): with a stored card the run starts at once;
without one the card is measured on a background thread (the GUI stays live, the Run page's progress line says
what is being measured and for how long), or — when the Machine page is measuring one already — waited for; then
the run starts. Measuring holds the workspace's "machine card" state, so nothing else measures meanwhile.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from PySide6 import QtCore

from console.machine.cards import AnalysisCard, card_before_analysis, card_for_analysis
from console.ui.background import BackgroundCall
from console.ui.workspace import MACHINE, Busy, Workspace
from widgets.phase_progress import PhaseProgress

POLL_MS = 500  # how often a wait for the Machine page's measurement looks again
PHASE = "Measuring the machine card"


class CardBeforeAnalyze(QtCore.QObject):
    """Gets the card, then calls the continuation (which starts the run) on the GUI thread."""

    sig_progress = QtCore.Signal(str)  # from the measuring thread; shown on the GUI thread
    sig_ready = QtCore.Signal(object)  # AnalysisCard, just before the run is started (tests wait on it)

    def __init__(self, workspace: Workspace, db_path: Path, progress: PhaseProgress,
                 set_busy: Callable[[bool], None], say: Callable[[str], None],
                 measure: Callable[..., AnalysisCard] = card_for_analysis, parent: QtCore.QObject | None = None):
        super().__init__(parent)
        self._workspace, self._db = workspace, db_path
        self._progress, self._set_busy, self._say = progress, set_busy, say
        self._measure = measure
        self._then: Callable[[], Any] | None = None
        self._target = ""
        self._call: BackgroundCall | None = None
        self._started = 0.0
        self._poll = QtCore.QTimer(self)
        self._poll.setInterval(POLL_MS)
        self._poll.timeout.connect(self._look_again)
        self.sig_progress.connect(self._show_progress)

    # ---- Public API
    @property
    def pending(self) -> bool:
        """A card is being measured or waited for, and the run has not started yet."""
        return self._then is not None

    def then(self, target: str, start: Callable[[], Any]) -> Any:
        """`start()` now when this host has a card for `target` (its result is returned); else None, and
        `start()` runs once the card is measured (or the Machine page's measurement ends)."""
        if self._then is not None:
            self._say("Analyze is already waiting for the machine card")
            return None
        measuring = self._workspace.measuring == MACHINE  # the Machine page measures: its card is the one to use
        if not measuring and card_before_analysis(target, self._db) is not None:
            return start()
        self._then, self._target = start, target
        self._started = time.monotonic()
        self._set_busy(True)
        self._progress.reset()
        if measuring:
            self._progress.set_phase(PHASE, "waiting for the Machine page's measurement to finish")
            self._progress.set_fraction(None)
            self._poll.start()
            return None
        self._measure_now()
        return None

    def cancel(self) -> bool:
        """Stop: the run is not started. A measurement already going finishes in its worker and is kept (a card
        cut short would be wrong); True when there was something to cancel."""
        if self._then is None:
            return False
        self._then = None
        self._poll.stop()
        self._set_busy(False)
        self._progress.finish("cancelled", "Analyze cancelled" + (
            "; the machine card still finishes measuring in the background and is kept" if self._call else ""))
        return True

    def shutdown(self) -> None:
        """The window is closing: drop what is still to come."""
        self._then = None
        self._poll.stop()
        if self._call is not None:
            self._call.stop()

    # ---- Private API
    def _measure_now(self) -> None:
        try:
            self._workspace.claim(MACHINE)  # a run or a sweep now would disturb the ceilings, and the reverse
        except Busy as exc:
            self._then = None
            self._set_busy(False)
            self._progress.finish("failed", str(exc))
            return
        self._progress.set_phase(PHASE, f"{self._target}: starting a worker (once per host and target; kept in "
                                        "the history)")
        self._progress.set_fraction(None)
        self._call = BackgroundCall(self)
        self._call.sig_done.connect(self._measured)
        self._call.sig_failed.connect(lambda text: self._measured(AnalysisCard(None, f"no machine card ({text})")))
        self._call.start(self._measure, self._target, self._db, self.sig_progress.emit)

    def _look_again(self) -> None:
        if self._workspace.measuring == MACHINE:
            self._progress.set_phase(PHASE, f"waiting for the Machine page's measurement "
                                            f"({time.monotonic() - self._started:.0f} s)")
            return
        self._poll.stop()
        if self._then is None:
            return
        card = card_before_analysis(self._target, self._db)
        if card is not None:
            self._ready(AnalysisCard(card))
        else:  # that measurement failed or was for another target: measure this one
            self._measure_now()

    def _show_progress(self, text: str) -> None:
        if self._call is not None:
            self._progress.set_phase(PHASE, f"{self._target}: {text} ({time.monotonic() - self._started:.0f} s)")

    def _measured(self, answer: AnalysisCard) -> None:
        self._call = None
        self._workspace.release(MACHINE)
        if self._then is None:  # cancelled meanwhile: the card is kept, no run starts
            self._say("Machine card measured and kept; Analyze was cancelled, so no run was started")
            return
        took = time.monotonic() - self._started
        self._say(f"Machine card of {self._target} measured in {took:.0f} s and kept" if answer.card else
                  f"Analyzing without roofs: {answer.note}")
        self._ready(answer)

    def _ready(self, answer: AnalysisCard) -> None:
        start, self._then = self._then, None
        self._set_busy(False)
        self.sig_ready.emit(answer)
        if start is not None:
            start()
