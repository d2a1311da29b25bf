"""The Storage page: a tab per kind with the CLI's flags as its form, Run in a worker with progress, the result
stored as a run and drawn in the kind's chart, the newest stored result of each kind on open, one benchmark at a
time (and never beside a model run), remembered forms, and no torch in the window's process. The kind is the fake
of tests/storage_fake_kind.py (a spawned worker, but no disk benchmark)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from PySide6 import QtCore

from console.cli import storage_cmd
from console.history import open_reader
from console.storage.launch import run_kind
from console.storage.runs import store_outcome
from console.ui.pages import PAGES, PageContext, shortcut
from console.ui.storage_page import KINDS, StoragePage
from console.ui.workspace import RUN, STORAGE, Workspace

FAKE_KINDS = {kind: "storage_fake_kind:run" for kind in KINDS}


@pytest.fixture
def fake_modules(monkeypatch):
    for kind in KINDS:
        monkeypatch.setitem(storage_cmd.KIND_MODULES, kind, "storage_fake_cli")


@pytest.fixture
def workspace(tmp_path):
    ws = Workspace.open(tmp_path / "history.db", worker_entry=lambda *_: None, telemetry_hz=None)
    yield ws
    ws.close()


@pytest.fixture(autouse=True)
def fresh_settings(tmp_path, monkeypatch):
    QtCore.QSettings.setDefaultFormat(QtCore.QSettings.Format.IniFormat)
    QtCore.QSettings.setPath(QtCore.QSettings.Format.IniFormat, QtCore.QSettings.Scope.UserScope, str(tmp_path))


def make_page(qtbot, workspace):
    page = StoragePage(PageContext(workspace, base_values=dict, targets=list), kinds=FAKE_KINDS)
    qtbot.addWidget(page)
    return page


def stored(workspace, kind, **options):
    outcome = run_kind(kind, {"kind": kind, **options}, kinds=FAKE_KINDS)
    return store_outcome(workspace.store, kind, options, outcome)[0]


def test_the_page_is_registered_with_its_shortcut():
    names = [info.name for info in PAGES]
    assert "storage" in names and shortcut(names.index("storage")) == f"Ctrl+{names.index('storage') + 1}"


def test_each_tab_shows_its_newest_stored_result_and_chart(qtbot, workspace, fake_modules):
    stored(workspace, "feed", n=5)
    newest = stored(workspace, "feed", n=6, label="newest feed")
    stored(workspace, "coldstart", n=5)
    page = make_page(qtbot, workspace)
    feed = page.kind_tabs["feed"]
    assert newest[:8] in feed.source.text() and "newest feed" in feed.source.text()
    assert "AU 93.5%" in feed.summary.toPlainText() and "Method: a fake kind" in feed.summary.toPlainText()
    assert feed.chart.data["max_passing"] == 5 and feed.chart.threshold_line is not None and feed.chart.star
    assert feed.stored.count() == 2 and "newest feed" in feed.stored.itemText(0)
    feed.stored.setCurrentIndex(1)  # an older stored result, picked from the list
    assert feed.source.text().startswith("Stored: run") and "fake feed on tmpfs" in feed.source.text()
    cold = page.kind_tabs["coldstart"]
    assert cold.chart.data["categories"] == ["mmap", "buffered", "direct"] and len(cold.chart.bars) == 3  # to device: none measured, no bar
    assert "left out (not 0)" in cold.chart.note.text()
    assert page.kind_tabs["sweep"].source.text() == "No stored result of this kind yet."


def test_the_heat_map_marks_the_knee_and_switches_maps(qtbot, workspace, fake_modules):
    stored(workspace, "sweep", n=5)
    page = make_page(qtbot, workspace)
    heatmap = page.kind_tabs["sweep"].chart
    assert heatmap.current_map() == "read/seq" and heatmap.choice.count() == 2
    assert heatmap.knee_item is not None and heatmap.knee_item.rect().x() == pytest.approx(0.03)  # QD 1 column
    assert [t.toPlainText() for t in heatmap.cell_texts][:3] == ["40", "120", "300"]
    heatmap.choice.setCurrentText("read/rand")
    assert "—" in [t.toPlainText() for t in heatmap.cell_texts]  # a missing point is not drawn as 0
    assert "1 point not measured" in heatmap.note.text()


def test_run_stores_the_benchmark_and_draws_it(qtbot, workspace, fake_modules):
    page = make_page(qtbot, workspace)
    page.tabs.setCurrentIndex(KINDS.index("checkpoint"))
    tab = page.kind_tabs["checkpoint"]
    tab.form.set_values({"--kind": "checkpoint", "--n": "30", "--label": "ckpt on tmpfs"})
    with qtbot.waitSignal(page.sig_stored, timeout=30000) as stored_signal:
        assert page.run_kind()
        assert page.running == "checkpoint" and workspace.measuring == STORAGE
        assert not tab.run_button.isEnabled() and tab.stop_button.isEnabled()
    run_id = stored_signal.args[0]
    assert page.running is None and workspace.measuring is None and tab.run_button.isEnabled()
    assert "Completed" in tab.progress_text.text() and run_id[:8] in tab.progress_text.text()
    assert tab.stored.count() == 1 and tab.stored.itemText(0).startswith(run_id[:8])  # listed as stored
    assert tab.chart.data["categories"] == ["torch", "safetensors", "dcp"]
    workspace.writer.flush()
    with open_reader(workspace.db_path) as reader:
        run = reader.get_run(run_id)
        assert run["status"] == "completed" and run["model"] == "ckpt on tmpfs"
        assert run["spec"]["scenario"] == "storage-checkpoint" and reader.latency_count(run_id) == 30
    assert make_page(qtbot, workspace).kind_tabs["checkpoint"].form.values()["--n"] == "30"  # remembered


def test_the_page_with_the_real_kinds_never_imports_the_engines(tmp_path):
    """Checked in a fresh interpreter (no other test's imports can hide it): the page with every real kind's form,
    a stored result drawn, and `labconsole storage` parsed, with neither torch nor onnxruntime imported."""
    probe = ("import sys, os; from PySide6 import QtWidgets; app = QtWidgets.QApplication([]); "
             "from pathlib import Path; from console.ui.workspace import Workspace; "
             "from console.ui.pages import PageContext; from console.ui.storage_page import StoragePage; "
             "from console.cli import build_parser; build_parser().parse_args(['storage', 'sweep', '--dir', '.']); "
             f"ws = Workspace.open(Path({str(tmp_path / 'h.db')!r}), worker_entry=lambda *_: None, telemetry_hz=None); "
             "page = StoragePage(PageContext(ws, base_values=dict, targets=list)); "
             "print(sorted(k for k, t in page.kind_tabs.items() if t.form is not None)); "
             "print(sorted(m for m in ('torch', 'onnxruntime') if m in sys.modules)); ws.close()")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "QT_QPA_PLATFORM": "offscreen"})
    assert done.returncode == 0, done.stderr
    forms, engines = done.stdout.strip().splitlines()[-2:]
    assert forms == str(sorted(KINDS)) and engines == "[]"


def test_a_failed_benchmark_says_why_and_is_stored_failed(qtbot, workspace, fake_modules):
    page = make_page(qtbot, workspace)
    tab = page.kind_tabs["feed"]
    tab.form.set_values({"--mode": "raise"})
    with qtbot.waitSignal(page.sig_stored, timeout=30000) as stored_signal:
        assert page.run_kind("feed")
    assert "Failed" in tab.progress_text.text() and "reader 3 crashed" in tab.progress_text.text()
    assert "Worker traceback" in tab.summary.toPlainText()
    workspace.writer.flush()
    with open_reader(workspace.db_path) as reader:
        assert reader.get_run(stored_signal.args[0])["status"] == "failed"


def test_stop_cancels_and_bad_values_never_start(qtbot, workspace, fake_modules):
    page = make_page(qtbot, workspace)
    tab = page.kind_tabs["feed"]
    tab.form.set_values({"--n": "-3"})
    assert not page.run_kind("feed") and "Fix: give --n 0 or more" in tab.progress_text.text()
    tab.form.set_values({"--n": "many"})
    assert not page.run_kind("feed") and "invalid int value" in tab.progress_text.text()
    tab.form.set_values({"--n": "5", "--mode": "hang"})
    with qtbot.waitSignal(page.sig_progress, timeout=20000, check_params_cb=lambda kind, u: u["text"] == "reading"):
        assert page.run_kind("feed")
    assert not page.run_kind("sweep")  # one benchmark at a time
    with qtbot.waitSignal(page.sig_finished, timeout=20000) as finished:
        page.stop()
    assert finished.args[1]["status"] == "cancelled" and "Cancelled" in tab.progress_text.text()


def test_a_model_run_and_a_storage_benchmark_exclude_each_other(qtbot, workspace, fake_modules):
    page = make_page(qtbot, workspace)
    workspace.claim(RUN)
    assert not page.run_kind("feed") and "A run is measuring" in page.kind_tabs["feed"].progress_text.text()
    workspace.release(RUN)
    workspace.claim(STORAGE)
    with pytest.raises(Exception, match="storage benchmark is measuring"):
        workspace.claim(RUN)
    workspace.release(STORAGE)


def test_a_kind_missing_from_the_build_is_said_not_hidden(qtbot, workspace, monkeypatch):
    monkeypatch.setitem(storage_cmd.KIND_MODULES, "feed", "console.cli.storage_no_such_kind")
    page = make_page(qtbot, workspace)
    tab = page.kind_tabs["feed"]
    assert tab.form is None and not tab.run_button.isEnabled()
    assert not page.run_kind("feed")
