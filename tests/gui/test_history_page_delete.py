"""The History page's Delete: the Delete key, the context menu and a button; it asks first (naming how many runs),
then the deleted rows leave the list and the others stay."""

import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from PySide6 import QtCore, QtWidgets

sys.path.insert(0, str(Path(__file__).resolve().parent))
import week_history  # noqa: E402

from console.history import HistoryStore, open_reader  # noqa: E402
from console.ui import history_page  # noqa: E402
from console.ui.history_page import HistoryPage  # noqa: E402

START = datetime(2026, 11, 20, 9, 0, tzinfo=timezone.utc)


@pytest.fixture
def history(tmp_path):
    path = tmp_path / "history.db"
    rng = np.random.default_rng(3)
    with HistoryStore(path) as store:
        ids = [week_history.store_run(store, week_history.spec(), START + timedelta(hours=i), 1.0, rng)
               for i in range(4)]
    return path, ids


@pytest.fixture
def page(qtbot, history):
    store = HistoryStore(history[0])
    widget = HistoryPage(store)
    qtbot.addWidget(widget)
    widget.resize(1200, 700)
    widget.show()
    widget.reload()
    yield widget
    store.close()


@pytest.fixture
def asked(monkeypatch):
    """The confirmation, answered `asked.answer` (yes unless a test says no); `asked.counts`: how many runs each
    question named."""
    answers = SimpleNamespace(counts=[], answer=True)

    def confirm(_parent, count):
        answers.counts.append(count)
        return answers.answer

    monkeypatch.setattr(history_page, "confirm_delete", confirm)
    return answers


def shown_ids(page):
    return {page.table.run_id_at(row) for row in range(page.table.row_count())}


def stored_ids(path):
    with open_reader(path) as reader:
        return {run["run_id"] for run in reader.list_runs(include_damaged=True)}


def test_delete_asks_with_the_count_then_the_rows_go_and_the_others_stay(page, history, asked):
    path, ids = history
    page.table.select_run_ids(ids[:2])
    assert page.delete_action.isEnabled()
    assert sorted(page.delete_selected()) == sorted(ids[:2])
    assert asked.counts == [2]
    assert shown_ids(page) == set(ids[2:])
    assert stored_ids(path) == set(ids[2:])
    assert "Deleted 2 runs" in page.message.text()


def test_declining_deletes_nothing(page, history, asked):
    path, ids = history
    asked.answer = False
    page.table.select_run_ids(ids[:1])
    assert page.delete_selected() == []
    assert asked.counts == [1]
    assert shown_ids(page) == set(ids) and stored_ids(path) == set(ids)


def test_the_delete_key_deletes_the_selection_and_the_opened_run_is_let_go(qtbot, page, history, asked):
    path, ids = history
    page.open_run(ids[3])
    assert page.opened_run_id == ids[3]
    page.table.select_run_ids([ids[3]])
    page.table.view.setFocus()
    with qtbot.waitSignal(page.sig_runs_deleted) as deleted:
        qtbot.keyClick(page.table.view, QtCore.Qt.Key.Key_Delete)
    assert deleted.args == [[ids[3]]]
    assert asked.counts == [1]
    assert shown_ids(page) == set(ids[:3]) and stored_ids(path) == set(ids[:3])
    assert page.opened_run_id is None


def test_delete_is_in_the_context_menu_and_a_button_and_follows_the_selection(page, history):
    _, ids = history
    assert page.delete_action in page.table.view.actions()
    assert page.table.view.contextMenuPolicy() == QtCore.Qt.ContextMenuPolicy.ActionsContextMenu
    button = page.findChild(QtWidgets.QToolButton, "history_delete")
    assert button is not None and button.defaultAction() is page.delete_action
    assert page.delete_action.shortcut().toString() == "Del"
    page.table.select_run_ids([])
    assert not page.delete_action.isEnabled()
    page.table.select_run_ids(ids)
    assert page.delete_action.isEnabled()


def test_a_run_a_console_is_recording_is_refused_and_nothing_is_deleted(qtbot, page, history, asked):
    path, ids = history
    recorder = HistoryStore(path)  # another console, recording a run now
    try:
        live = recorder.create_run(week_history.spec())
        page.reload()
        page.table.select_run_ids([ids[0], live])
        assert page.delete_selected() == []
        boxes = [b for b in page.findChildren(QtWidgets.QMessageBox, "history_refusal") if b.isVisible()]
        assert len(boxes) == 1 and "still running" in boxes[0].text()
        boxes[0].close()
        assert shown_ids(page) == {*ids, live} and stored_ids(path) == {*ids, live}
    finally:
        recorder.close()


def test_delete_waits_while_something_measures_and_deletes_nothing(qtbot, history, asked):
    path, ids = history
    store = HistoryStore(path)
    widget = HistoryPage(store, measuring=lambda: "run")
    qtbot.addWidget(widget)
    widget.show()
    widget.reload()
    try:
        widget.table.select_run_ids(ids[:1])
        assert widget.delete_selected() == []
        assert asked.counts == []  # refused before asking
        boxes = [b for b in widget.findChildren(QtWidgets.QMessageBox, "history_refusal") if b.isVisible()]
        assert len(boxes) == 1 and "A run is measuring" in boxes[0].text()
        boxes[0].close()
        assert stored_ids(path) == set(ids)
    finally:
        store.close()
