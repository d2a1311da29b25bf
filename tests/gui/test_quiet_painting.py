"""While a run measures the window paints less (widgets.live_plot.set_quiet, driven by console.ui.paint_budget),
and catches up when the measuring phase ends.

Everything here counts redraws (refresh calls, the curves' setData calls) against ticks of the plots' one timer,
driven by hand: no test depends on how fast this machine is.
"""

from __future__ import annotations

import numpy as np
import pytest
from PySide6 import QtCore, QtWidgets

from console.ui.paint_budget import PaintBudget
from console.ui.run_page import RunPage
from console.ui.settings import Settings
from widgets import live_plot
from widgets.live_plot import LatencyPlot, PaintRates, TimeSeriesPlot

SIMULATED_S = 10
MESSAGE_MS = 100  # the session delivers latencies and samples about ten times a second


@pytest.fixture
def clock(qapp):
    """The plots' timer, stopped so the test ticks it by hand; full-speed painting again afterwards."""
    hub = live_plot.paint_clock()
    hub._timer.stop()
    yield hub
    live_plot.set_quiet(None)
    hub._timer.start()


@pytest.fixture
def set_data_calls(monkeypatch):
    """Every setData a live plot's curve gets: (curve, number of points)."""
    calls: list[tuple[object, int]] = []
    original = live_plot.FedCurve.setData

    def counting(self, *args, **kwargs):
        calls.append((self, len(args[0]) if args else 0))
        return original(self, *args, **kwargs)

    monkeypatch.setattr(live_plot.FedCurve, "setData", counting)
    return calls


def _shown(qtbot, widget: QtWidgets.QWidget, size=(1400, 400)) -> QtWidgets.QWidget:
    qtbot.addWidget(widget)
    widget.resize(*size)
    widget.show()
    qtbot.waitExposed(widget)
    return widget


def _simulate(clock, latency: LatencyPlot, telemetry: TimeSeriesPlot, seconds: float, t_start: float = 0.0) -> None:
    """`seconds` of a run: a batch of latencies and a CPU sample every MESSAGE_MS, the timer ticking at its
    interval (whatever the painting mode makes it)."""
    now_ms, next_tick = 0, clock.interval_ms()
    rng = np.random.default_rng(7)
    while now_ms < seconds * 1000:
        now_ms += MESSAGE_MS
        t = t_start + (now_ms - MESSAGE_MS + np.arange(100)) / 1000.0
        latency.add_latencies(t, 1.0 + rng.random(100))
        telemetry.add_points("total", [t_start + now_ms / 1000.0], [50.0])
        telemetry.add_points("cpu0", [t_start + now_ms / 1000.0], [40.0])
        while next_tick <= now_ms:
            clock._tick()
            next_tick += clock.interval_ms()


def test_quiet_painting_redraws_the_trace_at_its_low_rate_and_telemetry_slower(qtbot, clock):
    latency = _shown(qtbot, LatencyPlot())
    telemetry = _shown(qtbot, TimeSeriesPlot("Utilization", "utilization", "%"))
    _simulate(clock, latency, telemetry, SIMULATED_S)
    full = (latency.frames, telemetry.frames)
    assert full[0] >= SIMULATED_S * 1000 // live_plot.REFRESH_INTERVAL_MS  # 10 Hz while nothing measures

    rates = PaintRates(latency_ms=500, telemetry_ms=1000)
    live_plot.set_quiet(rates)
    assert clock.interval_ms() == 500
    before = (latency.frames, telemetry.frames)
    _simulate(clock, latency, telemetry, SIMULATED_S, t_start=SIMULATED_S)
    quiet = (latency.frames - before[0], telemetry.frames - before[1])
    assert quiet[0] == SIMULATED_S * 2  # 2 Hz: a fifth of the full-speed frames
    assert quiet[1] == SIMULATED_S * 1  # 1 Hz, not pulled along by the latency plot's moving axis
    assert quiet[0] * 5 <= full[0]


def test_quiet_painting_hands_the_curves_coarser_decimation_and_the_catch_up_full_detail(
        qtbot, clock, set_data_calls):
    latency = _shown(qtbot, LatencyPlot())
    t = np.linspace(0.0, 600.0, 200_000)
    latency.add_latencies(t, 1.0 + np.sin(t * 37.0) ** 2)
    live_plot.set_quiet(PaintRates(block_px=4))
    set_data_calls.clear()
    clock._tick()
    quiet_points = max(n for curve, n in set_data_calls if curve is latency._curve)
    set_data_calls.clear()
    live_plot.set_quiet(None)  # the measuring phase ended: a full redraw now, without waiting for a tick
    full_points = max(n for curve, n in set_data_calls if curve is latency._curve)
    assert full_points >= 3 * quiet_points
    assert not latency._dirty


def test_a_plot_not_on_screen_is_not_redrawn_while_quiet_and_catches_up_when_shown(qtbot, clock, set_data_calls):
    tabs = QtWidgets.QTabWidget()
    latency = LatencyPlot()
    tabs.addTab(QtWidgets.QLabel("another page"), "other")
    tabs.addTab(latency, "run")
    _shown(qtbot, tabs)
    live_plot.set_quiet(PaintRates())
    set_data_calls.clear()
    frames = latency.frames
    for second in range(5):
        latency.add_latencies(np.arange(100) / 100 + second, np.ones(100))
        clock._tick()
        clock._tick()
    live_plot.set_quiet(None)
    assert latency.frames == frames and not set_data_calls  # hidden all along: never drawn
    tabs.setCurrentWidget(latency)
    assert latency.frames == frames + 1  # drawn once, when shown
    assert latency.data()[0].size == 500


def _event_run(page: RunPage, budget: PaintBudget, clock, measuring_s: float) -> dict[str, int]:
    """A run's events as the RunController delivers them (pages first, then the budget); returns the latency
    plot's frames per phase."""
    def deliver(event):
        page.handle(event)
        budget.handle(event)

    deliver({"type": "started", "t0_ns": 0, "spec": {"model": "mlp"}})
    counts: dict[str, int] = {}
    t_ns = 0
    for phase, seconds in (("warmup", 1.0), ("measuring", measuring_s)):
        deliver({"type": "phase", "phase": phase, "t_ns": t_ns})
        frames = page.plots.latency.frames
        now_ms, next_tick = 0, clock.interval_ms()
        while now_ms < seconds * 1000:
            now_ms += MESSAGE_MS
            times = t_ns + np.arange(100, dtype=np.int64) * 1_000_000
            deliver({"type": "latencies", "t_ns": times, "latency_ns": np.full(100, 900_000)})
            deliver({"type": "progress", "phase": phase, "fraction": now_ms / (seconds * 1000),
                     "iterations": 0, "elapsed_s": now_ms / 1000})
            t_ns += 100_000_000
            while next_tick <= now_ms:
                clock._tick()
                next_tick += clock.interval_ms()
        counts[phase] = page.plots.latency.frames - frames
    frames = page.plots.latency.frames
    deliver({"type": "phase", "phase": "finishing", "t_ns": t_ns})
    counts["catch-up"] = page.plots.latency.frames - frames
    return counts


def test_the_run_page_paints_less_in_the_measuring_phase_and_catches_up_when_it_ends(qtbot, clock):
    page = _shown(qtbot, RunPage(), size=(1600, 900))
    budget = PaintBudget(PaintRates(latency_ms=500, telemetry_ms=1000), sampler_hz=10.0)
    counts = _event_run(page, budget, clock, measuring_s=4.0)
    assert budget.quiet_phases == 1 and not budget.quiet
    assert counts["warmup"] == 10  # 10 Hz before measuring
    assert counts["measuring"] == 8  # 2 Hz for 4 s
    assert counts["catch-up"] >= 1  # redrawn at once when the phase ended
    drawn_until = page.plots.latency._curve.getData()[0][-1]
    assert drawn_until == pytest.approx(page.plots.latency.data()[0][-1])  # every point up to the last on screen


def test_the_progress_bar_moves_with_the_quiet_frames_not_with_each_event(qtbot, clock):
    page = _shown(qtbot, RunPage(), size=(1600, 900))
    budget = PaintBudget(PaintRates(), sampler_hz=10.0)
    for event in ({"type": "started", "t0_ns": 0, "spec": {"model": "mlp"}},
                  {"type": "phase", "phase": "measuring", "t_ns": 1}):
        page.handle(event)
        budget.handle(event)
    bar = page.progress._bar
    page.handle({"type": "progress", "phase": "measuring", "fraction": 0.25, "iterations": 1, "elapsed_s": 1})
    assert bar.value() == 0  # held until the next frame
    clock._tick()
    assert bar.value() == round(0.25 * bar.maximum())
    budget.handle({"type": "phase", "phase": "finishing", "t_ns": 2})
    page.handle({"type": "progress", "phase": "finishing", "fraction": 0.5, "iterations": 1, "elapsed_s": 1})
    assert bar.value() == round(0.5 * bar.maximum())  # full speed again: at once


def test_a_failed_or_cancelled_run_ends_quiet_painting(clock):
    budget = PaintBudget()
    budget.handle({"type": "phase", "phase": "measuring", "t_ns": 1})
    assert budget.quiet
    budget.handle({"type": "finished", "status": "cancelled"})
    assert not budget.quiet
    assert clock.interval_ms() == live_plot.REFRESH_INTERVAL_MS


def test_the_demo_window_ticks_at_the_quiet_rate_while_a_run_measures(qtbot, clock):
    from console.ui.demo.window import TICK_MS, DemoWindow

    class Controller(QtCore.QObject):
        sig_event = QtCore.Signal(object)
        busy, session = False, None

    demo = DemoWindow(Controller())
    qtbot.addWidget(demo)
    demo.start()
    ticks = []
    demo.single.tick = lambda: ticks.append(1)
    demo.stack.setCurrentWidget(demo.single)
    assert demo._timer.interval() == TICK_MS
    live_plot.set_quiet(PaintRates(latency_ms=1000))
    assert demo._timer.interval() == 1000
    live_plot.set_quiet(None)
    assert demo._timer.interval() == TICK_MS and ticks  # and it caught up at once
    demo.close()


def test_telemetry_never_paints_faster_than_the_sampler_delivers():
    assert PaintRates(telemetry_ms=1000).for_sampler(0.5).telemetry_ms == 2000
    assert PaintRates(telemetry_ms=1000).for_sampler(10.0).telemetry_ms == 1000
    assert PaintRates().for_sampler(None) == PaintRates()


@pytest.mark.parametrize("kwargs, words", [({"latency_ms": 10}, "latency_ms=10"), ({"block_px": 0}, "block_px=0"),
                                            ({"telemetry_ms": 99.5}, "telemetry_ms=99.5")])
def test_bad_rates_are_refused_naming_the_field(kwargs, words):
    with pytest.raises(ValueError, match=words):
        PaintRates(**kwargs)


def test_the_rates_are_settings_with_defaults_and_bad_values_fall_back():
    settings = Settings()
    assert settings.paint_rates() == PaintRates()
    settings.save_paint_rates(latency_hz=4, telemetry_hz=0.5, block_px=2)
    assert Settings().paint_rates() == PaintRates(latency_ms=250, telemetry_ms=2000, block_px=2)
    settings._qs.setValue("paint/latency_hz", "fast")
    settings._qs.setValue("paint/telemetry_hz", 1000)
    settings._qs.setValue("paint/block_px", -3)
    assert Settings().paint_rates() == PaintRates()


def test_the_time_axis_steps_with_the_span_on_screen_not_with_the_latencies_alone(qtbot, clock):
    """Latencies start with the measuring phase, after a long load; the axis shows the load's band too, so it
    moves in steps of what is on screen, not of the few seconds of latencies (every frame)."""
    latency = _shown(qtbot, LatencyPlot())
    latency.add_band(0.0, 30.0, "loading")
    latency.add_band(30.0, None, "measuring")
    latency.add_latencies([30.0], [1.0])
    latency.refresh()
    moved = []
    latency.plot_item.getViewBox().sigXRangeChanged.connect(lambda *_: moved.append(1))
    frames = 60
    for frame in range(frames):  # 6 s of latencies, a frame every 100 ms
        latency.add_latencies(30.0 + frame / 10 + np.arange(1, 11) / 100, np.ones(10))
        latency.refresh()
    assert len(moved) < frames / 2  # (60 when the step followed the latencies alone)
    x0, x1 = latency.plot_item.getViewBox().viewRange()[0]
    assert x0 <= 0.0 and x1 >= 30.0 + frames / 10  # the loading band, before any latency, stays in view


def test_while_quiet_the_axis_moves_in_coarser_steps(qtbot, clock):
    counts = {}
    for quiet in (False, True):
        live_plot.set_quiet(PaintRates() if quiet else None)
        latency = _shown(qtbot, LatencyPlot())
        moves = []
        latency.plot_item.getViewBox().sigXRangeChanged.connect(lambda *_, moves=moves: moves.append(1))
        for frame in range(200):
            latency.add_latencies(frame / 2 + np.arange(50) / 100, np.ones(50))
            latency.refresh()
        counts[quiet] = len(moves)
    assert counts[True] * 3 <= counts[False]


def test_while_quiet_the_shared_time_axis_moves_only_with_the_telemetry_frames(qtbot, clock):
    """The Run page's plots share one time axis: moving it repaints all of them, so while quiet it moves only on
    the ticks the telemetry plots redraw anyway, and the newest latencies stay in view in between."""
    from console.ui.run_plots import RunPlots

    plots = _shown(qtbot, RunPlots(), size=(1400, 900))
    plots.handle({"type": "started", "t0_ns": 0})
    plots.handle({"type": "phase", "phase": "measuring", "t_ns": 1})
    live_plot.set_quiet(PaintRates(latency_ms=500, telemetry_ms=1000))
    moved = []
    plots.latency.plot_item.getViewBox().sigXRangeChanged.connect(lambda *_: moved.append(1))
    telemetry_frames = plots.cpu.frames
    _simulate(clock, plots.latency, plots.cpu, SIMULATED_S)
    telemetry_frames = plots.cpu.frames - telemetry_frames
    assert telemetry_frames == SIMULATED_S and plots.latency.frames >= 2 * SIMULATED_S
    assert len(moved) <= telemetry_frames
    x1 = plots.latency.plot_item.getViewBox().viewRange()[0][1]
    assert x1 >= plots.latency.data()[0][-1]


def test_the_demo_trace_paints_once_per_refresh(qtbot, monkeypatch):
    """Its view is moved before the paint, not during it (which repainted the whole trace a second time)."""
    import pyqtgraph as pg

    from widgets.demo_trace import DemoTrace

    paints = []
    original = pg.GraphicsView.paintEvent
    monkeypatch.setattr(pg.GraphicsView, "paintEvent", lambda self, event: (paints.append(1), original(self, event)))
    trace = _shown(qtbot, DemoTrace(), size=(1800, 600))
    trace.set_series("run", "latency", "#ff0000")
    app = QtWidgets.QApplication.instance()
    counts = []
    for step in range(5):
        x = step * 0.5 + np.arange(500) / 1000
        trace.add_points("run", x, 1.0 + (np.arange(500) % 7) / 10)
        trace.add_median("run", float(x[-1]), 1.3)
        app.processEvents()
        paints.clear()
        trace.refresh()
        for _ in range(3):  # a second paint asked for during the first one comes with a later pass
            app.processEvents()
        counts.append(len(paints))
    assert counts == [1] * 5


def test_the_system_page_redraws_at_the_telemetry_rate_while_a_run_measures_and_not_at_all_hidden(qtbot, clock):
    from console.ui.system_page import SystemPage

    page = SystemPage(None)
    page._t0_ns = 0
    page.show_sources([{"name": "psutil", "available": True, "reason": ""}])
    tabs = QtWidgets.QTabWidget()
    tabs.addTab(page, "system")
    tabs.addTab(QtWidgets.QLabel("the Run page"), "run")
    _shown(qtbot, tabs, size=(1400, 900))
    util = page.plots["util"]

    def seconds(count: int, start: int) -> int:
        frames = util.frames
        for tick in range(count * 1000 // clock.interval_ms()):
            t_ns = int((start + tick * clock.interval_ms() / 1000) * 1e9)
            page.add_samples([(t_ns, "psutil", "cpu.util", 50.0, "%", "measured"),
                              (t_ns, "psutil", "cpu0.util", 40.0, "%", "measured")])
            clock._tick()
        return util.frames - frames

    assert seconds(5, 0) == 50  # 10 Hz, as the sampler delivers, while nothing measures
    live_plot.set_quiet(PaintRates(latency_ms=500, telemetry_ms=1000))
    assert seconds(5, 5) == 5  # 1 Hz while a run measures
    tabs.setCurrentIndex(1)
    assert seconds(5, 10) == 0  # hidden behind another page: not redrawn
    live_plot.set_quiet(None)
    tabs.setCurrentIndex(0)
    assert util.data("CPU total")[0][-1] == pytest.approx(14.5)
    assert util._series["CPU total"].curve.getData()[0][-1] == pytest.approx(14.5)  # caught up when shown


def test_a_sweep_point_that_measures_quiets_the_window_too(qtbot, tmp_path):
    from console.ui.app import build_main_window

    win = build_main_window(tmp_path / "history.db", discover_targets=False)
    qtbot.addWidget(win)
    try:
        assert win.paint_budget is not None and not win.paint_budget.quiet
        win.sweep_page._point_event(0, {"type": "latencies", "t_ns": [1], "latency_ns": [1]})  # never passed on
        win.sweep_page._point_event(0, {"type": "phase", "phase": "measuring"})
        qtbot.waitUntil(lambda: win.paint_budget.quiet, timeout=5_000)  # queued from the sweep's thread
        win.sweep_page._point_event(0, {"type": "finished", "record": {}})
        qtbot.waitUntil(lambda: not win.paint_budget.quiet, timeout=5_000)
    finally:
        win.paint_budget.release()
