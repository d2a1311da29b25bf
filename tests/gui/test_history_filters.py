"""The History page on a week of stored runs: filters, tags and notes, baselines, Compare and Re-run."""

import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from PySide6 import QtCore, QtWidgets

sys.path.insert(0, str(Path(__file__).resolve().parent))
import week_history  # noqa: E402

from console.history import HistoryStore  # noqa: E402
from console.ui import history_page  # noqa: E402
from console.ui.app import build_main_window  # noqa: E402
from console.ui.history_page import HistoryPage, store_filters  # noqa: E402
from widgets.history_table import BASELINE_MARK, COL_BASELINE, COL_NOTE, COL_TAGS  # noqa: E402

# A fixed week; the date tests work out each run's local day, so they hold in any time zone.
END = datetime(2026, 11, 30, 12, 0, tzinfo=timezone.utc)
LOAD_MS = 30_000


@pytest.fixture
def week(tmp_path):
    made = week_history.make_week(tmp_path / "history.db", end=END)
    made["path"] = tmp_path / "history.db"
    yield made
    made["store"].close()


@pytest.fixture
def page(qtbot, week):
    store = HistoryStore(week["path"])
    widget = HistoryPage(store)
    qtbot.addWidget(widget)
    widget.resize(1300, 800)
    widget.show()
    widget.reload()
    yield widget
    store.close()


@pytest.fixture
def window(qtbot, week):
    win = build_main_window(week["path"], discover_targets=False, telemetry_hz=None)
    qtbot.addWidget(win)
    win.resize(1400, 860)
    win.show()
    win.show_page("history")
    yield win


def shown_ids(page):
    return {page.table.run_id_at(row) for row in range(page.table.row_count())}


def local_day(iso: str) -> str:
    return datetime.fromisoformat(iso.replace("Z", "+00:00")).astimezone().date().isoformat()


def started(store, run_id):
    return store.get_run(run_id)["started_at"]


def test_each_filter_narrows_the_list_and_the_choices_come_from_the_history(page, week):
    everything = week["series"] + week["batch4"] + [week["invalid"], week["failed"]]
    assert shown_ids(page) == set(everything)
    assert page.filters.choices("model") == ["mlp"] and page.filters.choices("precision") == ["fp32"]
    assert page.filters.choices("tag") == ["batch-sweep", "nightly"]
    page.filters.set_values({"tag": "nightly"})
    assert shown_ids(page) == set(week["series"][::2])
    assert page.sections.tabText(0) == f"Runs (7 of {len(everything)})"
    page.filters.set_values({"valid": False})  # the invalid run and the failed one (never judged valid)
    assert shown_ids(page) == {week["invalid"], week["failed"]}
    page.filters.set_values({"valid": True, "engine": "torch", "target": "cpu"})
    assert shown_ids(page) == set(everything) - {week["invalid"], week["failed"]}
    page.filters.set_values({"model": "resnet50"})  # remembered from elsewhere: offered, and it shows nothing
    assert page.table.row_count() == 0 and "resnet50" in page.filters.choices("model")
    page.filters.clear()
    assert page.table.row_count() == len(everything) and page.sections.tabText(0) == "Runs"
    assert not page.filters.clear_button.isEnabled()


def test_a_date_range_keeps_both_local_days(page, week):
    store = week["store"]
    first_day = local_day(started(store, week["series"][4]))
    last_day = local_day(started(store, week["series"][7]))
    page.filters.set_values({"since": first_day, "until": last_day})
    expected = {run_id for run_id in week["series"] + week["batch4"] + [week["invalid"], week["failed"]]
                if first_day <= local_day(started(store, run_id)) <= last_day}
    assert shown_ids(page) == expected and len(expected) >= 4
    query = store_filters(page.filters.values())
    assert query["since"] < query["until"]  # UTC text bounds: the store compares them with started_at
    one_day = {"since": first_day, "until": first_day}
    page.filters.set_values(one_day)
    assert shown_ids(page) == {r for r in expected if local_day(started(store, r)) == first_day}


def test_filters_are_remembered_between_sessions(qtbot, page, week):
    page.filters.set_values({"tag": "batch-sweep", "valid": True, "since": "2026-11-20"})
    reader = HistoryStore(week["path"], read_only=True)
    again = HistoryPage(reader)
    qtbot.addWidget(again)
    again.reload()
    reader.close()
    assert again.filters.values()["tag"] == "batch-sweep" and again.filters.values()["valid"] is True
    assert again.filters.values()["since"] == "2026-11-20"
    assert shown_ids(again) == set(week["batch4"])


def open_editor(page) -> QtWidgets.QLineEdit:
    """The in-place editor the table view just opened (offscreen, no widget has the keyboard focus)."""
    editors = [e for e in page.table.view.viewport().findChildren(QtWidgets.QLineEdit) if e.isVisible()]
    assert len(editors) == 1
    return editors[0]


def test_tags_and_note_are_edited_in_place_and_stored(qtbot, page, week):
    run_id = week["series"][3]
    assert page.table.edit_cell(run_id, COL_TAGS)
    editor = open_editor(page)
    assert editor.text() == ""  # an odd-numbered run of the week has no tag yet
    editor.setText("driver-555,  nightly , driver-555")
    qtbot.keyClick(editor, QtCore.Qt.Key.Key_Return)  # the delegate commits on the next turn of the event loop
    qtbot.waitUntil(lambda: week["store"].get_run(run_id)["tags"] == ["driver-555", "nightly"], timeout=2000)
    qtbot.waitUntil(lambda: not editor.isVisible(), timeout=2000)
    assert page.table.edit_cell(run_id, COL_NOTE)
    editor = open_editor(page)
    editor.setText("after the BIOS update")
    qtbot.keyClick(editor, QtCore.Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: week["store"].get_run(run_id)["note"] == "after the BIOS update", timeout=2000)
    page.table.set_filter_text("bios")  # the search box finds notes and tags too
    assert shown_ids(page) == {run_id}
    page.reload()
    assert page.table.cell_text(0, COL_TAGS) == "driver-555, nightly"
    assert "driver-555" in page.filters.choices("tag")


def test_the_tags_dialog_writes_both(qtbot, page, week, monkeypatch):
    run_id = week["batch4"][0]

    class Accepting(history_page.TagsNoteDialog):
        def exec(self):
            assert self.tags() == ["batch-sweep"]
            self.tags_edit.setText("batch-sweep, keep")
            self.note_edit.setPlainText("reference for the batch study")
            return QtWidgets.QDialog.DialogCode.Accepted

    monkeypatch.setattr(history_page, "TagsNoteDialog", Accepting)
    page.table.select_run_ids([run_id])
    page.table.view.setFocus()
    qtbot.keyClick(page.table.view, QtCore.Qt.Key.Key_T, QtCore.Qt.KeyboardModifier.ControlModifier)
    stored = week["store"].get_run(run_id)
    assert stored["tags"] == ["batch-sweep", "keep"] and stored["note"] == "reference for the batch study"


def test_set_as_baseline_marks_the_run_and_refuses_an_invalid_or_failed_one(qtbot, page, week):
    good = week["series"][2]
    page.table.select_run_ids([good])
    page.table.view.setFocus()
    qtbot.keyClick(page.table.view, QtCore.Qt.Key.Key_B, QtCore.Qt.KeyboardModifier.ControlModifier)
    fingerprint = week["store"].get_run(good)["fingerprint"]
    assert week["store"].baseline_of(fingerprint)["run_id"] == good
    row = next(r for r in range(page.table.row_count()) if page.table.run_id_at(r) == good)
    assert page.table.cell_text(row, COL_BASELINE) == BASELINE_MARK
    assert "baseline" in page.message.text()
    for refused, why in ((week["invalid"], "not a valid measurement"), (week["failed"], "is failed")):
        page.table.select_run_ids([refused])
        assert page.set_baseline_selected() is False
        boxes = [b for b in page.findChildren(QtWidgets.QMessageBox, "history_refusal") if b.isVisible()]
        assert len(boxes) == 1 and why in boxes[0].text() and "Fix:" in boxes[0].text()
        boxes[0].close()
    assert week["store"].baseline_of(fingerprint)["run_id"] == good  # refusals changed nothing


def test_actions_follow_the_selection(page, week):
    page.table.select_run_ids([])
    enabled = {key: action.isEnabled() for key, action in page.actions_.items()}
    assert enabled == {"compare": False, "baseline": False, "rerun": False, "tags": False, "report": False}
    page.table.select_run_ids(week["series"][:1])
    enabled = {key: action.isEnabled() for key, action in page.actions_.items()}
    assert enabled == {"compare": False, "baseline": True, "rerun": True, "tags": True, "report": True}
    page.table.select_run_ids(week["series"][:3])
    enabled = {key: action.isEnabled() for key, action in page.actions_.items()}
    assert enabled == {"compare": True, "baseline": False, "rerun": False, "tags": False, "report": True}
    assert page.actions_["compare"].shortcut().toString() == "Ctrl+Shift+C"
    assert page.actions_["report"].shortcut().toString() == "Ctrl+Shift+P"


def test_compare_shortcut_opens_the_compare_page_with_the_selection(qtbot, window, week):
    page = window.history_page
    chosen = week["series"][-3:]
    page.table.select_run_ids(chosen)
    page.table.view.setFocus()
    compare = window.page("compare")
    with qtbot.waitSignal(compare.sig_loaded, timeout=LOAD_MS) as loaded:
        qtbot.keyClick(page.table.view, QtCore.Qt.Key.Key_C,
                       QtCore.Qt.KeyboardModifier.ControlModifier | QtCore.Qt.KeyboardModifier.ShiftModifier)
    assert window.tabs.currentWidget() is compare
    assert set(loaded.args[0]) == set(chosen)  # in the table's order, newest first


def test_rerun_starts_the_stored_spec_through_the_window_and_is_refused_while_measuring(qtbot, window, week,
                                                                                        monkeypatch):
    page = window.history_page
    run_id = week["series"][0]
    started_specs = []
    monkeypatch.setattr(window.controller, "start",
                        lambda spec, remote=None: started_specs.append(spec) or "f" * 32)
    window.workspace.claim("sweep")  # a sweep is measuring: Re-run must not start anything
    page.table.select_run_ids([run_id])
    page.table.view.setFocus()
    qtbot.keyClick(page.table.view, QtCore.Qt.Key.Key_E, QtCore.Qt.KeyboardModifier.ControlModifier)
    assert started_specs == []
    dialog = window.findChild(QtWidgets.QMessageBox, "error_dialog")
    assert dialog is not None and "sweep" in dialog.text().lower()
    dialog.close()
    window.workspace.release("sweep")
    assert page.rerun_selected() is True
    assert len(started_specs) == 1
    assert started_specs[0].to_dict() == week["store"].get_run(run_id)["spec"]
    assert window.tabs.currentWidget() is window.run_page


def test_store_filters_turn_local_days_into_utc_bounds():
    query = store_filters({"model": "mlp", "engine": None, "since": "2026-11-02", "until": "2026-11-02",
                           "valid": False})
    since = datetime.fromisoformat(query["since"]).replace(tzinfo=timezone.utc)
    until = datetime.fromisoformat(query["until"]).replace(tzinfo=timezone.utc)
    assert until - since == timedelta(days=1) or abs((until - since) - timedelta(days=1)) <= timedelta(hours=1)
    assert since.astimezone().date().isoformat() == "2026-11-02" and since.astimezone().hour == 0
    assert query["model"] == "mlp" and query["valid"] is False and "engine" not in query
