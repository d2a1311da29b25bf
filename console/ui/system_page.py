"""The System page: live telemetry from launch, like a system monitor — every sensor the machine has.

Fed by the console's TelemetryHub; it follows the last few minutes. While a run (or anything else) measures and the
page is not shown, the hub's batches are held on the hub's thread and drawn when the page is shown or the
measuring ends: a hidden page costs the measured machine nothing. A plot whose sensors are all missing
says so in a short label instead of drawing zeros ("power: not available"), each source's reason and fix on hover;
estimated power is dashed and labelled.
"""

from __future__ import annotations

import collections
import threading
import time
from collections.abc import Callable
from typing import Any

from PySide6 import QtCore, QtGui, QtWidgets

from console.telemetry.hub import TelemetryHub
from console.telemetry.nvml_source import decode_throttle
from console.ui.telemetry_routes import PLOTS, THROTTLE, feed, missing_reasons
from widgets.live_plot import TimeSeriesPlot

FOLLOW_S = 300.0
# Clock-event bits that mean the GPU is held back (power, thermal, slowdown) — not idle or a user setting.
LIMITING_BITS = 0x4 | 0x8 | 0x20 | 0x40 | 0x80
# Rows held while hidden and measuring: the newest, as many as the hub keeps for a page that opens late (an hour's
# run on a many-core machine would otherwise hold hundreds of MB); the page follows only the last FOLLOW_S anyway.
HELD_ROWS = 200_000


class SystemPage(QtWidgets.QWidget):
    _relay_samples = QtCore.Signal(object)
    _relay_sources = QtCore.Signal(object)

    # ---- Public API
    def __init__(self, hub: TelemetryHub | None, parent: QtWidgets.QWidget | None = None,
                 measuring: Callable[[], str | None] = lambda: None):
        """`measuring()` names what measures now (the workspace's one measuring state), None when nothing does."""
        super().__init__(parent)
        self._hub = hub
        self._measuring = measuring
        self._shown = False  # set on the GUI thread by show/hide events, read on the hub's thread (a plain bool)
        self._held: collections.deque[tuple] = collections.deque(maxlen=HELD_ROWS)  # came hidden while measuring
        self._held_lock = threading.Lock()
        self._t0_ns = time.perf_counter_ns()
        self.plots = {spec.key: TimeSeriesPlot(spec.title, spec.y_label, spec.unit, y_range=spec.y_range)
                      for spec in PLOTS}
        self.summary = QtWidgets.QLabel("Waiting for the first samples…")
        self.summary.setWordWrap(True)
        grid = QtWidgets.QGridLayout()
        for index, plot in enumerate(self.plots.values()):
            plot.set_follow(FOLLOW_S)
            grid.addWidget(plot, index // 2, index % 2)
        layout = QtWidgets.QVBoxLayout(self)
        layout.addWidget(self.summary)
        layout.addLayout(grid, 1)
        self._throttled_since: dict[str, float] = {}
        self._relay_samples.connect(self.add_samples, QtCore.Qt.ConnectionType.QueuedConnection)
        self._relay_sources.connect(self.show_sources, QtCore.Qt.ConnectionType.QueuedConnection)
        if hub is None:
            for plot in self.plots.values():
                plot.set_unavailable("telemetry is off")
            self.summary.setText("Telemetry is off in this window.")
            return
        self.add_samples(hub.recent())
        self._token = hub.subscribe(self._from_hub, self._relay_sources.emit)

    def close_feed(self) -> None:
        if self._hub is not None:
            self._hub.unsubscribe(self._token)

    def add_samples(self, rows: list[tuple]) -> None:
        """Route a batch of sample rows to the plots (GUI thread)."""
        feed(self.plots, rows, self._t0_ns)
        for t_ns, _source, metric, value, _unit, _method in rows:
            if THROTTLE.fullmatch(metric):
                self._throttle(metric, t_ns, value)

    def show_sources(self, sources: list[dict[str, Any]]) -> None:
        for spec in PLOTS:
            reasons = missing_reasons(spec, sources)
            if reasons:
                self.plots[spec.key].set_unavailable("\n".join(reasons))
            else:
                self.plots[spec.key].set_available()
        available = [s["name"] for s in sources if s.get("available")]
        missing = [s for s in sources if not s.get("available")]
        # One line: the names only; why each is missing (and the fix) is the tooltip, not a paragraph here.
        self.summary.setText(f"Sources sampling: {', '.join(available) or 'none'}."
                             + (f"  Not available: {', '.join(s['name'] for s in missing)} (hover for why)."
                                if missing else ""))
        self.summary.setToolTip(QtGui.Qt.convertFromPlainText(
            "\n".join(f"{s['name']}: {s.get('reason') or 'not available'}" for s in missing),
            QtCore.Qt.WhiteSpaceMode.WhiteSpaceNormal) if missing else "")

    def held_rows(self) -> int:
        """How many sample rows wait for the page to be shown or the measuring to end."""
        with self._held_lock:
            return len(self._held)

    def showEvent(self, event: QtGui.QShowEvent) -> None:  # noqa: N802 — Qt override
        self._shown = True
        with self._held_lock:  # posted under the lock: a batch the hub sends meanwhile comes after, in order
            if self._held:  # queued like the hub's batches, so it lands after any batch already on its way
                self._relay_samples.emit(list(self._held))
                self._held.clear()
        super().showEvent(event)

    def hideEvent(self, event: QtGui.QHideEvent) -> None:  # noqa: N802 — Qt override
        self._shown = False
        super().hideEvent(event)

    # ---- Private API
    def _from_hub(self, rows: list[tuple]) -> None:
        """A batch from the hub, on its thread: held while the page is hidden and something measures (no work for
        the GUI thread then), else sent to the GUI thread after what was held."""
        with self._held_lock:
            if not self._shown and self._measuring() is not None:
                self._held.extend(rows)
                return
            rows = [*self._held, *rows]
            self._held.clear()
        self._relay_samples.emit(rows)

    def _throttle(self, metric: str, t_ns: int, value: float) -> None:
        """Shade the power plot while a GPU reports clock-event (throttle) reasons."""
        t_s = (t_ns - self._t0_ns) / 1e9
        gpu = THROTTLE.fullmatch(metric).group(1)
        limiting = int(value) & LIMITING_BITS
        if limiting and gpu not in self._throttled_since:
            self._throttled_since[gpu] = t_s
            reasons = ", ".join(decode_throttle(limiting))
            self.plots["power"].add_band(t_s, None, f"{gpu} throttled: {reasons}")
        elif not limiting and gpu in self._throttled_since:
            del self._throttled_since[gpu]
            self.plots["power"].end_band(t_s)
