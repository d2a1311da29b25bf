"""The one timer that redraws every live plot, and the switch between full-speed and quiet painting.

One timer, not one per plot: redraws stay in step, plots that follow another's time axis redraw after it, and the
timer stops when no plot is left.
"""

from __future__ import annotations

import math
import weakref
from typing import ClassVar, Protocol

from PySide6 import QtCore

from widgets.live_plot.paint_rates import REFRESH_INTERVAL_MS, PaintRates, state


class _Plot(Protocol):
    """What the hub needs of a live plot (widgets.live_plot.time_plot.TimePlot), named here so the hub, which the
    plots import, does not import them back."""

    PAINT_KIND: ClassVar[str]  # "latency" or "telemetry": which quiet rate it redraws at

    def _refresh_if_due(self) -> None: ...

    def _catch_up(self) -> None: ...


class RefreshHub(QtCore.QObject):
    """One timer for every live plot: redraws stay in step, and the timer stops when no plot is left.

    Plots redraw in the order they were made: the Run page's latency plot, whose time axis the others follow, first.
    While painting is quiet the timer ticks at the latency trace's rate and a telemetry plot redraws every few ticks.
    """

    sig_tick = QtCore.Signal()
    sig_quiet = QtCore.Signal(bool)

    def __init__(self, parent: QtCore.QObject | None):
        super().__init__(parent)
        self._plots: weakref.WeakKeyDictionary[_Plot, None] = weakref.WeakKeyDictionary()
        self._ticks = 0
        self._timer = QtCore.QTimer(self)
        self._timer.setInterval(state.quiet.latency_ms if state.quiet is not None else REFRESH_INTERVAL_MS)
        self._timer.timeout.connect(self._tick)

    def register(self, plot: _Plot) -> None:
        self._plots[plot] = None
        if not self._timer.isActive():
            self._timer.start()

    def interval_ms(self) -> int:
        """Milliseconds between ticks now."""
        return self._timer.interval()

    def _tick(self) -> None:
        if not self._plots:
            self._timer.stop()
            return
        self._ticks += 1
        state.axis_tick = state.quiet is None or self._ticks % self._every("telemetry") == 0
        try:
            for plot in list(self._plots):
                try:
                    if state.quiet is None or self._ticks % self._every(plot.PAINT_KIND) == 0:
                        plot._refresh_if_due()
                except RuntimeError:  # its C++ side was deleted with a parent
                    self._plots.pop(plot, None)
        finally:
            state.axis_tick = True
        self.sig_tick.emit()

    def _every(self, kind: str) -> int:
        """Ticks between a quiet plot's frames: its kind's interval over the timer's."""
        wanted = state.quiet.latency_ms if kind == "latency" else state.quiet.telemetry_ms
        return max(1, math.ceil(wanted / max(1, self._timer.interval())))

    def _catch_up(self) -> None:
        for plot in list(self._plots):
            try:
                plot._catch_up()
            except RuntimeError:
                self._plots.pop(plot, None)


_hub: RefreshHub | None = None


def refresh_hub() -> RefreshHub:
    """The hub of the running application (a new one when the application that owned the last one is gone)."""
    global _hub
    app = QtCore.QCoreApplication.instance()
    if _hub is not None:
        try:
            if _hub.parent() is app:
                return _hub
        except RuntimeError:  # the application that owned it is gone
            pass
    _hub = RefreshHub(app)
    return _hub


def paint_clock() -> RefreshHub:
    """The one timer that drives every live plot's redraw: `sig_tick` after each of its ticks (other widgets that
    should update no faster than the plots can follow it), `sig_quiet(bool)` when quiet painting starts or ends."""
    return refresh_hub()


def set_quiet(rates: PaintRates | None) -> None:
    """Paint at `rates` (a run is measuring), or at full speed again (None): then every visible plot is redrawn
    in full at once, and hidden ones when they are shown. Safe to call repeatedly with the same value."""
    was = state.quiet
    state.quiet = rates
    hub = refresh_hub()
    hub._timer.setInterval(rates.latency_ms if rates is not None else REFRESH_INTERVAL_MS)
    if rates is None and was is not None:
        hub._catch_up()
    if (was is None) != (rates is None):
        hub.sig_quiet.emit(rates is not None)
