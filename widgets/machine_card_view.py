"""Machine cards side by side: one column per (host, target), one row per ceiling, each cell the figure with its
unit and, under it, its spread; the method and any reason for a missing figure show below for the chosen cell.

A view: it is handed plain data (see `set_cards`) and knows nothing of the history or of how cards are measured.
"""

from __future__ import annotations

from typing import Any

from PySide6 import QtCore, QtWidgets

from widgets import theme

NOT_AVAILABLE = "not available"
NOISY = "interval wider than goal: machine noise"
_HEADER_ROWS = (("device", "Device"), ("measured_at", "Measured (UTC)"), ("repeats", "Repeats"))


class MachineCardView(QtWidgets.QWidget):
    sig_cell_chosen = QtCore.Signal(int, str)  # column, row key

    def __init__(self, parent: QtWidgets.QWidget | None = None):
        super().__init__(parent)
        self._columns: list[dict[str, Any]] = []
        self._rows: list[tuple[str, str]] = []
        self.table = QtWidgets.QTableWidget(0, 0)
        self.table.setEditTriggers(QtWidgets.QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.setSelectionMode(QtWidgets.QAbstractItemView.SelectionMode.SingleSelection)
        self.table.setWordWrap(True)
        self.table.setAlternatingRowColors(True)
        self.table.horizontalHeader().setSectionResizeMode(QtWidgets.QHeaderView.ResizeMode.Stretch)
        self.table.verticalHeader().setSectionResizeMode(QtWidgets.QHeaderView.ResizeMode.ResizeToContents)
        self.table.currentCellChanged.connect(lambda row, column, *_: self._show_detail(row, column))
        self.empty = QtWidgets.QLabel()
        self.empty.setWordWrap(True)
        self.empty.setAlignment(QtCore.Qt.AlignmentFlag.AlignCenter)
        self.detail = QtWidgets.QLabel()
        self.detail.setWordWrap(True)
        self.detail.setTextInteractionFlags(QtCore.Qt.TextInteractionFlag.TextSelectableByMouse)
        self.detail.setStyleSheet(f"color: {theme.FOREGROUND}; padding: 6px;")
        layout = QtWidgets.QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.empty)
        layout.addWidget(self.table, 1)
        layout.addWidget(self.detail)
        self.set_cards([], [], "No machine card yet.")

    # ---- Public API
    def set_cards(self, columns: list[dict[str, Any]], rows: list[tuple[str, str]], empty_text: str = "") -> None:
        """Show `columns`, each {"title", "header": {"device", "measured_at", "repeats"}, "cells": {key: {"text",
        "spread", "method", "reason", "noise"}}}, with `rows` as (key, label) in order; `empty_text` when there are
        none. "noise" says why a figure's interval stayed wider than its goal (the machine's cv)."""
        self._columns, self._rows = list(columns), list(rows)
        self.empty.setText(empty_text)
        self.empty.setVisible(not columns)
        self.table.setVisible(bool(columns))
        self.detail.setVisible(bool(columns))
        self.table.clear()
        self.table.setColumnCount(len(columns))
        self.table.setRowCount(len(_HEADER_ROWS) + len(rows))
        self.table.setHorizontalHeaderLabels([column["title"] for column in columns])
        self.table.setVerticalHeaderLabels([label for _, label in _HEADER_ROWS] + [label for _, label in rows])
        for c, column in enumerate(columns):
            for r, (key, _) in enumerate(_HEADER_ROWS):
                self.table.setItem(r, c, self._item(str(column.get("header", {}).get(key, "—")), muted=True))
            for r, (key, _) in enumerate(rows, start=len(_HEADER_ROWS)):
                self.table.setItem(r, c, self._cell(column.get("cells", {}).get(key)))
        self.detail.setText("Choose a figure to see how it was measured." if columns else "")

    def cell_text(self, column: int, key: str) -> str:
        """What the cell of `key` in `column` shows (first line: the figure with its unit)."""
        item = self.table.item(len(_HEADER_ROWS) + [k for k, _ in self._rows].index(key), column)
        return item.text() if item is not None else ""

    def choose(self, column: int, key: str) -> None:
        """Select a cell, as a click would, so its method shows below."""
        self.table.setCurrentCell(len(_HEADER_ROWS) + [k for k, _ in self._rows].index(key), column)

    # ---- Private API
    def _cell(self, cell: dict[str, Any] | None) -> QtWidgets.QTableWidgetItem:
        if not cell or cell.get("value") is None:
            reason = (cell or {}).get("reason", "")
            item = self._item(NOT_AVAILABLE if reason else "—", muted=True)
            item.setToolTip(reason or "not measured on this target")
            return item
        text = cell["text"] + (f"\n{cell['spread']}" if cell.get("spread") else "")
        if cell.get("noise"):  # repeated to the cap and still wider than the goal: the machine's noise, said so
            text += f"\n{cell.get('noise_label') or NOISY}"  # the storage read names the device's own variation
        item = self._item(text)
        item.setToolTip("\n".join(filter(None, (cell.get("method", ""), cell.get("noise", "")))))
        return item

    def _item(self, text: str, muted: bool = False) -> QtWidgets.QTableWidgetItem:
        item = QtWidgets.QTableWidgetItem(text)
        item.setTextAlignment(QtCore.Qt.AlignmentFlag.AlignLeft | QtCore.Qt.AlignmentFlag.AlignVCenter)
        if muted:
            item.setForeground(theme.qcolor(theme.MUTED))
        return item

    def _show_detail(self, row: int, column: int) -> None:
        index = row - len(_HEADER_ROWS)
        if not 0 <= column < len(self._columns) or not 0 <= index < len(self._rows):
            return
        key, label = self._rows[index]
        cell = self._columns[column].get("cells", {}).get(key) or {}
        title = self._columns[column]["title"]
        if cell.get("value") is None:
            why = cell.get("reason") or "not measured on this target"
            self.detail.setText(f"<b>{_html(label)}</b> on {_html(title)}: not available — {_html(why)}")
        else:
            spread = f" (spread {_html(cell['spread'])})" if cell.get("spread") else ""
            note = f"<br>Note: {_html(cell['reason'])}" if cell.get("reason") else ""
            if cell.get("noise"):
                note += f"<br>Noise: {_html(cell['noise'])}"
            self.detail.setText(f"<b>{_html(label)}</b> on {_html(title)}: {_html(cell['text'])}{spread}<br>"
                                f"Method: {_html(cell.get('method') or '—')}{note}")
        self.sig_cell_chosen.emit(column, key)


def _html(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
