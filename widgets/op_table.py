"""A profiled run's op table: one row per op type, where the time went and what each op achieved.

Fed the plain OP rows of the profile (engines.profiling; efficiency and bound added by console.analysis.roofline
when the machine has a card). Sortable by any column, numbers sorted as numbers; the units are in the headers,
so the cells hold bare figures. Longest total time first, as a profiler lists them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from PySide6 import QtCore, QtWidgets

from widgets import theme
from widgets.formatting import MISSING, format_number

_SORT_ROLE = QtCore.Qt.ItemDataRole.UserRole + 1
_RIGHT = QtCore.Qt.AlignmentFlag.AlignRight | QtCore.Qt.AlignmentFlag.AlignVCenter


def _scaled(factor: float) -> Callable[[Any], float | None]:
    return lambda value: None if not _is_number(value) else float(value) * factor


# header (its unit on a second line, so eleven columns stay narrow), key in the OP row, value shown, tooltip
COLUMNS: tuple[tuple[str, str, Callable[[Any], Any] | None, str], ...] = (
    ("Op", "op", None, "the engine's op type (aten::… on PyTorch, the ONNX operator on ONNX Runtime)"),
    ("Calls", "calls", lambda value: value if _is_number(value) else None, "calls over the profiled iterations"),
    ("Share\n%", "share", _scaled(100), "share of the time spent inside ops"),
    ("Time\nms", "time_s", _scaled(1e3), "total over the profiled iterations"),
    ("FLOPs\nG", "flops", _scaled(1e-9), "floating-point operations, a multiply-add counted as two"),
    ("Bytes\nMB", "bytes", _scaled(1e-6), "inputs read and outputs written, from shapes × dtype sizes"),
    ("Intensity\nFLOP/B", "intensity", _scaled(1), "arithmetic intensity: FLOPs per byte moved"),
    ("Achieved\nGFLOP/s", "achieved_flops_s", _scaled(1e-9), "FLOPs ÷ time"),
    ("Achieved\nGB/s", "achieved_bytes_s", _scaled(1e-9), "bytes ÷ time"),
    ("Eff.\n%", "efficiency", _scaled(100), "achieved ÷ the roof that binds the op (machine card)"),
    ("Bound", "bound", None, "the roof that binds the op: compute or memory (machine card)"),
)
ROOF_KEYS = ("efficiency", "bound")  # present only when a machine card gave roofs
OP_COLUMN_MAX_PX = 160  # wider names are elided in the middle


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


class _Item(QtWidgets.QTableWidgetItem):
    """Sorts by the raw number, not by the text shown; a missing figure sorts as the smallest (last when the
    largest come first, as this table opens)."""

    def __lt__(self, other: QtWidgets.QTableWidgetItem) -> bool:
        mine, theirs = self.data(_SORT_ROLE), other.data(_SORT_ROLE)
        if isinstance(mine, str) and isinstance(theirs, str):
            return mine.lower() < theirs.lower()
        if theirs is None:
            return False
        return mine is None or mine < theirs


class OpTable(QtWidgets.QTableWidget):
    """One row per op type; the roof columns show only when some row has them."""

    def __init__(self, parent: QtWidgets.QWidget | None = None):
        super().__init__(0, len(COLUMNS), parent)
        self.setHorizontalHeaderLabels([header for header, *_ in COLUMNS])
        for column, (_, _, _, tip) in enumerate(COLUMNS):
            self.horizontalHeaderItem(column).setToolTip(tip)
        theme.read_only_rows(self, header=theme.font(theme.SMALL_PT))
        self.setSortingEnabled(True)
        self.setTextElideMode(QtCore.Qt.TextElideMode.ElideMiddle)  # long op names: the tooltip has them whole

    # ---- Public API
    def set_ops(self, ops: list[dict[str, Any]]) -> None:
        """Show these OP rows (longest time first until the user sorts otherwise)."""
        self.setSortingEnabled(False)  # filling a sorting table reorders rows under the loop
        self.setRowCount(len(ops))
        for row, op in enumerate(sorted(ops, key=lambda o: -(o.get("time_s") or 0))):
            for column, (_, key, scale, _) in enumerate(COLUMNS):
                value = op.get(key)
                shown = scale(value) if scale else value
                if scale:
                    text = format_number(shown)
                else:
                    text = MISSING if value is None else str(value)
                item = _Item(text)
                item.setData(_SORT_ROLE, shown)
                if scale:
                    item.setTextAlignment(_RIGHT)
                if column == 0:
                    item.setToolTip(_shapes_tip(op))
                self.setItem(row, column, item)
        for column, (_, key, _, _) in enumerate(COLUMNS):
            if key in ROOF_KEYS:
                self.setColumnHidden(column, not any(op.get(key) is not None for op in ops))
        self.setSortingEnabled(True)
        self.sortItems(COLUMNS.index(next(c for c in COLUMNS if c[1] == "time_s")),
                       QtCore.Qt.SortOrder.DescendingOrder)
        self.resizeColumnsToContents()
        self.setColumnWidth(0, min(self.columnWidth(0), OP_COLUMN_MAX_PX))

    def headers(self) -> list[str]:
        """The visible column headers on one line each, e.g. "Time (ms)"."""
        return [_one_line(COLUMNS[c][0]) for c in range(self.columnCount()) if not self.isColumnHidden(c)]

    def cell_text(self, row: int, header: str) -> str:
        """The text of the cell in `row` under `header` (as `headers()` spells it)."""
        return self.item(row, [_one_line(c[0]) for c in COLUMNS].index(header)).text()


def _one_line(header: str) -> str:
    """ "Time\nms" → "Time (ms)": the header as tests and messages spell it."""
    name, _, unit = header.partition("\n")
    return f"{name} ({unit})" if unit else name


def _shapes_tip(op: dict[str, Any]) -> str:
    shapes = op.get("shapes") or []
    sample = "; ".join(" , ".join("×".join(str(d) for d in shape) or "scalar" for shape in call) for call in shapes)
    method = op.get("method") or {}
    lines = [str(op.get("op", ""))]
    if sample:
        lines.append(f"input shapes: {sample}")
    lines += [f"{key}: {text}" for key, text in method.items()]
    return "\n".join(lines)
