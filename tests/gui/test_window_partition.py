"""The window's runs keep the console off the worker's cores: the record carries both sets, the summary card shows
them with the console's CPU while measuring, and the window has all its cores back afterwards."""

import os

import pytest

pytest.importorskip("pytestqt")
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from PySide6 import QtCore  # noqa: E402

from console.run import partition  # noqa: E402
from console.ui.app import build_main_window  # noqa: E402
from engines import cores  # noqa: E402

pytestmark = pytest.mark.skipif(cores.available() is not None or len(cores.physical_cores(cores.allowed(0))) < 2,
                                reason="needs Linux affinity and at least 2 physical cores")


def test_a_window_run_is_partitioned_and_the_card_says_so(qtbot, tmp_path, monkeypatch):
    monkeypatch.delenv(partition.ENV, raising=False)
    before = sorted(os.sched_getaffinity(0))
    win = build_main_window(tmp_path / "history.db", discover_targets=False)
    qtbot.addWidget(win)
    win.show()
    plan = win.workspace.partition
    win.run_page.form.set_values({"model": "mlp", "duration_s": 0.8, "warmup_s": 0.1, "batch": 1})
    with qtbot.waitSignal(win.controller.sig_finished, timeout=120_000) as finished:
        qtbot.mouseClick(win.run_page.form.run_button, QtCore.Qt.MouseButton.LeftButton)
    record = finished.args[0]
    assert record["status"] == "completed", record["message"]
    stored = record["environment"]["partition"]
    assert stored["confined"] and stored["worker_actual"] == list(plan.worker)
    assert stored["console_cpus"] == list(plan.console)
    assert stored["applied"] == {"console": "applied", "sampler": "applied", "worker": "applied"}
    figure = record["summary"]["console_cpu"]
    assert figure["percent_of_core"] is not None
    text = win.run_page.summary.cores_text()
    assert text.startswith(f"Cores: worker CPUs {stored['worker']}, console CPUs {stored['console']}")
    assert f"the console used {figure['percent_of_core']:.1f}% of a core while measuring" in text
    assert sorted(os.sched_getaffinity(0)) == before
