"""The History page: every stored run, newest first; double-click re-opens its plots from the database."""

from __future__ import annotations

from PySide6 import QtCore, QtWidgets

from console.history import HistoryError, HistoryStore
from console.ui.run_plots import RunPlots
from widgets.history_table import HistoryTable
from widgets.summary_card import SummaryCard


class HistoryPage(QtWidgets.QWidget):
    """Table on top; the selected run's summary and plots below, read back from SQLite."""

    sig_error = QtCore.Signal(str)

    # ---- Public API
    def __init__(self, store: HistoryStore | None, parent: QtWidgets.QWidget | None = None):
        super().__init__(parent)
        self._store = store
        self.table = HistoryTable()
        self.summary = SummaryCard()
        self.plots = RunPlots()
        detail = QtWidgets.QWidget()
        detail_layout = QtWidgets.QHBoxLayout(detail)
        detail_layout.setContentsMargins(0, 0, 0, 0)
        self.summary.setMaximumWidth(420)
        detail_layout.addWidget(self.summary)
        detail_layout.addWidget(self.plots, 1)
        splitter = QtWidgets.QSplitter(QtCore.Qt.Orientation.Vertical)
        splitter.addWidget(self.table)
        splitter.addWidget(detail)
        splitter.setSizes([300, 500])
        layout = QtWidgets.QVBoxLayout(self)
        layout.addWidget(splitter)
        self.table.sig_run_activated.connect(self.open_run)
        self.opened_run_id: str | None = None

    def reload(self) -> None:
        if self._store is None:
            return
        try:
            self.table.set_runs(self._store.list_runs())
        except HistoryError as exc:
            self.sig_error.emit(str(exc))

    def open_run(self, run_id: str) -> None:
        """Read a run's latencies and samples back from the database and plot them."""
        if self._store is None:
            return
        try:
            run = self._store.get_run(run_id)
            if run is None:
                self.sig_error.emit(f"run {run_id} is no longer in the history database")
                return
            t_ns, latency_ns = self._store.latencies(run["run_id"])
            samples = self._store.samples(run["run_id"])
        except HistoryError as exc:
            self.sig_error.emit(str(exc))
            return
        self.opened_run_id = run["run_id"]
        self.plots.show_stored(run, t_ns, latency_ns, samples)
        if run.get("summary"):
            self.summary.set_summary(run["summary"])
        else:
            self.summary.clear()
        if run.get("error"):
            self.summary.set_message(run["error"], error=run["status"] == "failed")
