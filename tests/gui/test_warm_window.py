"""The app's window keeps a warm worker: the first run after start-up and every run after a run take the spare
the pool made (the run records `worker_start`), and closing the window lets the spare go."""

import time

from PySide6 import QtCore

from console.ui.app import build_main_window

RUN_TIMEOUT_MS = 120_000


def _run(qtbot, win):
    win.run_page.form.set_values({"model": "mlp", "duration_s": 0.3, "batch": 1, "engine": "torch"})
    with qtbot.waitSignal(win.controller.sig_finished, timeout=RUN_TIMEOUT_MS) as finished:
        qtbot.mouseClick(win.run_page.form.run_button, QtCore.Qt.MouseButton.LeftButton)
    return finished.args[0]


def _wait_warm(qtbot, pool):
    qtbot.waitUntil(lambda: pool.states().get("torch") == "warm", timeout=RUN_TIMEOUT_MS)


def test_runs_in_the_window_take_warm_workers_and_closing_lets_them_go(qtbot, tmp_path):
    win = build_main_window(tmp_path / "history.db", discover_targets=False, warm_workers=True)
    qtbot.addWidget(win)
    win.show()
    pool = win.workspace.pool
    assert pool is not None
    _wait_warm(qtbot, pool)  # made a moment after start-up, for the engine the form shows
    first = _run(qtbot, win)
    assert first["status"] == "completed" and first["environment"]["worker_start"] == "warm"
    _wait_warm(qtbot, pool)  # the next spare, made when that run ended
    second = _run(qtbot, win)
    assert second["status"] == "completed" and second["environment"]["worker_start"] == "warm"
    spare = pool._spares["torch"] if "torch" in pool._spares else None
    win.close()
    assert pool._closed and pool.states() == {}
    if spare is not None:
        deadline = time.monotonic() + 10
        while spare.process.is_alive() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not spare.process.is_alive()


def test_tests_and_the_self_test_start_workers_cold(qtbot, tmp_path):
    win = build_main_window(tmp_path / "history.db", discover_targets=False)
    qtbot.addWidget(win)
    assert win.workspace.pool is None
    record = _run(qtbot, win)
    assert record["environment"]["worker_start"] == "cold"
