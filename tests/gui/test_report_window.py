"""Reports from Qt: the PDF (A4 and Letter, charts as vectors, text searchable) and the window's Report… action."""

import re
import sys
import threading
from datetime import datetime, timedelta, timezone
from pathlib import Path

import numpy as np
import pytest
from PySide6 import QtCore, QtWidgets

sys.path.insert(0, str(Path(__file__).resolve().parent))
import week_history  # noqa: E402

from console.history import HistoryStore, open_reader  # noqa: E402
from console.report import gather  # noqa: E402
from console.ui import report_dialog  # noqa: E402
from console.ui.app import build_main_window  # noqa: E402
from console.ui.report_pdf import pdf_bytes  # noqa: E402
from engines.spec import RunSpec  # noqa: E402

START = datetime(2026, 11, 2, 9, 0, tzinfo=timezone.utc)


@pytest.fixture
def two_runs(tmp_path):
    path = tmp_path / "history.db"
    rng = np.random.default_rng(9)
    with HistoryStore(path) as store:
        ids = [week_history.store_run(store, RunSpec(model="mlp", engine=engine, batch=1).to_dict(),
                                      START + timedelta(minutes=i), median, rng)
               for i, (engine, median) in enumerate((("torch", 1.0), ("onnxruntime", 0.5)))]
    return path, ids


def pages(pdf: bytes) -> list[str]:
    return re.findall(rb"/MediaBox \[0 0 ([\d.]+ [\d.]+)\]", pdf)


def test_the_pdf_comes_in_a4_and_letter_with_vector_charts(qapp, two_runs):
    path, ids = two_runs
    with open_reader(path) as store:
        report = gather(store, ids)
    a4, letter = pdf_bytes(report, "a4"), pdf_bytes(report, "letter")
    assert a4.startswith(b"%PDF") and letter.startswith(b"%PDF")
    assert len(pages(a4)) >= 2 and set(pages(a4)) == {b"595.000000 842.000000"}
    assert set(pages(letter)) == {b"612.000000 792.000000"}
    assert b"/Subtype /Image" not in a4  # the charts are drawn as paths, not pasted as pictures
    with pytest.raises(ValueError, match="page must be one of a4, letter"):
        pdf_bytes(report, "a3")


def test_report_action_writes_the_selected_runs(qtbot, two_runs, tmp_path, monkeypatch):
    path, ids = two_runs
    window = build_main_window(path, discover_targets=False, telemetry_hz=None)
    qtbot.addWidget(window)
    page = window.history_page
    assert not page.actions_["report"].isEnabled()
    page.table.select_run_ids(ids)
    assert page.actions_["report"].isEnabled()
    out = tmp_path / "out" / "comparison.pdf"
    out.parent.mkdir()
    monkeypatch.setattr(QtWidgets.QFileDialog, "getSaveFileName",
                        staticmethod(lambda *a, **k: (str(out.with_suffix("")), "PDF report, Letter (*.pdf)")))
    page.actions_["report"].trigger()  # the History page asks, the window writes (on a worker thread)
    qtbot.waitUntil(lambda: window.status.currentMessage().startswith("Report written"), timeout=60_000)
    assert out.read_bytes().startswith(b"%PDF")
    assert set(pages(out.read_bytes())) == {b"612.000000 792.000000"}
    assert "ONNX Runtime serves this model 2× faster than PyTorch" in window.status.currentMessage()


def test_a_report_that_cannot_be_written_is_explained_not_raised(qtbot, two_runs, tmp_path, monkeypatch):
    path, ids = two_runs
    window = build_main_window(path, discover_targets=False, telemetry_hz=None)
    qtbot.addWidget(window)
    shown = []
    monkeypatch.setattr(QtWidgets.QFileDialog, "getSaveFileName",
                        staticmethod(lambda *a, **k: (str(tmp_path / "no" / "such" / "r.html"), "")))
    monkeypatch.setattr(QtWidgets.QMessageBox, "warning", staticmethod(lambda *a: shown.append(a[2])))
    job = report_dialog.ask_and_write(window, path, ids)
    with qtbot.waitSignal(job.sig_failed, timeout=60_000):
        pass
    assert shown and "cannot write" in shown[0] and not (tmp_path / "no").exists()


def test_the_report_is_written_off_the_gui_thread_while_the_window_stays_responsive(qtbot, two_runs, tmp_path,
                                                                                     monkeypatch):
    """The file is written on a worker thread, which waits for a timer only a free GUI thread can fire; the
    status bar shows each step, and the result lands."""
    path, ids = two_runs
    window = build_main_window(path, discover_targets=False, telemetry_hz=None)
    qtbot.addWidget(window)
    out = tmp_path / "report.html"
    monkeypatch.setattr(QtWidgets.QFileDialog, "getSaveFileName", staticmethod(lambda *a, **k: (str(out), "")))
    released, seen = threading.Event(), {}
    real_write = report_dialog.write_bytes

    def write_when_released(target, data):
        seen["thread"] = threading.current_thread()
        seen["released"] = released.wait(20)  # set by a GUI-thread timer: only a free event loop fires it
        return real_write(target, data)

    monkeypatch.setattr(report_dialog, "write_bytes", write_when_released)
    steps = []
    job = window.report_runs(ids)
    bar = window.status.findChild(report_dialog.ReportProgress)
    assert not bar.isHidden()
    job.sig_progress.connect(lambda step, of, what: steps.append((step, of, what, bar.format())))
    QtCore.QTimer.singleShot(50, released.set)
    with qtbot.waitSignal(job.sig_done, timeout=60_000) as done:
        assert window.report_runs(ids) is None  # one report at a time: the second is told to wait
        assert "still being written" in window.status.currentMessage()
    assert seen["thread"] is not threading.main_thread() and seen["released"]
    assert out.read_text(encoding="utf-8").lstrip().lower().startswith("<!doctype html")
    assert done.args[0]["out"] == str(out) and set(done.args[0]["runs"]) == set(ids)
    assert [s[0] for s in steps] == [1, 2, 3]
    assert steps[-1] == (3, 3, "writing report.html", "Report: writing report.html (3/3)")
    assert window.status.currentMessage().startswith(f"Report written to {out}: ")
    assert bar.isHidden()
