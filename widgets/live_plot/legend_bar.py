"""The legend of a live plot: a row of swatches and names above the plot, never over the data."""

from __future__ import annotations

from PySide6 import QtCore, QtGui, QtWidgets

from widgets import theme


class LegendBar(QtWidgets.QWidget):
    """Legend in a row above the plot: it never hides data or phase labels, and reads well from a distance."""

    _SWATCH = QtCore.QSize(30, 14)

    def __init__(self, parent: QtWidgets.QWidget | None = None):
        super().__init__(parent)
        self._layout = QtWidgets.QHBoxLayout(self)
        self._layout.setContentsMargins(6, 0, 6, 0)
        self._layout.setSpacing(16)
        self._entries: dict[str, tuple[QtWidgets.QWidget, QtWidgets.QLabel, bool]] = {}

    def set_entry(self, key: str, text: str, pens: list[QtGui.QPen], last: bool = False) -> None:
        """Add or relabel an entry; ``last`` entries (e.g. "per core") stay after the others."""
        if key in self._entries:
            _, label, _ = self._entries[key]
            label.setText(text)
            return
        entry = QtWidgets.QWidget()
        row = QtWidgets.QHBoxLayout(entry)
        row.setContentsMargins(0, 0, 0, 0)
        row.setSpacing(5)
        swatch = QtWidgets.QLabel()
        swatch.setPixmap(self._swatch(pens))
        label = QtWidgets.QLabel(text)
        label.setFont(theme.font(theme.BASE_PT))
        label.setStyleSheet(f"color: {theme.FOREGROUND};")
        row.addWidget(swatch)
        row.addWidget(label)
        self._entries[key] = (entry, label, last)
        self._relayout()

    def clear(self) -> None:
        for entry, _, _ in self._entries.values():
            entry.setParent(None)
            entry.deleteLater()
        self._entries.clear()
        self._relayout()

    def labels(self) -> list[str]:
        return [label.text() for _, label, _ in self._ordered()]

    def _ordered(self):
        values = list(self._entries.values())
        return [e for e in values if not e[2]] + [e for e in values if e[2]]

    def _relayout(self) -> None:
        while self._layout.count():
            self._layout.takeAt(0)
        for entry, _, _ in self._ordered():
            self._layout.addWidget(entry)
        self._layout.addStretch(1)

    def _swatch(self, pens: list[QtGui.QPen]) -> QtGui.QPixmap:
        ratio = max(1.0, self.devicePixelRatioF())  # crisp on high-DPI wall screens
        pixmap = QtGui.QPixmap(self._SWATCH * ratio)
        pixmap.setDevicePixelRatio(ratio)
        pixmap.fill(QtCore.Qt.GlobalColor.transparent)
        painter = QtGui.QPainter(pixmap)
        painter.setRenderHint(QtGui.QPainter.RenderHint.Antialiasing)
        middle = self._SWATCH.height() / 2
        for i, pen in enumerate(pens):
            pen = QtGui.QPen(pen)
            pen.setCosmetic(True)
            pen.setWidthF(min(max(pen.widthF(), 1.5), 3.0))
            color = pen.color()
            color.setAlpha(max(color.alpha(), 170))  # translucent lines still need a visible swatch
            pen.setColor(color)
            painter.setPen(pen)
            y = middle + (i - (len(pens) - 1) / 2) * 4
            painter.drawLine(QtCore.QPointF(2, y), QtCore.QPointF(self._SWATCH.width() - 2, y))
        painter.end()
        return pixmap
