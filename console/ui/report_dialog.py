"""The window's Report… action: ask where (HTML or PDF, A4 or Letter), write the report, say what it found.

The report reads the history through its own read-only connection (never the window's writer), so a report can be
written while a run is measuring. Reading the runs, drawing a PDF and writing the file take seconds for a large
comparison, so they run on a worker thread (QThreadPool): the window keeps painting, the status bar shows the step,
and the result or the error comes back as a signal on the GUI thread. The folder last written to is remembered.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from PySide6 import QtCore, QtWidgets

from console.history import HistoryError, open_reader
from console.report import ReportError, describe, gather, html_bytes, write_bytes
from console.ui.settings import APPLICATION, ORGANIZATION

FILTERS = {"HTML report, one self-contained file (*.html)": ".html", "PDF report, A4 (*.pdf)": "a4",
           "PDF report, Letter (*.pdf)": "letter"}
STEPS = 3  # reading the runs, drawing the document, writing the file
_DIR_KEY = "report/dir"

Progress = Callable[[int, int, str], None]  # (step, of steps, what is being done)


# ---- Public API
def write_report(db_path: Path, run_ids: list[str], path: Path, page: str = "a4",
                 sweep_id: str | None = None, progress: Progress | None = None) -> dict:
    """Write the report of `run_ids` (or of a sweep) to `path` (.html or .pdf); returns describe()'s facts.
    Raises ReportError or HistoryError with the problem and the fix. Safe on any thread (a PDF is drawn by
    QPdfWriter/QPainter, which need no GUI thread)."""
    step = progress or (lambda *_: None)
    step(1, STEPS, "reading the runs")
    with open_reader(db_path) as store:
        report = gather(store, run_ids, sweep_id)
    if path.suffix.lower() == ".pdf":
        from console.ui.report_pdf import pdf_bytes

        step(2, STEPS, "drawing the PDF")
        data = pdf_bytes(report, page)
    else:
        step(2, STEPS, "laying out the HTML")
        data = html_bytes(report)
    step(3, STEPS, f"writing {path.name}")
    write_bytes(path, data)  # whole or not at all
    return {**describe(report), "out": str(path)}


class ReportJob(QtCore.QObject):
    """One report written on a worker thread. Every public signal is emitted on the GUI thread."""

    sig_progress = QtCore.Signal(int, int, str)  # step, of steps, what is being done
    sig_done = QtCore.Signal(object)  # write_report's facts: kind, finding, runs, out …
    sig_failed = QtCore.Signal(str)  # the problem and the fix

    _sig_step = QtCore.Signal(int, int, str)  # from the worker thread (queued to this object's GUI thread)
    _sig_end = QtCore.Signal(object, object)  # (facts, error text), from the worker thread

    def __init__(self, db_path: Path, run_ids: list[str], path: Path, page: str = "a4",
                 sweep_id: str | None = None, parent: QtCore.QObject | None = None):
        super().__init__(parent)
        self.db_path, self.run_ids, self.path, self.page, self.sweep_id = db_path, run_ids, path, page, sweep_id
        self.running = False
        self.result: dict | None = None
        self.error: str | None = None
        self._sig_step.connect(self._stepped)
        self._sig_end.connect(self._ended)

    def start(self) -> None:
        self.running = True
        QtCore.QThreadPool.globalInstance().start(_Call(self._write))

    # ---- Private API
    def _write(self) -> None:  # on the worker thread
        facts, error = None, None
        try:
            facts = write_report(self.db_path, self.run_ids, self.path, self.page, self.sweep_id,
                                 progress=self._step)
        except (ReportError, HistoryError) as exc:
            error = str(exc)
        except Exception as exc:  # noqa: BLE001 — on a worker thread nothing else would ever show it
            error = f"{self.path}: the report failed ({type(exc).__name__}: {exc})"
        _emit(self._sig_end, facts, error)

    def _step(self, step: int, steps: int, what: str) -> None:  # on the worker thread
        _emit(self._sig_step, step, steps, what)

    def _stepped(self, step: int, steps: int, what: str) -> None:  # on the GUI thread
        self.sig_progress.emit(step, steps, what)

    def _ended(self, facts: dict | None, error: str | None) -> None:  # on the GUI thread
        self.running = False
        self.result, self.error = facts, error
        if error is None:
            self.sig_done.emit(facts)
        else:
            self.sig_failed.emit(error)


class ReportProgress(QtWidgets.QProgressBar):
    """The status bar's bar while a report is written: which step, of how many."""

    def __init__(self, parent: QtWidgets.QWidget | None = None):
        super().__init__(parent)
        self.setRange(0, STEPS)
        self.setMaximumWidth(260)
        self.setTextVisible(True)
        self.hide()

    def follow(self, job: ReportJob) -> None:
        self.setValue(0)
        self.setFormat(f"Report: starting ({job.path.name})")
        self.show()
        job.sig_progress.connect(self._step)
        job.sig_done.connect(self.hide)
        job.sig_failed.connect(self.hide)

    def _step(self, step: int, steps: int, what: str) -> None:
        self.setRange(0, steps)
        self.setValue(step - 1)
        self.setFormat(f"Report: {what} ({step}/{steps})")


def ask_and_write(parent: QtWidgets.QWidget, db_path: Path, run_ids: list[str], sweep_id: str | None = None,
                  status_bar: QtWidgets.QStatusBar | None = None) -> ReportJob | None:
    """The save dialog, then the report written on a worker thread; returns the started job (None when cancelled
    or while another report is still being written). Errors are shown in a message box when they arrive, never
    raised; with a status bar, it shows the progress and then what the report found."""
    running = _running_job(parent)
    if running is not None:
        if status_bar is not None:
            status_bar.showMessage(f"A report is still being written to {running.path}; wait for it to finish")
        return None
    settings = QtCore.QSettings(ORGANIZATION, APPLICATION)
    folder = str(settings.value(_DIR_KEY, str(Path.home())))
    stem = f"report-{(sweep_id or (run_ids[0] if run_ids else 'runs'))[:8]}"
    name, chosen = QtWidgets.QFileDialog.getSaveFileName(parent, "Write report", str(Path(folder) / f"{stem}.html"),
                                                         ";;".join(FILTERS))
    if not name:
        return None
    path, page = _target(Path(name), FILTERS.get(chosen, ".html"))
    settings.setValue(_DIR_KEY, str(path.parent))
    job = ReportJob(db_path, list(run_ids), path, page, sweep_id, parent=parent)
    job.sig_failed.connect(lambda text: QtWidgets.QMessageBox.warning(parent, "Cannot write the report", text))
    job.sig_done.connect(job.deleteLater)
    job.sig_failed.connect(job.deleteLater)
    if status_bar is not None:
        _progress_bar(status_bar).follow(job)
        job.sig_done.connect(lambda facts: status_bar.showMessage(
            f"Report written to {facts['out']}: {facts['finding']}"))
        job.sig_failed.connect(lambda _text: status_bar.showMessage(f"The report to {path} was not written"))
    job.start()
    return job


# ---- Private API
class _Call(QtCore.QRunnable):
    def __init__(self, function: Callable[[], Any]):
        super().__init__()
        self._function = function

    def run(self) -> None:
        self._function()


def _emit(signal: Any, *args: Any) -> None:
    """Emit from the worker thread; a window closed meanwhile has taken the job with it, and nobody is listening."""
    try:
        signal.emit(*args)
    except RuntimeError:  # "Internal C++ object already deleted"
        pass


def _running_job(parent: QtCore.QObject) -> ReportJob | None:
    return next((job for job in parent.findChildren(ReportJob) if job.running), None)


def _progress_bar(status_bar: QtWidgets.QStatusBar) -> ReportProgress:
    bar = status_bar.findChild(ReportProgress)
    if bar is None:
        bar = ReportProgress(status_bar)
        status_bar.addPermanentWidget(bar)
    return bar


def _target(path: Path, choice: str) -> tuple[Path, str]:
    """The file and page size from what was typed and the filter picked: a typed .pdf wins over the filter."""
    if path.suffix.lower() == ".pdf":
        return path, choice if choice in ("a4", "letter") else "a4"
    if path.suffix.lower() in (".html", ".htm"):
        return path, "a4"
    return path.with_suffix(".html" if choice == ".html" else ".pdf"), choice if choice != ".html" else "a4"
