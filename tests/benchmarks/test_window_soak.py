"""The window soaks (issue 14): live plots stay smooth with an hour of data on screen, and the window's memory stays
flat while it plays a playlist of runs with live plots.

Frame time. The Run page's plots (latency, utilization, memory, power on one linked time axis, 1400 × 1000) hold an
hour: 1M iterations and 20 telemetry series at 10 Hz. Then, at the live rate (one refresh's worth of data every
100 ms: ~28 iterations and one sample per series), each frame appends the batch and is measured as test_plot_hour
measures one: refresh + repaint + processing the events it posted. The figure is the p99 over `SOAK_FRAMES` frames
(default 600, a minute), with the distribution-free 95% interval of a quantile (order statistics, bench_stats).
Goal: under 16 ms, a 60 Hz frame, so a live run never stutters the window.

Memory. The real window (aged first, as in test_demo_soak: its bounded telemetry stores filled to capacity) shows the
Run page while it loops a playlist of short runs (PyTorch at batch 1, then ONNX Runtime at batch 4) for `SOAK_S`
seconds (default 150; the issue's check is an hour: `make soak`). At the end of each loop, with `gc.collect()` and
glibc's `malloc_trim(0)` (see test_demo_soak for why), the resident set is read: every loop ends in the same state
(the same item just done, its data in the live plots), so consecutive loop ends differ only by what the loop kept;
consecutive runs would not (each engine leaves its own plots). The first `WARMUP_LOOPS` warm up (imports, the ONNX
export, caches). The figure is the median of the loop-to-loop slopes, in KiB per minute, with its distribution-free
interval; `details` add the least-squares slope over the whole soak. Goal: at most 256 KiB/min, 15 MiB an hour, so
an 8-hour lab day grows by at most 120 MiB, history included (each run is stored and the History page re-lists it).
"""

from __future__ import annotations

import gc
import os
import statistics
import time

import numpy as np
import psutil
from bench_stats import median_with_interval, quantile_interval
from bench_verdict import Goal, judge, undecided
from PySide6 import QtWidgets
from test_demo_soak import _age, _malloc_trim, _no_trim

from console.ui.app import build_main_window
from console.ui.run_plots import RunPlots

SOAK_S = float(os.environ.get("SOAK_S", 150))
SOAK_FRAMES = int(os.environ.get("SOAK_FRAMES", 600))
RUN_S = 3.0  # each run's measured phase: short, so a soak plays many
WARMUP_LOOPS = 2
FRAME_GOAL = Goal.at_most(16.0, "ms")
SLOPE_GOAL = Goal.at_most(256.0, "KiB/min")
TICK_S = 0.1  # the live plots' refresh period
HOUR_S = 3600.0
LATENCIES = 1_000_000
CPU_SERIES = ["CPU total"] + [f"cpu{i}" for i in range(16)]
PLAYLIST = [{"engine": "torch", "batch": 1}, {"engine": "onnxruntime", "batch": 4}]
MIB, KIB = 1024 * 1024, 1024


def test_live_plot_frame_p99_with_an_hour_on_screen(qtbot, bench):
    rng = np.random.default_rng(0)
    plots = RunPlots()
    qtbot.addWidget(plots)
    plots.resize(1400, 1000)
    plots.show()
    qtbot.waitExposed(plots)
    t = np.arange(int(HOUR_S / TICK_S)) * TICK_S
    plots.latency.set_data(np.sort(rng.random(LATENCIES)) * HOUR_S, 1 + rng.gamma(2.0, 0.3, LATENCIES))
    telemetry = {plots.cpu: CPU_SERIES, plots.memory: ["system used", "worker RSS"], plots.power: ["CPU"]}
    for plot, names in telemetry.items():
        for i, name in enumerate(names):
            plot.set_data(name, t, 50 + 40 * np.sin(t / 60 + i) + 5 * rng.random(t.size))
    frame_ms(plots, plots.refresh)  # the first computes an hour of running percentiles
    per_tick = round(LATENCIES / HOUR_S * TICK_S)

    def live_frame(k: int) -> None:
        now = HOUR_S + k * TICK_S
        plots.latency.add_latencies(now - TICK_S + np.arange(per_tick) * TICK_S / per_tick,
                                    1 + rng.gamma(2.0, 0.3, per_tick))
        for plot, names in telemetry.items():
            for i, name in enumerate(names):
                plot.add_points(name, [now], [50 + 40 * np.sin(now / 60 + i) + 5 * rng.random()])
        plots.refresh()

    frames = []
    started = time.monotonic()
    for k in range(1, SOAK_FRAMES + 1):
        tick = time.perf_counter()
        frames.append(frame_ms(plots, lambda k=k: live_frame(k)))
        left_ms = TICK_S * 1e3 - (time.perf_counter() - tick) * 1e3
        qtbot.wait(max(1, int(left_ms)))  # the live rate: the next batch a tick later, events processed meanwhile
    ordered = sorted(frames)
    p99 = ordered[max(0, int(np.ceil(0.99 * len(ordered))) - 1)]
    drawn = {name: int(curve.getData()[0].size) for name, curve in drawn_curves(plots)}
    details = {"frames": len(frames), "seconds": round(time.monotonic() - started, 1),
               "median_ms": round(statistics.median(frames), 2), "max_ms": round(ordered[-1], 2),
               "points_held": LATENCIES + sum(len(n) for n in telemetry.values()) * t.size,
               "points_drawn_per_frame": sum(drawn.values()), "latency_points_drawn": drawn["latency"],
               "view_width_px": int(plots.latency.plot_item.getViewBox().width())}
    print(f"\n[benchmark] live frame with an hour on screen: p99 {p99:.2f} ms over {len(frames)} frames at 10 Hz; "
          f"{details}")
    bench.record(judge(f"live plot frame p99, an hour on screen ({len(frames)} frames)", p99,
                       quantile_interval(frames, 0.99), FRAME_GOAL, samples=len(frames), **details))


def test_window_memory_stays_flat_while_it_plays_runs(qtbot, tmp_path, bench):
    window = build_main_window(tmp_path / "history.db", discover_targets=False)
    qtbot.addWidget(window)
    window.resize(1920, 1080)
    window.show()
    window.show_page("run")
    aged = _age(window, qtbot)
    process = psutil.Process()
    trim = _malloc_trim()
    ends: list[tuple[float, int, int]] = []  # (time, runs so far, RSS in use) at each loop's end
    statuses: list[str] = []
    started = time.monotonic()
    while time.monotonic() - started < SOAK_S or len(ends) < WARMUP_LOOPS + 1:
        for item in PLAYLIST:  # whole loops only: each figure compares the same state
            values = {"model": "mlp", "duration_s": RUN_S, "warmup_s": 0.3, **item}
            with qtbot.waitSignal(window.controller.sig_finished, timeout=180_000) as finished:
                assert window.start_run(values), f"the window did not start {values}"
            statuses.append(finished.args[0]["status"])
        gc.collect()
        trim()
        ends.append((time.monotonic(), len(statuses), process.memory_info().rss))
    seconds = time.monotonic() - started
    plotted = int(window.run_page.plots.latency.data()[0].size)
    aged["hub_rows_end"] = len(window.workspace.hub.recent())
    qtbot.waitUntil(lambda: not window.controller.busy, timeout=30_000)
    assert statuses.count("completed") == len(statuses), statuses

    measured = ends[WARMUP_LOOPS - 1:]  # slopes start at the end of the last warm-up loop
    slopes = [(b[2] - a[2]) / KIB / ((b[0] - a[0]) / 60) for a, b in zip(measured, measured[1:], strict=False)]
    minutes = np.array([(e[0] - measured[0][0]) / 60 for e in measured])
    rss_kib = np.array([e[2] / KIB for e in measured])
    details = {
        "soak_s": SOAK_S, "seconds": round(seconds), "loops": len(ends), "runs": len(statuses), "run_s": RUN_S,
        "iterations_plotted_last_run": plotted, "trimmed": trim is not _no_trim,
        "rss_start_mib": round(measured[0][2] / MIB, 1), "rss_end_mib": round(measured[-1][2] / MIB, 1),
        "least_squares_kib_per_min": round(float(np.polyfit(minutes, rss_kib, 1)[0]), 1) if minutes.size > 2
        else None,
        "slopes_kib_per_min": [round(s, 1) for s in slopes],
        "loop_end_mib": [(round(t - started), runs, round(rss / MIB, 2)) for t, runs, rss in ends],
        "aged": aged,
    }
    name = f"window memory slope, runs with live plots (SOAK_S={SOAK_S:g} s)"
    print(f"\n[benchmark] window soak for {seconds:.0f} s (SOAK_S={SOAK_S:g}): {details}")
    if len(slopes) < 6:
        bench.record(undecided(name, SLOPE_GOAL, f"{len(slopes)} loop-to-loop slopes after {WARMUP_LOOPS} warm-up "
                               "loops: at least 6 are needed to bound the median; set SOAK_S higher (3600 for the "
                               "issue's hour: make soak)", samples=len(slopes), **details))
        return
    median, interval = median_with_interval(slopes)
    bench.record(judge(name, median, interval, SLOPE_GOAL, samples=len(slopes), **details))


def frame_ms(widget, update) -> float:
    """One frame as test_plot_hour measures it: the update, a synchronous repaint, and the events it posted."""
    app = QtWidgets.QApplication.instance()
    started = time.perf_counter()
    update()
    widget.repaint()
    app.processEvents()
    return (time.perf_counter() - started) * 1e3


def drawn_curves(plots):
    yield "latency", plots.latency._curve
    yield "p50", plots.latency._p50_line
    yield "p99", plots.latency._p99_line
    for plot in (plots.cpu, plots.memory, plots.power):
        for name in plot.series_names():
            yield f"{plot.title()}: {name}", plot._series[name].curve
