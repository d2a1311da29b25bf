"""While a run measures, the window works only for the run: no page is built, and a page not shown draws nothing
(issue 24: the console's own CPU while measuring). The System page holds the telemetry that comes while it is
hidden and something measures, and draws it when shown or when the measuring ends: nothing is lost."""

from __future__ import annotations

import threading
import time

import pytest
from PySide6 import QtCore

from console.ui import system_page
from console.ui.app import build_main_window
from console.ui.system_page import SystemPage

RUN_TIMEOUT_MS = 120_000


class FakeHub:
    """The TelemetryHub's face to a page; `send` is a batch from the hub's thread (here: the test's)."""

    def __init__(self):
        self.on_samples = None

    def recent(self):
        return []

    def subscribe(self, on_samples, on_sources=None):
        self.on_samples = on_samples
        return 1

    def unsubscribe(self, token):
        self.on_samples = None

    def send(self, values, start=0):
        self.on_samples([(int((start + i) * 1e8), "psutil", "cpu.util", float(v), "%", "measured")
                         for i, v in enumerate(values)])


def _cpu(page: SystemPage) -> list[float]:
    page.plots["util"].refresh()
    data = page.plots["util"].data("CPU total") if "CPU total" in page.plots["util"].series_names() else None
    return [] if data is None else data[1].tolist()


@pytest.fixture
def hidden_page(qtbot):
    state = {"measuring": None}
    hub = FakeHub()
    page = SystemPage(hub, measuring=lambda: state["measuring"])
    qtbot.addWidget(page)
    page._t0_ns = 0
    return page, hub, state


def test_a_hidden_system_page_holds_telemetry_while_a_run_measures_and_draws_it_after(qtbot, hidden_page):
    page, hub, state = hidden_page
    hub.send([1, 2])
    qtbot.waitUntil(lambda: _cpu(page) == [1, 2])  # nothing measures: drawn even while hidden
    state["measuring"] = "run"
    hub.send([3, 4], start=2)
    hub.send([5], start=4)
    QtCore.QCoreApplication.processEvents()
    assert page.held_rows() == 3 and _cpu(page) == [1, 2]  # held on the hub's side: no work for the GUI thread
    state["measuring"] = None
    hub.send([6], start=5)  # the first batch after the run brings what was held, in order
    qtbot.waitUntil(lambda: _cpu(page) == [1, 2, 3, 4, 5, 6])
    assert page.held_rows() == 0


def test_showing_the_system_page_while_a_run_measures_draws_what_it_held(qtbot, hidden_page):
    page, hub, state = hidden_page
    state["measuring"] = "run"
    hub.send([1, 2])
    assert page.held_rows() == 2
    page.show()
    qtbot.waitUntil(lambda: _cpu(page) == [1, 2])
    hub.send([3], start=2)  # shown: drawn live, measuring or not
    qtbot.waitUntil(lambda: _cpu(page) == [1, 2, 3])
    page.hide()
    hub.send([4], start=3)
    assert page.held_rows() == 1


def test_what_a_hidden_page_holds_is_bounded_to_the_newest_rows(qtbot, monkeypatch):
    monkeypatch.setattr(system_page, "HELD_ROWS", 3)
    state = {"measuring": "run"}
    hub = FakeHub()
    page = SystemPage(hub, measuring=lambda: state["measuring"])
    qtbot.addWidget(page)
    page._t0_ns = 0
    hub.send([1, 2, 3, 4, 5])  # a long run behind the Run page
    assert page.held_rows() == 3
    state["measuring"] = None
    hub.send([6], start=5)
    qtbot.waitUntil(lambda: _cpu(page) == [3, 4, 5, 6])


def test_while_a_run_measures_the_window_builds_no_page_and_the_hidden_system_page_draws_nothing(qtbot, tmp_path):
    win = build_main_window(tmp_path / "history.db", discover_targets=False)  # telemetry on, as in the app
    qtbot.addWidget(win)
    win.resize(1400, 860)
    win.show()
    win.show_page("system")  # seen once, then left behind the Run page
    win.show_page("run")
    system = win.pages["system"]
    seen: dict = {"phase": None, "start_ns": None, "end_ns": None, "built": None, "early": []}
    delivered: list[int] = []  # t_ns of every row the System page was handed, in order

    def on_rows(rows):
        delivered.extend(row[0] for row in rows)
        if seen["phase"] == "measuring":  # handed to the GUI thread while the run measures
            seen["early"].extend(row[0] for row in rows if row[0] >= seen["start_ns"])

    def on_event(event):
        if event.get("type") == "phase" and event.get("phase") == "measuring":
            seen.update(phase="measuring", start_ns=time.perf_counter_ns(), built=sorted(win.pages))
        elif seen["phase"] == "measuring" and event.get("type") in ("phase", "finished"):
            seen.update(phase="after", end_ns=time.perf_counter_ns(), built_after=sorted(win.pages))

    system._relay_samples.connect(on_rows, QtCore.Qt.ConnectionType.QueuedConnection)
    win.controller.sig_event.connect(on_event)
    win.run_page.form.set_values({"model": "mlp", "duration_s": 1.0, "batch": 1})
    with qtbot.waitSignal(win.controller.sig_finished, timeout=RUN_TIMEOUT_MS) as finished:
        win.start_run()
    assert finished.args[0]["status"] == "completed", finished.args[0]["message"]
    assert seen["start_ns"] is not None and seen["end_ns"] is not None
    assert seen["built_after"] == seen["built"] == ["run", "system"]  # no page built while measuring
    assert seen["early"] == []  # the hidden page drew none of the run's telemetry while it measured
    # Nothing lost: once the run is over the page draws the samples taken while it measured.
    qtbot.waitUntil(lambda: any(seen["start_ns"] <= t <= seen["end_ns"] for t in delivered), timeout=10_000)


class PageEvents(QtCore.QObject):
    """Counts, while `on`, the Qt events (paints, timers, queued calls) whose receiver belongs to one of the pages."""

    KINDS = ("Paint", "Timer", "MetaCall", "UpdateRequest", "LayoutRequest")

    def __init__(self, pages: dict):
        super().__init__()
        self._pages = {id(page): name for name, page in pages.items()}
        self.on = False
        self.counts: dict[tuple[str, str, str], int] = {}

    def eventFilter(self, obj, event):  # noqa: N802 — Qt's name
        if self.on:
            kind = getattr(event.type(), "name", "")
            if kind in self.KINDS:
                owner = obj
                while owner is not None and id(owner) not in self._pages:
                    owner = owner.parent()
                if owner is not None:
                    key = (self._pages[id(owner)], type(obj).__name__, kind)
                    self.counts[key] = self.counts.get(key, 0) + 1
        return False


def test_pages_opened_before_a_run_do_nothing_while_it_measures_behind_the_run_page(qtbot, tmp_path):
    win = build_main_window(tmp_path / "history.db", discover_targets=False)
    qtbot.addWidget(win)
    win.resize(1400, 860)
    win.show()
    for info in win.page_infos:  # every page built and seen once, as a user looking round before a run would
        win.show_page(info.name)
        QtCore.QCoreApplication.processEvents()
    # What showing them started (a topology discovery, the Scaling page's read) is over before the run.
    qtbot.waitUntil(lambda: not any(t.name == "background-call" for t in threading.enumerate()), timeout=60_000)
    qtbot.waitUntil(lambda: not win.pages["topology"].discovering and not win.pages["scaling"].busy, timeout=60_000)
    win.show_page("run")
    watch = PageEvents(win.pages)
    QtCore.QCoreApplication.instance().installEventFilter(watch)

    def on_event(event):
        if event.get("type") == "phase":
            watch.on = event.get("phase") == "measuring"
        elif event.get("type") == "finished":
            watch.on = False

    win.controller.sig_event.connect(on_event)
    win.run_page.form.set_values({"model": "mlp", "duration_s": 1.0, "batch": 1})
    try:
        with qtbot.waitSignal(win.controller.sig_finished, timeout=RUN_TIMEOUT_MS) as finished:
            win.start_run()
    finally:
        QtCore.QCoreApplication.instance().removeEventFilter(watch)
    assert finished.args[0]["status"] == "completed", finished.args[0]["message"]
    assert any(page == "run" for page, _, _ in watch.counts)  # the filter saw the run's own drawing
    hidden = {key: n for key, n in watch.counts.items() if key[0] != "run"}
    assert hidden == {}, f"hidden pages worked while the run measured: {hidden}"
