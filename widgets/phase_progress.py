"""Where a run is: its phase in words and a progress bar.

Loading a model has no known end, so the bar can go busy instead of showing a made-up fraction; when the run ends
the text says how, in colour, so a failure is seen from across the room.
"""

from __future__ import annotations

from PySide6 import QtWidgets

from widgets import theme

_RESOLUTION = 1000
_STATUS_TEXT = {
    "completed": "Completed",
    "failed": "Failed",
    "cancelled": "Cancelled",
    "interrupted": "Interrupted",
}


class PhaseProgress(QtWidgets.QWidget):
    """Phase text above a progress bar."""

    def __init__(self, parent: QtWidgets.QWidget | None = None):
        super().__init__(parent)
        self._status: str | None = None
        self._label = QtWidgets.QLabel()
        self._label.setFont(theme.font(theme.AXIS_LABEL_PT, bold=True))
        self._label.setWordWrap(True)
        self._bar = QtWidgets.QProgressBar()
        self._bar.setFont(theme.font(theme.BASE_PT))
        self._bar.setTextVisible(True)
        self._bar.setMinimumHeight(22)
        layout = QtWidgets.QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(4)
        layout.addWidget(self._label)
        layout.addWidget(self._bar)
        self.reset()

    # ---- Public API
    def set_phase(self, phase: str, detail: str = "") -> None:
        """Show the phase in words (the caller passes its title from engines.phases, e.g. "Warming up") and an
        optional detail after it."""
        self._status = None
        text = phase[:1].upper() + phase[1:]
        self._set_text(f"{text} — {detail}" if detail else text, theme.FOREGROUND)

    def set_fraction(self, fraction: float | None) -> None:
        """0..1 of the phase done; None when unknown (busy bar)."""
        if fraction is None:
            self._bar.setRange(0, 0)
            return
        self._bar.setRange(0, _RESOLUTION)
        self._bar.setValue(round(min(1.0, max(0.0, float(fraction))) * _RESOLUTION))

    def finish(self, status: str, message: str = "") -> None:
        """End state: completed (green), failed (red, with the message), cancelled (grey), interrupted (orange)."""
        self._status = status
        if self._bar.maximum() == 0:  # leave busy mode
            self._bar.setRange(0, _RESOLUTION)
            self._bar.setValue(0)
        if status == "completed":
            self._bar.setValue(_RESOLUTION)
        title = _STATUS_TEXT.get(status, status[:1].upper() + status[1:])
        color = theme.STATUS_COLORS.get(status, theme.FOREGROUND)
        self._set_text(f"{title} — {message}" if message else title, color)

    def reset(self) -> None:
        self._status = None
        self._bar.setRange(0, _RESOLUTION)
        self._bar.setValue(0)
        self._set_text("Idle", theme.MUTED)

    def text(self) -> str:
        return self._label.text()

    def status(self) -> str | None:
        """The status given to ``finish``, or None while a run is going on or nothing ran."""
        return self._status

    def fraction(self) -> float | None:
        """The fraction shown, or None while busy."""
        if self._bar.maximum() == 0:
            return None
        return self._bar.value() / _RESOLUTION

    # ---- Private API
    def _set_text(self, text: str, color: str) -> None:
        self._label.setText(text)
        self._label.setToolTip(text)
        self._label.setStyleSheet(f"color: {color};")
