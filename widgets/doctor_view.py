"""What on this machine adds noise (`engines.doctor`'s report), as views: a table of checks for the Machine page
and a one-line banner the Run page shows when something is badly off.

Views only: they are handed the report as plain data ({"checks": [{"label", "status", "reading", "fix"}], …}) and
know nothing of how it was read. The banner warns, it never blocks: a run on a noisy machine is still a run, and
the summary's validity rules judge it.
"""

from __future__ import annotations

from typing import Any

from PySide6 import QtCore, QtWidgets

from widgets import theme

STATUS_TEXT = {"ok": "ok", "warn": "to improve", "bad": "bad", "not_available": "not available"}
_COLUMNS = ("Check", "Status", "Reading", "Fix")


class DoctorView(QtWidgets.QWidget):
    """One row per check: label, status (coloured), reading, fix; a summary line above."""

    def __init__(self, parent: QtWidgets.QWidget | None = None):
        super().__init__(parent)
        self.caption = QtWidgets.QLabel("Not checked yet.")
        self.caption.setWordWrap(True)
        self.table = QtWidgets.QTableWidget(0, len(_COLUMNS))
        self.table.setHorizontalHeaderLabels(list(_COLUMNS))
        self.table.setEditTriggers(QtWidgets.QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.setSelectionMode(QtWidgets.QAbstractItemView.SelectionMode.SingleSelection)
        self.table.setWordWrap(True)
        self.table.verticalHeader().setVisible(False)
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(0, QtWidgets.QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(1, QtWidgets.QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(2, QtWidgets.QHeaderView.ResizeMode.Stretch)
        header.setSectionResizeMode(3, QtWidgets.QHeaderView.ResizeMode.Stretch)
        self.table.verticalHeader().setSectionResizeMode(QtWidgets.QHeaderView.ResizeMode.ResizeToContents)
        layout = QtWidgets.QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.caption)
        layout.addWidget(self.table, 1)

    # ---- Public API
    def set_report(self, report: dict[str, Any], caption: str = "") -> None:
        """Show a report's checks; `caption` (e.g. when and how long it sampled) goes above the table."""
        checks = list(report.get("checks") or [])
        self.caption.setText(caption)
        self.table.setRowCount(len(checks))
        for row, check in enumerate(checks):
            status = str(check.get("status", ""))
            cells = (check.get("label", ""), STATUS_TEXT.get(status, status), check.get("reading", ""),
                     check.get("fix") or "")
            for column, text in enumerate(cells):
                item = QtWidgets.QTableWidgetItem(str(text))
                item.setToolTip(str(text))
                if column == 1:
                    item.setForeground(theme.qcolor(_status_color(status)))
                elif status == "not_available":
                    item.setForeground(theme.qcolor(theme.MUTED))
                self.table.setItem(row, column, item)

    def set_message(self, text: str) -> None:
        """A line above the table (checking…, or why it could not check) — the rows stay as they were."""
        self.caption.setText(text)

    def status_of(self, label: str) -> str:
        """The status text shown for the check labelled `label` ("" when there is none)."""
        for row in range(self.table.rowCount()):
            if self.table.item(row, 0).text() == label:
                return self.table.item(row, 1).text()
        return ""


class NoiseBanner(QtWidgets.QLabel):
    """"This machine is noisy: …" with the bad checks and their fixes; hidden when nothing is badly off."""

    sig_details_requested = QtCore.Signal()  # the link: show the Machine page

    def __init__(self, parent: QtWidgets.QWidget | None = None):
        super().__init__(parent)
        self.setWordWrap(True)
        self.setTextFormat(QtCore.Qt.TextFormat.RichText)
        self.setStyleSheet(f"color: {theme.BAD}; border: 1px solid {theme.BAD}; border-radius: 4px; padding: 6px;")
        self.linkActivated.connect(lambda _link: self.sig_details_requested.emit())
        self.hide()

    def set_report(self, report: dict[str, Any] | None) -> None:
        bad = [c for c in (report or {}).get("checks") or [] if c.get("status") == "bad"]
        if not bad:
            self.setText("")
            self.setToolTip("")
            self.hide()
            return
        readings = "; ".join(f"{_html(c.get('label', ''))}: {_html(c.get('reading', ''))}" for c in bad[:3])
        self.setText(f"<b>This machine adds noise to measurements</b> — {readings}. Results may spread more than "
                     f"usual. <a href='machine'>What to fix</a>")
        self.setToolTip("\n".join(f"{c.get('label')}: {c.get('fix') or ''}" for c in bad))
        self.show()


def _status_color(status: str) -> str:
    return {"ok": theme.GOOD, "bad": theme.BAD, "warn": theme.STATUS_COLORS.get("interrupted", theme.BAD)}.get(
        status, theme.MUTED)


def _html(text: str) -> str:
    return str(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
