"""A machine card's measured bandwidth entries (card["links"], docs/topology.md "## Bandwidth matrix") as a table:
one row per transfer — kind, from → to, variant, median GB/s, the spread of its trials (95 % interval), the link's
theoretical GB/s and the efficiency (median ÷ theoretical, coloured), the method as the row's tooltip.

A pure view fed plain data. Why a table and not only a grid: the card holds kinds of different shape (host memory
per NUMA pair, host↔device per GPU and variant, device↔device per pair, a drive to memory), and a table shows each
with its spread and method without empty cells. An entry that could not be measured stays a row whose figures say
"not available" and why, never 0. The efficiency is computed here from the two numbers shown beside it, so it
always agrees with them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from PySide6 import QtCore, QtGui, QtWidgets

from widgets import layouts, theme

COLUMNS = ("kind", "from → to", "variant", "median GB/s", "spread (95 % interval)", "theoretical GB/s",
           "efficiency %")
KIND_TITLES = {"host-memory": "host memory", "h2d": "host → device", "d2h": "device → host",
               "d2d": "device → device", "drive-read": "drive → memory"}
GOOD_AT, FAIR_AT = 75.0, 50.0  # efficiency % at or above: green; amber; below FAIR_AT: red
FAIR_COLOR = "#e69500"


def efficiency_percent(entry: Mapping[str, Any]) -> float | None:
    """median ÷ theoretical × 100 when both are known and positive; None otherwise (never a guessed figure)."""
    median, top = entry.get("median_gbs"), entry.get("theoretical_gbs")
    if isinstance(median, (int, float)) and isinstance(top, (int, float)) and top > 0 and median >= 0:
        return 100.0 * float(median) / float(top)
    return None


def efficiency_color(percent: float | None) -> str | None:
    if percent is None:
        return None
    if percent >= GOOD_AT:
        return theme.GOOD
    return FAIR_COLOR if percent >= FAIR_AT else theme.BAD


def row_texts(entry: Mapping[str, Any], names: Mapping[str, str] | None = None) -> list[str]:
    """The seven cells of one entry, as shown; `names` maps node ids to labels ("pci:0000:18:00.0" → "GPU 0")."""
    names = names or {}

    def name(node_id: Any) -> str:
        return names.get(str(node_id), str(node_id)) if node_id is not None else "?"

    why = entry.get("not_available")
    median = entry.get("median_gbs")
    spread = entry.get("spread") or {}
    interval = spread.get("interval_95")
    if isinstance(median, (int, float)):
        median_text = f"{median:.2f}"
    else:
        median_text = f"not available ({why or 'no median recorded'})"
    if interval and len(interval) == 2 and all(isinstance(x, (int, float)) for x in interval):
        spread_text = f"{interval[0]:.2f}–{interval[1]:.2f} · {spread.get('repeats', '?')} trials"
        if isinstance(spread.get("cv"), (int, float)):
            spread_text += f" · cv {100 * spread['cv']:.1f} %"
    else:
        spread_text = "—" if median is None else "not recorded"
    top = entry.get("theoretical_gbs")
    top_text = f"{top:.1f}" if isinstance(top, (int, float)) else "not known"
    percent = efficiency_percent(entry)
    return [KIND_TITLES.get(str(entry.get("kind")), str(entry.get("kind"))),
            f"{name(entry.get('src'))} → {name(entry.get('dst'))}", str(entry.get("variant") or "—"), median_text,
            spread_text, top_text, f"{percent:.0f}" if percent is not None else "—"]


class BandwidthMatrix(QtWidgets.QWidget):
    """The table and a caption; `set_links(links, names, source)` fills it, `set_message(text)` empties it and says
    why (no card, or a card without links)."""

    def __init__(self, parent: QtWidgets.QWidget | None = None):
        super().__init__(parent)
        self.table = QtWidgets.QTableWidget(0, len(COLUMNS))
        self.table.setHorizontalHeaderLabels(list(COLUMNS))
        self.table.verticalHeader().setVisible(False)
        self.table.setEditTriggers(QtWidgets.QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.setSelectionBehavior(QtWidgets.QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setAlternatingRowColors(True)
        self.table.setSortingEnabled(False)
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(QtWidgets.QHeaderView.ResizeMode.ResizeToContents)
        header.setStretchLastSection(False)
        header.setSectionResizeMode(1, QtWidgets.QHeaderView.ResizeMode.Stretch)  # the names take the spare room
        self.message = QtWidgets.QLabel("")
        self.message.setWordWrap(True)
        self.message.setFont(theme.font(theme.BASE_PT))
        self.caption = theme.caption_label()
        layouts.column(self, self.message, (self.table, 1), self.caption)
        self.entries: list[dict[str, Any]] = []

    def set_links(self, links: Mapping[str, Any], names: Mapping[str, str] | None = None, source: str = "") -> None:
        """Fill the table from a card's "links" block; `source` says which card (shown above the table)."""
        self.entries = [dict(e) for e in links.get("entries") or [] if isinstance(e, Mapping)]
        self.message.setText(source)
        self._fill(self.entries, names or {})
        missing = links.get("not_available") or {}
        notes = ["Efficiency = median ÷ theoretical (per direction); green ≥ 75 %, amber ≥ 50 %, red below. "
                 "Hover a row for how it was measured."]
        if missing:
            notes.append("Not measured: " + "; ".join(f"{what} ({why})" for what, why in missing.items()) + ".")
        self.caption.setText(" ".join(notes))

    def set_message(self, text: str) -> None:
        self.entries = []
        self.table.setRowCount(0)
        self.message.setText(text)
        self.caption.setText("")

    def row_count(self) -> int:
        return self.table.rowCount()

    def cell(self, row: int, column: int) -> QtWidgets.QTableWidgetItem | None:
        return self.table.item(row, column)

    def _fill(self, entries: Iterable[Mapping[str, Any]], names: Mapping[str, str]) -> None:
        entries = list(entries)
        self.table.clearSpans()
        self.table.setRowCount(len(entries))
        for row, entry in enumerate(entries):
            texts = row_texts(entry, names)
            tip = f"{entry.get('label') or entry.get('id')}\nmethod: {entry.get('method') or 'not recorded'}"
            if (entry.get("spread") or {}).get("note"):
                tip += f"\nspread: {entry['spread']['note']}"
            if entry.get("link_ids"):
                tip += f"\nlinks crossed: {', '.join(map(str, entry['link_ids']))}"
            if entry.get("not_available"):
                tip += f"\nnot available: {entry['not_available']}"
            for column, text in enumerate(texts):
                item = QtWidgets.QTableWidgetItem(text)
                item.setToolTip(tip)
                if column in (3, 5, 6):
                    item.setTextAlignment(QtCore.Qt.AlignmentFlag.AlignRight | QtCore.Qt.AlignmentFlag.AlignVCenter)
                if column == 3 and entry.get("median_gbs") is None:
                    item.setForeground(theme.qcolor(theme.MUTED))
                    item.setTextAlignment(QtCore.Qt.AlignmentFlag.AlignLeft | QtCore.Qt.AlignmentFlag.AlignVCenter)
                if column == 6:
                    color = efficiency_color(efficiency_percent(entry))
                    if color is not None:
                        item.setForeground(QtGui.QBrush(QtGui.QColor(color)))
                        item.setFont(theme.font(theme.BASE_PT, bold=True))
                self.table.setItem(row, column, item)
            if entry.get("median_gbs") is None:  # "not available (why)" across the median and spread cells
                self.table.setSpan(row, 3, 1, 2)
