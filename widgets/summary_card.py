"""The result of a run as a few big figures.

This is the card people read from across the room: each figure has a caption, a value with three significant
digits and its unit. A value that was not measured shows "—", never 0, and notes say why a figure is missing or
weak (e.g. too few samples for a p99).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from PySide6 import QtCore, QtWidgets

from widgets import theme
from widgets.formatting import MISSING, format_number


@dataclass(frozen=True)
class _FigureSpec:
    key: str  # public name, see SummaryCard.value_text
    caption: str
    unit: str
    path: tuple[str, ...]  # where the value sits in the summary dict


FIGURES = (
    _FigureSpec("p50", "p50 latency", "ms", ("latency_ms", "p50")),
    _FigureSpec("p90", "p90 latency", "ms", ("latency_ms", "p90")),
    _FigureSpec("p99", "p99 latency", "ms", ("latency_ms", "p99")),
    _FigureSpec("mean", "Mean latency", "ms", ("latency_ms", "mean")),
    _FigureSpec("throughput", "Throughput", "samples/s", ("throughput_per_s",)),
    _FigureSpec("iterations", "Iterations", "", ("iterations",)),
    _FigureSpec("duration", "Measured for", "s", ("duration_s",)),
    _FigureSpec("load", "Model load", "s", ("load_s",)),
)
MAX_NOTES = 3
_COLUMNS = 2  # fits the narrow left column of the Run and History pages


def _lookup(summary: dict, path: tuple[str, ...]):
    value = summary
    for key in path:
        if not isinstance(value, dict):
            return None
        value = value.get(key)
    return value


class _Figure(QtWidgets.QWidget):
    """Caption over a big value and its unit."""

    def __init__(self, spec: _FigureSpec, parent: QtWidgets.QWidget | None = None):
        super().__init__(parent)
        self.spec = spec
        self._caption = QtWidgets.QLabel(spec.caption)
        self._caption.setFont(theme.font(theme.BASE_PT))
        self._caption.setStyleSheet(f"color: {theme.MUTED};")
        self._value = QtWidgets.QLabel(MISSING)
        self._value.setFont(theme.font(theme.FIGURE_PT, bold=True))
        self._value.setStyleSheet(f"color: {theme.FOREGROUND};")
        self._unit = QtWidgets.QLabel(spec.unit)
        self._unit.setFont(theme.font(theme.AXIS_LABEL_PT))
        self._unit.setStyleSheet(f"color: {theme.MUTED};")
        row = QtWidgets.QHBoxLayout()
        row.setSpacing(6)
        row.addWidget(self._value, 0, QtCore.Qt.AlignmentFlag.AlignBaseline)
        row.addWidget(self._unit, 0, QtCore.Qt.AlignmentFlag.AlignBaseline)
        row.addStretch(1)
        layout = QtWidgets.QVBoxLayout(self)
        layout.setContentsMargins(8, 4, 8, 4)
        layout.setSpacing(0)
        layout.addWidget(self._caption)
        layout.addLayout(row)
        self.set_value(None)

    def set_value(self, value, extra_tip: str = "") -> None:
        text = format_number(value)
        self._value.setText(text)
        missing = text == MISSING
        self._unit.setVisible(not missing and bool(self.spec.unit))
        if missing:
            tip = "not available"
        else:
            exact = f"{value:,}" if isinstance(value, int) else f"{float(value):.6g}"
            tip = f"{self.spec.caption}: {exact} {self.spec.unit}".rstrip()
        if extra_tip and not missing:
            tip = f"{tip}\n{extra_tip}"
        self.setToolTip(tip)

    def text(self) -> str:
        value = self._value.text()
        return value if value == MISSING or not self.spec.unit else f"{value} {self.spec.unit}"


class SummaryCard(QtWidgets.QFrame):
    """p50 / p90 / p99 / mean latency, throughput, iterations, measured time and model load time of one run."""

    def __init__(self, parent: QtWidgets.QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("summaryCard")
        self.setStyleSheet(
            f"QFrame#summaryCard {{ background: {theme.BACKGROUND}; border: 1px solid {theme.BORDER};"
            " border-radius: 6px; }"
        )
        self._message = QtWidgets.QLabel()
        self._message.setWordWrap(True)
        self._message.setFont(theme.font(theme.AXIS_LABEL_PT, bold=True))
        self._message.setTextInteractionFlags(QtCore.Qt.TextInteractionFlag.TextSelectableByMouse)
        self._message.hide()

        self._figures: dict[str, _Figure] = {}
        grid = QtWidgets.QGridLayout()
        grid.setHorizontalSpacing(12)
        grid.setVerticalSpacing(10)
        for i, spec in enumerate(FIGURES):
            figure = _Figure(spec)
            self._figures[spec.key] = figure
            grid.addWidget(figure, i // _COLUMNS, i % _COLUMNS)
        for column in range(_COLUMNS):
            grid.setColumnStretch(column, 1)

        self._verdict = QtWidgets.QLabel()
        self._verdict.setFont(theme.font(theme.AXIS_LABEL_PT, bold=True))
        self._verdict.hide()

        self._notes = QtWidgets.QLabel()
        self._notes.setWordWrap(True)
        self._notes.setFont(theme.font(theme.SMALL_PT))
        self._notes.setStyleSheet(f"color: {theme.MUTED};")
        self._notes.setTextInteractionFlags(QtCore.Qt.TextInteractionFlag.TextSelectableByMouse)
        self._notes.hide()

        layout = QtWidgets.QVBoxLayout(self)
        layout.setContentsMargins(12, 10, 12, 10)
        layout.addWidget(self._message)
        layout.addLayout(grid)
        layout.addWidget(self._verdict)
        layout.addWidget(self._notes)

    # ---- Public API
    def set_summary(self, summary: dict) -> None:
        """Show a run summary (see the module doc for keys); missing keys and None show "—". Clears any message."""
        summary = summary or {}
        latency = summary.get("latency_ms") if isinstance(summary.get("latency_ms"), dict) else {}
        range_tip = ""
        if _is_number(latency.get("min")) and _is_number(latency.get("max")):
            range_tip = f"range {format_number(latency['min'])} – {format_number(latency['max'])} ms"
        for spec in FIGURES:
            tip = range_tip if spec.path[0] == "latency_ms" else ""
            self._figures[spec.key].set_value(_lookup(summary, spec.path), tip)
        notes = [str(n) for n in (summary.get("notes") or [])]
        shown = notes[:MAX_NOTES]
        if len(notes) > MAX_NOTES:
            shown.append(f"… and {len(notes) - MAX_NOTES} more (hover to read all)")
        self._notes.setText("\n".join(f"• {n}" for n in shown))
        self._notes.setToolTip("\n".join(f"• {n}" for n in notes))
        self._notes.setVisible(bool(notes))
        self._show_verdict(summary)
        self._message.hide()

    def _show_verdict(self, summary: dict) -> None:
        """VALID / INVALID in the words of MLPerf LoadGen: a number is only as good as the rules it passed."""
        if "valid" not in summary:
            self._verdict.hide()
            return
        failed = len(summary.get("invalid_reasons") or [])
        valid = bool(summary["valid"])
        self._verdict.setText("VALID" if valid else f"INVALID — {failed} rule{'s' * (failed != 1)} not met")
        self._verdict.setStyleSheet(f"color: {theme.GOOD if valid else theme.BAD};")
        self._verdict.show()

    def clear(self) -> None:
        """Back to the empty card: every figure "—", no notes, no message."""
        for figure in self._figures.values():
            figure.set_value(None)
        self._notes.clear()
        self._notes.hide()
        self._verdict.hide()
        self._message.clear()
        self._message.hide()

    def set_message(self, text: str, error: bool = False) -> None:
        """A line above the figures, e.g. why a run failed (red when ``error``). Figures are left as they are."""
        color = theme.STATUS_COLORS["failed"] if error else theme.FOREGROUND
        self._message.setStyleSheet(f"color: {color};")
        self._message.setText(text)
        self._message.setVisible(bool(text))

    def value_text(self, key: str) -> str:
        """What a figure shows, e.g. value_text("p50") == "12.3 ms"; keys: p50 p90 p99 mean throughput iterations
        duration load."""
        return self._figures[key].text()

    def figure_tooltip(self, key: str) -> str:
        return self._figures[key].toolTip()

    def notes_text(self) -> str:
        return self._notes.text() if self._notes.isVisibleTo(self) else ""

    def message_text(self) -> str:
        return self._message.text() if self._message.isVisibleTo(self) else ""


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
