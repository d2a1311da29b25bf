"""The Sweeps page's points table: one row per point (status, p50/p99, throughput, run or reason, machine).

Split from `console.ui.sweep_page`; a view fed the sweep record's points and skipped points.
"""

from __future__ import annotations

from typing import Any

from PySide6 import QtCore, QtGui, QtWidgets

from console.sweep import format_rate
from widgets import theme

POINT_COLUMNS = ("Point", "Status", "p50 (ms)", "p99 (ms)", "Throughput (samples/s)", "Run / reason",
                 "Machine")  # the host the point ran on (a fleet sweep's points run on several)
_STATUS_TEXT = {"running": "running…", "queued": "queued"}


class SweepPointsTable(QtWidgets.QTableWidget):
    """Read-only rows; the "Run / reason" column takes the width left (reasons are long, the rest short)."""

    def __init__(self, parent: QtWidgets.QWidget | None = None):
        super().__init__(0, len(POINT_COLUMNS), parent)
        self.setHorizontalHeaderLabels(POINT_COLUMNS)
        self.verticalHeader().setVisible(False)
        self.setEditTriggers(QtWidgets.QAbstractItemView.EditTrigger.NoEditTriggers)
        self.setSelectionBehavior(QtWidgets.QAbstractItemView.SelectionBehavior.SelectRows)
        header = self.horizontalHeader()
        reason = POINT_COLUMNS.index("Run / reason")
        for column in range(len(POINT_COLUMNS)):
            header.setSectionResizeMode(column, QtWidgets.QHeaderView.ResizeMode.Stretch if column == reason
                                        else QtWidgets.QHeaderView.ResizeMode.ResizeToContents)

    def show_points(self, points: list[dict[str, Any]], skipped: list[dict[str, Any]]) -> None:
        """One row per point, then one per point the grid skipped (with its reason)."""
        rows = list(points) + list(skipped)
        self.setRowCount(len(rows))
        for row, p in enumerate(rows):
            lat = p.get("latency_ms") or {}
            status = p.get("status", "")
            detail = p.get("reason") or p.get("message") or (p.get("run_id") or "")[:8]
            if status == "completed" and p.get("run_id"):
                detail = p["run_id"][:8] + (f" — {p['message']}" if p.get("message") else "")
            cells = (p.get("label") or "the point", _STATUS_TEXT.get(status, status), _ms(lat.get("p50")),
                     _ms(lat.get("p99")), format_rate(p.get("throughput_per_s")), detail,
                     p.get("hostname") or "")
            for column, text in enumerate(cells):
                item = QtWidgets.QTableWidgetItem(text)
                if 2 <= column <= 4:
                    item.setTextAlignment(QtCore.Qt.AlignmentFlag.AlignRight | QtCore.Qt.AlignmentFlag.AlignVCenter)
                if column == 1:
                    item.setForeground(QtGui.QColor(theme.STATUS_COLORS.get(status, theme.MUTED)))
                if column in (2, 3) and status == "completed" and text == "—":
                    item.setToolTip("withheld: too few samples back this percentile (a longer duration gives more)")
                if column == 5:
                    item.setToolTip(p.get("reason") or p.get("message") or p.get("run_id") or "")
                self.setItem(row, column, item)


def _ms(value: float | None) -> str:
    return "—" if value is None else f"{value:.3g}"
