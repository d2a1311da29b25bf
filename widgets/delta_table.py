"""The Compare page's tables: each metric of each run against the first (A), and what differs between them.

Views fed plain rows. A delta row::

    {"metric": "p50 latency", "unit": "ms", "letter": "B", "reference": 1.22, "value": 1.30, "ratio": 1.065,
     "ci95": [1.02, 1.11] | None, "verdict": "slower" | "faster" | "equivalent" | "undecided" | None, "better": "lower",
     "method": "…", "explanation": "…" (optional)}

A ratio is the run's value over A's. Only p50 has an interval and a verdict (console.analysis.compare); the
others say "ratio only, no interval" rather than borrow a confidence they do not have. A differences row is
{"letter", "field", "a", "b", "kind": "configuration" | "environment"}: a configuration difference means the runs
measure different things, an environment one is what changed around the same measurement.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from PySide6 import QtCore, QtGui, QtWidgets

from widgets import layouts, theme
from widgets.formatting import MISSING, format_number

DELTA_COLUMNS = ("Metric", "Run", "A", "Value", "Ratio to A", "95% interval", "Verdict", "How")
DIFF_COLUMNS = ("Run", "Field", "A", "Value", "Kind")
_RIGHT = QtCore.Qt.AlignmentFlag.AlignRight | QtCore.Qt.AlignmentFlag.AlignVCenter


def ratio_text(ratio: float | None) -> str:
    """"1.065× (+6.5%)", or "—"."""
    if ratio is None:
        return MISSING
    return f"{ratio:.3f}× ({(ratio - 1) * 100:+.1f}%)"


def value_text(value: Any) -> str:
    """A configuration or environment value, short: numbers and text as they are, structures as compact JSON."""
    if value is None:
        return "(none)"
    if isinstance(value, (dict, list)):
        text = json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)
        return text if len(text) <= 80 else text[:77] + "…"
    return str(value)


def _table(columns: Sequence[str]) -> QtWidgets.QTableWidget:
    table = QtWidgets.QTableWidget(0, len(columns))
    table.setHorizontalHeaderLabels(list(columns))
    theme.read_only_rows(table)
    table.horizontalHeader().setStretchLastSection(True)
    return table


def _item(text: str, right: bool = False, color: str | None = None, tip: str | None = None,
          bold: bool = False) -> QtWidgets.QTableWidgetItem:
    item = QtWidgets.QTableWidgetItem(text)
    if right:
        item.setTextAlignment(_RIGHT)
    if color:
        item.setForeground(QtGui.QBrush(QtGui.QColor(color)))
    if tip:
        item.setToolTip(tip)
    if bold:
        font = item.font()
        font.setBold(True)
        item.setFont(font)
    return item


class _OneTable(QtWidgets.QWidget):
    """A widget that is one read-only table of `COLUMNS` (`self.table`), edge to edge."""

    COLUMNS: tuple[str, ...] = ()

    def __init__(self, parent: QtWidgets.QWidget | None = None):
        super().__init__(parent)
        self.table = _table(self.COLUMNS)
        layouts.column(self, self.table)


class DeltaTable(_OneTable):
    """Metric rows per run against A; the verdict coloured (slower red, faster green)."""

    COLUMNS = DELTA_COLUMNS

    def set_rows(self, rows: Sequence[Mapping[str, Any]]) -> None:
        self.table.setRowCount(0)
        for row in rows:
            position = self.table.rowCount()
            self.table.insertRow(position)
            unit = row.get("unit") or ""
            ci = row.get("ci95")
            verdict = row.get("verdict")
            color = {"slower": theme.BAD, "faster": theme.GOOD}.get(verdict or "")
            cells = (
                _item(f"{row['metric']} ({unit})" if unit else row["metric"]),
                _item(str(row.get("letter") or ""), bold=True),
                _item(format_number(row.get("reference")), right=True),
                _item(format_number(row.get("value")), right=True),
                _item(ratio_text(row.get("ratio")), right=True,
                      tip=f"{row.get('letter')} / A; {row.get('better', 'lower')} is better"),
                _item(f"{ci[0]:.3f} – {ci[1]:.3f}" if ci else MISSING, right=True),
                _item(verdict or MISSING, color=color, bold=bool(color), tip=row.get("explanation")),
                _item(str(row.get("method") or ""), tip=row.get("explanation") or row.get("method")),
            )
            for column, cell in enumerate(cells):
                self.table.setItem(position, column, cell)
        self.table.resizeColumnsToContents()
        self.table.setColumnWidth(len(DELTA_COLUMNS) - 1, min(self.table.columnWidth(len(DELTA_COLUMNS) - 1), 420))

    def rows(self) -> list[list[str]]:
        """The table as text, row by row (tests read it)."""
        return [[self.table.item(r, c).text() for c in range(self.table.columnCount())]
                for r in range(self.table.rowCount())]


class DifferencesTable(_OneTable):
    """What differs between A and each other run; a line saying so when nothing does."""

    COLUMNS = DIFF_COLUMNS

    def set_differences(self, groups: Sequence[Mapping[str, Any]]) -> None:
        """`groups`: [{"letter", "items": [{field, a, b, kind}]}] — one per run after A."""
        self.table.clearSpans()
        self.table.setRowCount(0)
        for group in groups:
            items = list(group.get("items") or [])
            if not items:
                self._add(group["letter"], "nothing differs", "", "", "",
                          why="same configuration and the same recorded environment as A")
                self.table.setSpan(self.table.rowCount() - 1, 1, 1, len(DIFF_COLUMNS) - 1)
                continue
            for entry in sorted(items, key=lambda d: (d["kind"] != "configuration", str(d["field"]))):
                kind = entry["kind"]
                self._add(group["letter"], str(entry["field"]), value_text(entry.get("a")), value_text(entry.get("b")),
                          kind, theme.BAD if kind == "configuration" else None,
                          "a different measurement: these runs are not one series" if kind == "configuration"
                          else "changed around the same measurement (versions, driver, device)")
        self.table.resizeColumnsToContents()
        for column in (2, 3):
            self.table.setColumnWidth(column, min(self.table.columnWidth(column), 260))

    def rows(self) -> list[list[str]]:
        return [[self.table.item(r, c).text() for c in range(self.table.columnCount())]
                for r in range(self.table.rowCount())]

    def _add(self, letter: str, field: str, a: str, b: str, kind: str, color: str | None = None,
             why: str | None = None) -> None:
        position = self.table.rowCount()
        self.table.insertRow(position)
        for column, text in enumerate((letter, field, a, b, kind)):
            tip = text if column in (2, 3) else why if column in (1, 4) else None
            self.table.setItem(position, column, _item(text, color=color if column == 4 else None,
                                                       bold=column == 0, tip=tip))
