"""The window's Report… action: ask where (HTML or PDF, A4 or Letter), write the report, say what it found.

The report reads the history through its own read-only connection (never the window's writer), so a report can be
written while a run is measuring. The folder last written to is remembered.
"""

from __future__ import annotations

from pathlib import Path

from PySide6 import QtCore, QtGui, QtWidgets

from console.history import HistoryError, open_reader
from console.report import ReportError, describe, gather, write_bytes, write_html
from console.ui.settings import APPLICATION, ORGANIZATION

FILTERS = {"HTML report, one self-contained file (*.html)": ".html", "PDF report, A4 (*.pdf)": "a4",
           "PDF report, Letter (*.pdf)": "letter"}
_DIR_KEY = "report/dir"


# ---- Public API
def write_report(db_path: Path, run_ids: list[str], path: Path, page: str = "a4",
                 sweep_id: str | None = None) -> dict:
    """Write the report of `run_ids` (or of a sweep) to `path` (.html or .pdf); returns describe()'s facts.
    Raises ReportError or HistoryError with the problem and the fix."""
    with open_reader(db_path) as store:
        report = gather(store, run_ids, sweep_id)
    if path.suffix.lower() == ".pdf":
        from console.ui.report_pdf import pdf_bytes

        write_bytes(path, pdf_bytes(report, page))
    else:
        write_html(report, path)
    return {**describe(report), "out": str(path)}


def ask_and_write(parent: QtWidgets.QWidget, db_path: Path, run_ids: list[str],
                  sweep_id: str | None = None) -> dict | None:
    """The save dialog, then the report; errors are shown, never raised. None when cancelled or failed."""
    settings = QtCore.QSettings(ORGANIZATION, APPLICATION)
    folder = str(settings.value(_DIR_KEY, str(Path.home())))
    stem = f"report-{(sweep_id or (run_ids[0] if run_ids else 'runs'))[:8]}"
    name, chosen = QtWidgets.QFileDialog.getSaveFileName(parent, "Write report", str(Path(folder) / f"{stem}.html"),
                                                         ";;".join(FILTERS))
    if not name:
        return None
    path, page = _target(Path(name), FILTERS.get(chosen, ".html"))
    settings.setValue(_DIR_KEY, str(path.parent))
    QtWidgets.QApplication.setOverrideCursor(QtGui.QCursor(QtCore.Qt.CursorShape.WaitCursor))
    try:
        return write_report(db_path, run_ids, path, page, sweep_id)
    except (ReportError, HistoryError) as exc:
        QtWidgets.QMessageBox.warning(parent, "Cannot write the report", str(exc))
        return None
    finally:
        QtWidgets.QApplication.restoreOverrideCursor()


# ---- Private API
def _target(path: Path, choice: str) -> tuple[Path, str]:
    """The file and page size from what was typed and the filter picked: a typed .pdf wins over the filter."""
    if path.suffix.lower() == ".pdf":
        return path, choice if choice in ("a4", "letter") else "a4"
    if path.suffix.lower() in (".html", ".htm"):
        return path, "a4"
    return path.with_suffix(".html" if choice == ".html" else ".pdf"), choice if choice != ".html" else "a4"
