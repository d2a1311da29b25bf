"""Past sweeps as a table: when, what was swept, how far it got, where the knee is.

Fed the plain sweep dicts the history lists (newest first); a double-click or Enter asks to open the sweep, which
the window does on the Sweeps page. A lab keeps at most a few hundred sweeps, so a plain table widget is enough.
"""

from __future__ import annotations

from typing import Any

from PySide6 import QtCore, QtGui, QtWidgets

from widgets import theme
from widgets.formatting import MISSING, format_number
from widgets.history_table import local_time

COLUMNS = ("Started", "Name", "Model", "Swept", "Status", "Runs", "Sweep ID", "Knee")
COL_STATUS, COL_RUNS = COLUMNS.index("Status"), COLUMNS.index("Runs")


def _axes(grid: Any) -> str:
    if not isinstance(grid, dict):
        return MISSING
    return "; ".join(f"{axis} {','.join('default' if v is None else str(v) for v in values)}"
                     for axis, values in grid.items()) or MISSING


def _knee(summary: Any) -> str:
    knee = (summary or {}).get("knee") if isinstance(summary, dict) else None
    if not isinstance(knee, dict) or not knee.get("label"):
        return MISSING
    return f"{knee['label']}: {format_number(knee.get('throughput_per_s'))} samples/s"


def cells(sweep: dict[str, Any]) -> tuple[str, ...]:
    """The row of one sweep, as shown."""
    base = sweep.get("base") if isinstance(sweep.get("base"), dict) else {}
    runs, completed = sweep.get("runs"), sweep.get("completed")
    return (local_time(sweep.get("created_at"))[0], str(sweep.get("name") or ""), str(base.get("model") or ""),
            _axes(sweep.get("grid")), str(sweep.get("status") or ""),
            MISSING if runs is None else f"{completed or 0}/{runs}", str(sweep.get("sweep_id") or "")[:8],
            _knee(sweep.get("summary")))


class SweepTable(QtWidgets.QTableWidget):
    """One row per sweep; the full sweep id is each row's data."""

    sig_sweep_activated = QtCore.Signal(str)  # sweep_id, on double-click or Enter

    def __init__(self, parent: QtWidgets.QWidget | None = None):
        super().__init__(0, len(COLUMNS), parent)
        self.setHorizontalHeaderLabels(COLUMNS)
        theme.read_only_rows(self)
        self.horizontalHeader().setStretchLastSection(True)
        self.setSelectionMode(QtWidgets.QAbstractItemView.SelectionMode.SingleSelection)
        self.activated.connect(self._on_activated)  # double-click and Enter

    # ---- Public API
    def set_sweeps(self, sweeps: list[dict[str, Any]]) -> None:
        self.setRowCount(len(sweeps))
        for row, sweep in enumerate(sweeps):
            status = str(sweep.get("status") or "")
            for column, text in enumerate(cells(sweep)):
                item = QtWidgets.QTableWidgetItem(text)
                item.setData(QtCore.Qt.ItemDataRole.UserRole, str(sweep.get("sweep_id") or ""))
                item.setToolTip(f"sweep {sweep.get('sweep_id')}: double-click to open it on the Sweeps page")
                if column == COL_RUNS:
                    item.setTextAlignment(QtCore.Qt.AlignmentFlag.AlignRight | QtCore.Qt.AlignmentFlag.AlignVCenter)
                if column == COL_STATUS and status != "completed" and status in theme.STATUS_COLORS:
                    item.setForeground(QtGui.QBrush(QtGui.QColor(theme.STATUS_COLORS[status])))
                self.setItem(row, column, item)
        self.resizeColumnsToContents()

    def sweep_id_at(self, row: int) -> str:
        return self.item(row, 0).data(QtCore.Qt.ItemDataRole.UserRole)

    def cell_text(self, row: int, column: int) -> str:
        return self.item(row, column).text()

    # ---- Private API
    def _on_activated(self, index: QtCore.QModelIndex) -> None:
        if index.isValid():
            self.sig_sweep_activated.emit(self.sweep_id_at(index.row()))
