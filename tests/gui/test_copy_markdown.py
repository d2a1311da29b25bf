"""Copy as Markdown: the summary card asks, the Run and History pages put the run's Markdown on the clipboard."""

from PySide6 import QtCore, QtGui

from console.analysis.summary_markdown import run_markdown
from console.history import HistoryStore
from console.ui.history_page import SHORTCUTS, HistoryPage
from console.ui.run_page import RunPage
from engines.spec import RunSpec

SUMMARY = {
    "iterations": 3200, "batch": 1, "duration_s": 6.1, "load_s": 2.21, "throughput_per_s": 645.2,
    "latency_ms": {"p50": 12.1, "p90": 13.9, "p99": 24.6, "mean": 12.4,
                   "ci95": {"p50": [11.9, 12.3], "p90": [13.6, 14.2], "p99": [22.0, 27.1]}},
    "valid": True, "invalid_reasons": [],
    "energy": {"joules": 672.0, "joules_per_inference": 0.21, "method": "estimated", "scope": "cpu",
               "inferences": 3200, "headline_is_total": True},
}


def clipboard_text() -> str:
    return QtGui.QGuiApplication.clipboard().text()


def test_the_run_page_copies_the_finished_run(qtbot):
    page = RunPage()
    qtbot.addWidget(page)
    assert not page.summary.copy_action.isEnabled()  # nothing to copy before a run finished
    record = {"type": "finished", "run_id": "ab" * 16, "status": "completed", "message": "",
              "spec": RunSpec(name="nightly | <b>fp32</b>").to_dict(), "summary": SUMMARY}
    page.handle(record)
    assert page.summary.copy_action.isEnabled()
    QtGui.QGuiApplication.clipboard().clear()
    button = page.summary.findChild(QtCore.QObject, "summary_copy_button")
    qtbot.mouseClick(button, QtCore.Qt.MouseButton.LeftButton)
    text = clipboard_text()
    assert text == run_markdown(record)
    assert "| p50 latency | 12.1 ms | 11.9 – 12.3 ms |" in text
    assert "0.210 J (estimated from a TDP model, not measured, cpu)" in text
    assert "nightly \\| &lt;b&gt;fp32&lt;/b&gt;" in text
    assert QtGui.QGuiApplication.clipboard().mimeData().hasText()
    assert page.summary.copy_action.text() == "Copied ✓"
    assert page.summary.copy_action.shortcut().toString() == RunPage.COPY_SHORTCUT
    assert page.summary.copy_action in page.actions()  # the shortcut works anywhere on the page
    page.handle({"type": "started", "t0_ns": 1, "spec": {"model": "mlp"}})
    assert not page.summary.copy_action.isEnabled() and page.copy_markdown() == ""


def test_the_history_page_copies_the_opened_run_and_keeps_its_compare_shortcut(qtbot, tmp_path):
    with HistoryStore(tmp_path / "history.db") as store:
        run_id = store.create_run(RunSpec(model="mlp", batch=4).to_dict())
        store.finish_run(run_id, "completed", summary=SUMMARY)
        page = HistoryPage(store)
        qtbot.addWidget(page)
        page.reload()
        page.open_run(run_id)
        QtGui.QGuiApplication.clipboard().clear()
        page.summary.copy_action.trigger()  # the card's button and context menu entry
        assert clipboard_text() == run_markdown(store.get_run(run_id))
        assert clipboard_text().startswith("### mlp · torch · cpu · fp32 · batch 4 · single-stream\n")
    # Ctrl+Shift+C is Compare on this page: the card's copy gets no shortcut here, so neither is ambiguous.
    assert page.summary.copy_action.shortcut().isEmpty()
    assert page.actions_["compare"].shortcut().toString() == SHORTCUTS["compare"]


def test_quitting_after_a_copy_exits_cleanly(tmp_path):
    """A copy, then the application ends: with the Markdown handed over as a QMimeData the process died with a
    segmentation fault at exit (PySide6 freed it twice)."""
    import os
    import subprocess
    import sys

    script = ("from PySide6 import QtWidgets\n"
              "app = QtWidgets.QApplication([])\n"
              "from console.ui.run_page import put_markdown_on_clipboard\n"
              "put_markdown_on_clipboard('### a run\\n| p50 | 1 ms |\\n')\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "QT_QPA_PLATFORM": "offscreen"})
    assert done.returncode == 0, (done.returncode, done.stderr[-500:])
