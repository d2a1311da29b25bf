"""The window measures until stable by default, remembers the choice, and judges by the lab's rules file."""

import pytest
from PySide6 import QtCore, QtWidgets

from console.ui.app import build_main_window

PATH = "scenario_options.until_stable"
RUN_TIMEOUT_MS = 120_000


@pytest.fixture
def window(qtbot, tmp_path):
    win = build_main_window(tmp_path / "history.db", discover_targets=False)
    qtbot.addWidget(win)
    win.show()
    yield win
    if win.controller is not None and win.controller.busy:
        win.controller.stop()
        win.controller.wait(15)


def _run(qtbot, win, **values):
    win.run_page.form.set_values({"model": "mlp", "batch": 1, **values})
    with qtbot.waitSignal(win.controller.sig_finished, timeout=RUN_TIMEOUT_MS) as finished:
        qtbot.mouseClick(win.run_page.form.run_button, QtCore.Qt.MouseButton.LeftButton)
    return finished.args[0]


def test_the_form_measures_until_stable_by_default_and_not_for_server(window):
    form = window.run_page.form
    assert form.values()[PATH] is True
    assert form.scenario_section.editor(PATH).isChecked()
    form.set_values({"scenario": "server"})
    assert PATH not in form.values()  # a server run is judged on its latency bound
    form.set_values({"scenario": "single-stream"})
    assert form.values()[PATH] is True


def test_the_choice_is_remembered_between_launches(qtbot, tmp_path):
    first = build_main_window(tmp_path / "h.db", discover_targets=False)
    qtbot.addWidget(first)
    first.run_page.form.set_values({PATH: False, "scenario_options.max_duration_s": None})
    first.close()
    second = build_main_window(tmp_path / "h.db", discover_targets=False)
    qtbot.addWidget(second)
    assert second.run_page.form.values()[PATH] is False


def test_a_run_from_the_window_stores_its_windows_and_the_rules_it_was_judged_by(qtbot, window):
    record = _run(qtbot, window, duration_s=0.5)
    assert record["status"] == "completed", record["message"]
    block = record["summary"]["until_stable"]
    assert block["windows"] >= 10 and block["window_s"] == pytest.approx(0.05)
    assert block["ended"] in ("stable", "cap") and block["text"]
    assert record["summary"]["validity"]["rules"]["stability_tolerance"] == 0.1
    assert record["environment"]["validity_rules"]["sources"]["windows"] == "default"
    assert record["spec"]["scenario_options"]["until_stable"] is True
    assert record["spec"]["scenario_options"]["windows_per_duration"] == 10


def test_iterations_in_the_form_run_exactly_that_many(qtbot, window):
    record = _run(qtbot, window, iterations=40)
    assert record["status"] == "completed", record["message"]
    assert record["summary"]["iterations"] == 40 and record["summary"]["until_stable"] is None


def test_a_broken_lab_rules_file_is_a_dialog_and_no_run(window, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    lab = tmp_path / "data" / "labconsole" / "rules.toml"
    lab.parent.mkdir(parents=True)
    lab.write_text("stability_tolerance = 'ten percent'\n")
    assert window.start_run({**window.run_page.form.values(), "model": "mlp"}) is None
    dialog = window.findChild(QtWidgets.QMessageBox, "error_dialog")
    assert dialog is not None and dialog.windowTitle() == "Validity rules"
    assert "stability_tolerance" in dialog.text() and "from 0 to 10" in dialog.text()
    assert not window.controller.busy


def test_the_progress_says_it_is_measuring_until_stable(window):
    page = window.run_page
    page.handle({"type": "phase", "phase": "measuring", "t_ns": 0})
    page.handle({"type": "progress", "phase": "measuring", "fraction": 0.95, "iterations": 900, "elapsed_s": 5.5,
                 "stabilising": {"windows": 11, "spread": 0.14, "cap_s": 20.0}})
    assert page.progress.text() == "Measuring — until stable: 11 windows, spread 14%, at most 20 s"


FLOOR = {"spread": 0.12, "window_s": 0.25, "quick": True, "measured_epoch_s": 0.0,
         "source": "quick measurement before the run"}


def test_with_no_stored_floor_the_window_measures_one_off_the_gui_thread_then_aims_for_it(qtbot, window,
                                                                                          monkeypatch):
    import threading

    import console.machine.noise

    asked = []

    def fake_floor(target, db, **_):
        asked.append((target, threading.current_thread() is threading.main_thread()))
        return dict(FLOOR)

    def no_draw_after():  # a run this floor made INVALID would take a draw after it: not what this test is about
        raise RuntimeError("no draw after the run in this test")

    monkeypatch.setattr(console.machine.noise, "noise_floor_for", fake_floor)
    monkeypatch.setattr(console.machine.noise, "measure_quick", no_draw_after)
    record = _run(qtbot, window, duration_s=0.5)
    assert record["status"] == "completed", record["message"]
    assert asked == [("cpu", False)]  # measured once, never on the GUI thread
    assert record["spec"]["scenario_options"]["stability_allowance"] == pytest.approx(0.24)  # max(10%, 2 × 12%)
    stability = record["summary"]["validity"]["stability"]
    assert stability["noise"] == pytest.approx(0.12) and stability["allowance"] == pytest.approx(0.24)
    assert record["summary"]["until_stable"]["allowance"] == pytest.approx(0.24)


def test_stop_while_the_floor_is_measured_starts_no_run(qtbot, window, monkeypatch):
    import threading

    import console.machine.noise

    release = threading.Event()
    monkeypatch.setattr(console.machine.noise, "noise_floor_for", lambda *a, **k: (release.wait(10), dict(FLOOR))[1])
    controller = window.controller
    run_id = window.start_run({**window.run_page.form.values(), "model": "mlp", "duration_s": 0.5})
    assert run_id and controller.preparing and controller.busy
    controller.stop()
    assert not controller.preparing and not controller.busy and window.workspace.measuring is None
    release.set()
    qtbot.wait(200)  # the measurement's late answer starts nothing
    assert not controller.busy and window.store.get_run(run_id) is None
