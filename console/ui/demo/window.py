"""The demo-mode window: full screen, big tiles, its own light/dark scheme; Esc leaves.

Two ways to feed it. Follow mode (F11, no playlist): it shows whatever run the window's RunController runs — the
presenter starts runs on the Run page as usual, and a run already going is joined mid-way. Playlist mode
(`labconsole demo PLAYLIST`, View ▸ Demo playlist…): a PlaylistDirector plays the items unattended.

Leaving (Esc, F11, closing the window) never loses a run: the director's own run in flight is cancelled — the
session stores it as cancelled with everything measured so far — and a run the presenter started elsewhere goes
on untouched. One timer (4 Hz: figures that change faster cannot be read from a distance) updates the tiles and
redraws the trace; events only append. While a run measures it ticks at the live plots' quiet rate (2 Hz by
default, widgets.live_plot.set_quiet), so the screen takes less CPU from the run it shows, and catches up at once
when the phase ends.
"""

from __future__ import annotations

from collections import deque
from typing import Any

from PySide6 import QtCore, QtGui, QtWidgets

from console.demo.playlist import Playlist
from console.ui.demo.director import PlaylistDirector
from console.ui.demo.views import MessageView, RaceView, SingleRunView
from widgets import live_plot, theme
from widgets.demo_tiles import ScaledLabel

TICK_MS = 250
KEYS = "Esc leaves · D light/dark"
FOOTER_PX = 25
BASE_SIZE = QtCore.QSize(1920, 1080)  # the layout's design size; other sizes scale


class DemoWindow(QtWidgets.QWidget):
    """Shows one of three screens (message, single run, race) and a footer: where the playlist is, the last
    outcomes, the keys."""

    sig_closed = QtCore.Signal()

    # ---- Public API
    def __init__(self, controller: Any, playlist: Playlist | None = None, scheme: str = "dark",
                 settings: Any = None, parent: QtWidgets.QWidget | None = None):
        super().__init__(parent, QtCore.Qt.WindowType.Window)
        self.setObjectName("demo_window")
        self.setAttribute(QtCore.Qt.WidgetAttribute.WA_DeleteOnClose)
        self.setWindowTitle("Lab Console — demo mode")
        self.controller = controller
        self.settings = settings
        self.playlist = playlist
        self.scheme = theme.SCHEMES.get(scheme, theme.DARK)
        self.outcomes: deque[dict[str, Any]] = deque(maxlen=200)
        self._left = False
        self._item: dict[str, Any] | None = None
        self._waiting = ""
        self._done = ""

        self.message = MessageView(self.scheme)
        self.single = SingleRunView(self.scheme)
        self.race = RaceView(self.scheme)
        self.stack = QtWidgets.QStackedWidget()
        for view in (self.message, self.single, self.race):
            self.stack.addWidget(view)
        self.footer_where = ScaledLabel("", FOOTER_PX, False, "muted", self.scheme, shrink=True)
        self.footer_log = ScaledLabel("", FOOTER_PX, False, "foreground", self.scheme, shrink=True)
        self.footer_log.setAlignment(QtCore.Qt.AlignmentFlag.AlignCenter)
        self.footer_keys = ScaledLabel(KEYS, FOOTER_PX, False, "muted", self.scheme, shrink=True)
        self.footer_keys.setAlignment(QtCore.Qt.AlignmentFlag.AlignRight | QtCore.Qt.AlignmentFlag.AlignVCenter)
        footer = QtWidgets.QHBoxLayout()
        footer.setSpacing(24)
        footer.addWidget(self.footer_where, 4)
        footer.addWidget(self.footer_log, 4)
        footer.addWidget(self.footer_keys, 2)
        self._layout = QtWidgets.QVBoxLayout(self)
        self._layout.addWidget(self.stack, 1)
        self._layout.addLayout(footer)
        self._footer = (self.footer_where, self.footer_log, self.footer_keys)

        self.director: PlaylistDirector | None = None
        if playlist is not None:
            self.director = PlaylistDirector(controller, playlist, self)
            self.director.sig_item.connect(self._item_begins)
            self.director.sig_run_started.connect(self._run_started)
            self.director.sig_event.connect(self._event)
            self.director.sig_run_finished.connect(self._run_finished)
            self.director.sig_side.connect(lambda info: self.race.side_update(info["side"], info["figures"]))
            self.director.sig_item_done.connect(self._item_done)
            self.director.sig_waiting.connect(self._wait)
            self.director.sig_done.connect(self._playlist_done)
        else:
            controller.sig_event.connect(self._follow)
        self._timer = QtCore.QTimer(self, interval=TICK_MS, timeout=self._tick)
        self._paint_clock = live_plot.paint_clock()
        self._paint_clock.sig_quiet.connect(self._set_quiet)
        self._set_quiet(live_plot.quiet_rates() is not None)
        for keys, slot in (("Esc", self.leave), ("F11", self.leave), ("D", self.toggle_theme)):
            shortcut = QtGui.QShortcut(QtGui.QKeySequence(keys), self)
            shortcut.setContext(QtCore.Qt.ShortcutContext.WindowShortcut)
            shortcut.activated.connect(slot)
        self.setAutoFillBackground(True)
        self._apply_scheme()
        self.resize(BASE_SIZE)

    def start(self) -> None:
        """Begin: the playlist's first item, or (follow mode) the run in progress or a waiting screen."""
        self._timer.start()
        if self.director is not None:
            self._update_where()
            self.director.start()
            return
        session = getattr(self.controller, "session", None)
        if session is not None and self.controller.busy:
            spec = session.spec
            self.single.begin(spec.name or spec.label(), spec.to_dict(), session.t0_ns,
                              note="joined mid-run: the trace starts now")
            self.stack.setCurrentWidget(self.single)
        else:
            self._idle()
        self._update_where()

    def leave(self) -> None:
        """Esc: stop the playlist (its run in flight is cancelled and stored as cancelled) and close."""
        self.close()

    def toggle_theme(self) -> None:
        self.set_scheme("light" if self.scheme.name == "dark" else "dark")
        if self.settings is not None:
            self.settings.save_demo_theme(self.scheme.name)

    def set_scheme(self, name: str) -> None:
        self.scheme = theme.SCHEMES[name]
        self._apply_scheme()

    def current_view(self) -> QtWidgets.QWidget:
        return self.stack.currentWidget()

    def footer_text(self) -> str:
        return " | ".join(label.text() for label in self._footer)

    # ---- Private API: playlist
    def _item_begins(self, info: dict[str, Any]) -> None:
        self._item, self._waiting = info, ""
        self._update_where()
        problem = info.get("problem")
        if problem:
            self.message.set_message(info["title"], f"✗ {info['title']} could not start",
                                     [f"{problem['where']}: {problem['problem']}", f"Fix: {problem['fix']}",
                                      self._next_text()], "bad", status="Skipped")
            self.stack.setCurrentWidget(self.message)
        elif info["kind"] == "race":
            self.race.begin(info)
            self.stack.setCurrentWidget(self.race)
        else:  # "starting the worker" under the new title at once, not the last run's figures under it
            self.single.begin(info["title"], info["specs"][0], 0)
            self.stack.setCurrentWidget(self.single)

    def _run_started(self, info: dict[str, Any]) -> None:
        self._waiting = ""
        if info["side"] is None:
            event = info["event"]
            self.single.begin((self._item or {}).get("title") or "", event["spec"], event["t0_ns"])
            self.stack.setCurrentWidget(self.single)
        else:
            self.race.run_started(info)
        self._update_log()

    def _event(self, event: dict[str, Any]) -> None:
        view = self.stack.currentWidget()
        if view is self.single:
            self.single.handle(event)
        elif view is self.race:
            self.race.handle(event)

    def _run_finished(self, info: dict[str, Any]) -> None:
        if info["side"] is None:
            self.single.finish(info["record"])
        else:
            self.race.run_finished(info)

    def _item_done(self, outcome: dict[str, Any]) -> None:
        self.outcomes.append(outcome)
        if outcome["kind"] == "race":
            self.race.finish(outcome)
        elif outcome["status"] != "completed" and not outcome["run_ids"] and self.stack.currentWidget() \
                is not self.message:
            self.message.set_message(outcome["title"] or "", f"✗ {outcome['title']} could not start",
                                     [outcome["message"], self._next_text()], "bad", status="Skipped")
            self.stack.setCurrentWidget(self.message)
        self._update_where()
        self._update_log()

    def _wait(self, text: str) -> None:
        self._waiting = text
        self._update_log()

    def _playlist_done(self, counts: dict[str, Any]) -> None:
        """A playlist that plays once ended: the last item's screen stays up (a race's verdict is what the
        audience should see last); the footer says it is over."""
        self._done = f"Playlist finished: {_counts_text(counts)} · every run is in the history"
        self._update_log()

    # ---- Private API: follow mode
    def _follow(self, event: dict[str, Any]) -> None:
        kind = event.get("type")
        if kind == "started":
            spec = event.get("spec") or {}
            self.single.begin(spec.get("name") or _label(spec), spec, event["t0_ns"])
            self.stack.setCurrentWidget(self.single)
        elif self.single.running:
            self.single.handle(event)

    def _idle(self) -> None:
        self.message.set_message("Lab Console", "Demo mode: waiting for a run",
                                 ["Start a run on the Run page (Esc, then Ctrl+R): it shows here live.",
                                  "Or play a playlist unattended: View ▸ Demo playlist… or `labconsole demo FILE`."],
                                 "neutral", status="Ready")
        self.stack.setCurrentWidget(self.message)

    # ---- Private API: frame
    def _set_quiet(self, quiet: bool) -> None:
        """A run's measuring phase began (tick at the quiet rate) or ended (full rate, and catch up now)."""
        rates = live_plot.quiet_rates()
        self._timer.setInterval(max(TICK_MS, rates.latency_ms) if quiet and rates is not None else TICK_MS)
        if not quiet and self._timer.isActive():
            self._tick()

    def _tick(self) -> None:
        view = self.stack.currentWidget()
        if hasattr(view, "tick"):
            view.tick()

    def _update_where(self) -> None:
        if self.director is None:
            self.footer_where.setText("Demo mode · showing the Run page's runs")
            return
        where = self.playlist.title or _file_name(self.playlist.source)
        item = self._item
        if item:
            where += f" · item {item['number']} of {item['total']} · loop {item['loop']}"
        counts = self.director.counts
        self.footer_where.setText(f"{where} · {counts['runs']} run{'s' if counts['runs'] != 1 else ''}, "
                                  f"{counts['failed_items']} failed")

    def _update_log(self) -> None:
        if self._done:
            self.footer_log.setText(self._done)
            self.footer_log.set_role("good")
            return
        if self._waiting:
            self.footer_log.setText(self._waiting)
            self.footer_log.set_role("accent")
            return
        recent = list(self.outcomes)[-2:]
        self.footer_log.setText("   ".join(_outcome_text(o) for o in recent))
        self.footer_log.set_role("foreground")

    def _next_text(self) -> str:
        hold = self.playlist.hold_s if self.playlist else 0
        return f"The playlist goes on with the next item in {hold:g} s." if hold else \
            "The playlist goes on with the next item."

    def _apply_scheme(self) -> None:
        s = self.scheme
        palette = theme.qpalette(s)
        palette.setColor(QtGui.QPalette.ColorRole.Window, QtGui.QColor(s.background))
        self.setPalette(palette)
        for view in (self.message, self.single, self.race):
            view.set_scheme(s)
        for label in self._footer:
            label.set_scheme(s)

    def resizeEvent(self, event: QtGui.QResizeEvent) -> None:  # noqa: N802 — Qt override
        super().resizeEvent(event)
        size = event.size()
        scale = max(0.35, min(size.width() / BASE_SIZE.width(), size.height() / BASE_SIZE.height()))
        margin = round(40 * scale)
        self._layout.setContentsMargins(margin, round(28 * scale), margin, round(18 * scale))
        for view in (self.message, self.single, self.race):
            view.set_scale(scale)
        for label in self._footer:
            label.set_scale(scale)

    def closeEvent(self, event: QtGui.QCloseEvent) -> None:  # noqa: N802 — Qt override
        if not self._left:
            self._left = True
            self._timer.stop()
            try:
                self._paint_clock.sig_quiet.disconnect(self._set_quiet)
            except (RuntimeError, TypeError):
                pass
            if self.director is not None:
                self.director.stop()
            else:
                try:
                    self.controller.sig_event.disconnect(self._follow)
                except (RuntimeError, TypeError):
                    pass
            self.sig_closed.emit()
        super().closeEvent(event)


def _counts_text(counts: dict[str, Any]) -> str:
    parts = [f"{counts['runs']} run{'s' if counts['runs'] != 1 else ''}"]
    if counts.get("races"):
        parts.append(f"{counts['races']} race{'s' if counts['races'] != 1 else ''}")
    parts.append(f"{counts['failed_items']} failed")
    return ", ".join(parts)


def _outcome_text(outcome: dict[str, Any]) -> str:
    mark = {"completed": "✓", "cancelled": "–"}.get(outcome["status"], "✗")
    text = f"{mark} {outcome['title']}"
    verdict = outcome.get("verdict")
    if verdict and verdict.get("factor"):
        text += f": {verdict['winner']} {verdict['factor']:.2f}× faster"
    elif outcome["status"] != "completed":
        text += f" ({outcome['status']})"
    return text


def _file_name(source: str) -> str:
    from pathlib import Path

    return Path(source).name or source


def _label(spec: dict[str, Any]) -> str:
    parts = [spec.get("model"), spec.get("engine"), spec.get("target"), f"b{spec.get('batch')}"]
    return " · ".join(str(p) for p in parts if p)
