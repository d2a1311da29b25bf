"""The Run page is usable before its live plots exist: the form paints first, the plots (pyqtgraph) are built right
after on the event loop, and a run whose events come before them still shows in its plots."""

import os
import subprocess
import sys
from pathlib import Path

from PySide6 import QtWidgets

from console.ui.app import build_main_window
from console.ui.run_page import RunPage

ROOT = Path(__file__).resolve().parents[2]


def test_the_window_and_the_run_form_import_no_pyqtgraph():
    """In a fresh interpreter (this one has pyqtgraph already): the shell, the Run page and the paint budget
    import without pyqtgraph; the first plot name used brings it."""
    code = ("import sys\n"
            "import console.ui.app, console.ui.main_window, console.ui.run_page, console.ui.paint_budget\n"
            "print('pyqtgraph' in sys.modules)\n"
            "from widgets import live_plot\n"
            "live_plot.TimeSeriesPlot\n"
            "print('pyqtgraph' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120,
                         env=dict(os.environ, PYTHONPATH=str(ROOT), QT_QPA_PLATFORM="offscreen"))
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["False", "True"]


def test_the_form_is_usable_before_the_plots_and_the_plots_follow_its_first_paint(qtbot):
    page = RunPage()
    qtbot.addWidget(page)
    assert not page.plots_built  # nothing built them yet: the form alone
    page.form.set_values({"model": "mlp", "batch": 4})
    assert page.form.isEnabled() and page.form.values()["batch"] == 4
    page.resize(1200, 800)
    page.show()
    qtbot.waitUntil(lambda: page.plots_built, timeout=10_000)  # after its first paint, on the event loop
    assert page.plots.isVisibleTo(page)
    assert page.plots.parent() is page._right  # above the op profile, where they always were
    assert page._right.indexOf(page.plots) == 0


def test_a_run_whose_events_come_before_the_plots_still_shows_them(qtbot):
    page = RunPage()  # never shown: its plots are not built until a run needs them
    qtbot.addWidget(page)
    t0 = 1_000_000_000
    page.handle({"type": "started", "t0_ns": t0, "spec": {"model": "mlp"}})
    assert page.plots_built
    page.handle({"type": "phase", "phase": "measuring", "t_ns": t0 + 10_000_000})
    page.handle({"type": "latencies", "t_ns": [t0 + 20_000_000, t0 + 30_000_000], "latency_ns": [2e6, 3e6]})
    page.plots.refresh()
    assert page.plots.latency.data()[1].tolist() == [2.0, 3.0]
    assert "measuring" in page.plots.latency.band_labels()


def test_a_window_builds_its_run_plots_once_shown(qtbot, tmp_path):
    window = build_main_window(tmp_path / "history.db", telemetry_hz=None, discover_targets=False)
    qtbot.addWidget(window)
    page = window.run_page
    assert page.form.isEnabled() and not page.plots_built
    window.resize(1400, 860)
    window.show_page("run")
    window.show()
    qtbot.waitUntil(lambda: page.plots_built, timeout=10_000)
    assert isinstance(page.plots, QtWidgets.QWidget) and page.roofline.isHidden()
