"""Peak-preserving decimation of the live plots (widgets.peak_decimation, widgets.live_plot): a frame draws about
two points per pixel whatever the plot holds, and a single slow iteration among a million is still drawn."""

import math
import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import numpy as np  # noqa: E402
import pytest  # noqa: E402
from PySide6 import QtCore, QtGui  # noqa: E402

from widgets import theme  # noqa: E402
from widgets.live_plot import LatencyPlot, TimeSeriesPlot  # noqa: E402
from widgets.peak_decimation import PeakSeries  # noqa: E402

MILLION = 1_000_000
HOUR_S = 3600.0


def hour_of_latencies(spike_at: int, spike_ms: float = 250.0, n: int = MILLION):
    rng = np.random.default_rng(7)
    t = np.linspace(0.0, HOUR_S, n)
    y = 1.0 + rng.gamma(2.0, 0.05, n)  # ~1.1 ms, never above ~3 ms
    y[spike_at] = spike_ms
    return t, y


def fed_in_batches(series: PeakSeries, t, y, batch: int) -> PeakSeries:
    for start in range(0, t.size, batch):
        series.extend(t[start:start + batch], y[start:start + batch])
    return series


def reference_peaks(t_kept, y_kept, first, i0, i1, buckets):
    """Brute force: blocks of 2**k samples aligned to the stream position, (max, min) at the block's middle time."""
    n = i1 - i0
    if n <= 2 * buckets:
        return t_kept[i0 - first:i1 - first], y_kept[i0 - first:i1 - first]
    size = 1 << math.ceil(math.log2(n / buckets))
    b0, b1 = -(-i0 // size), i1 // size
    xs, ys = [t_kept[i0 - first]], [y_kept[i0 - first]]

    def block(a, b):
        part = y_kept[a - first:b - first]
        xs.extend([t_kept[(a + b) // 2 - first]] * 2)
        ys.extend([np.nanmax(part), np.nanmin(part)])

    if i0 < b0 * size:
        block(i0, b0 * size)
    for b in range(b0, b1):
        block(b * size, (b + 1) * size)
    if b1 * size < i1:
        block(b1 * size, i1)
    xs.append(t_kept[i1 - 1 - first])
    ys.append(y_kept[i1 - 1 - first])
    return np.array(xs), np.array(ys)


# ---- PeakSeries (no Qt)
def test_a_single_slow_iteration_among_a_million_survives_decimation():
    spike_at = 654_321
    t, y = hour_of_latencies(spike_at)
    series = fed_in_batches(PeakSeries(MILLION), t, y, batch=997)
    x, drawn = series.peaks(buckets=1400)
    assert x.size <= 2 * 1400 + 6  # about two points per pixel, not a million
    assert drawn.max() == 250.0 and drawn.min() == y.min()
    where = x[np.argmax(drawn)]
    assert abs(where - t[spike_at]) <= 2 * HOUR_S / 1400  # within two pixels of where it happened
    assert np.all(np.diff(x) >= 0)


def test_blocks_match_a_brute_force_reduction_at_every_span():
    rng = np.random.default_rng(3)
    n = 200_000
    t = np.cumsum(rng.exponential(0.01, n))
    y = rng.normal(10, 2, n)
    series = fed_in_batches(PeakSeries(n), t[:3_000], y[:3_000], batch=1)  # every block boundary crossed live
    start = 3_000
    while start < n:
        size = int(rng.integers(1, 200))
        series.extend(t[start:start + size], y[start:start + size])
        start += size
    assert series.values()[1].tolist() == y.tolist()
    for i0, i1, buckets in ((0, n, 700), (12_345, 150_001, 333), (100, 4_000, 1000), (5, 70_000, 50)):
        x0, x1 = t[i0 + 1], t[i1 - 2]  # the one sample either side of the span comes along
        got_x, got_y = series.peaks(x0, x1, buckets)
        want_x, want_y = reference_peaks(t, y, 0, i0, i1, buckets)
        np.testing.assert_array_equal(got_x, want_x)
        np.testing.assert_array_equal(got_y, want_y)


def test_batches_of_any_size_give_the_same_picture():
    rng = np.random.default_rng(5)
    n = 300_000
    t = np.arange(n) * 0.001
    y = rng.random(n)
    one = PeakSeries(n)
    one.extend(t, y)
    many = PeakSeries(n)
    start = 0
    while start < n:
        size = int(rng.integers(1, 5_000))
        many.extend(t[start:start + size], y[start:start + size])
        start += size
    for span in ((-math.inf, math.inf), (10.0, 250.0), (123.4, 123.9)):
        for buckets in (64, 1400, 3840):
            for a, b in zip(one.peaks(*span, buckets), many.peaks(*span, buckets), strict=True):
                np.testing.assert_array_equal(a, b)


def test_a_zoomed_span_draws_only_what_is_in_it_and_still_its_spikes():
    spike_at = 500_000
    t, y = hour_of_latencies(spike_at)
    series = PeakSeries(MILLION)
    series.extend(t, y)
    x0, x1 = t[spike_at] - 90.0, t[spike_at] + 30.0  # two minutes of an hour: ~33,000 iterations
    x, drawn = series.peaks(x0, x1, buckets=1000)
    assert x.size <= 2 * 1000 + 6
    inside = (x >= x0) & (x <= x1)
    assert (~inside).sum() <= 2  # one sample either side, so the line runs to the edges
    assert drawn.max() == 250.0
    left, right = series.peaks(0.0, x0 - 10.0, 1000), series.peaks(x1 + 10.0, HOUR_S, 1000)
    assert left[1].max() < 5 and right[1].max() < 5  # the spike is not smeared into spans without it


def test_the_oldest_samples_go_and_their_spikes_with_them():
    capacity = 10_007  # not a multiple of any block: the kept window starts inside one
    n = 35_000
    t = np.arange(n) * 0.1
    y = np.ones(n)
    y[2_000] = 99.0  # pushed out
    y[30_000] = 42.0  # kept
    series = fed_in_batches(PeakSeries(capacity), t, y, batch=333)
    kept_t, kept_y = series.values()
    assert len(series) == capacity and series.first == n - capacity and series.end == n
    np.testing.assert_array_equal(kept_y, y[-capacity:])
    for span, buckets in (((-math.inf, math.inf), 100), ((t[26_000], t[33_000]), 37)):
        got = series.peaks(*span, buckets)
        assert got[1].max() == 42.0
        i0 = max(series.first, int(np.searchsorted(t, span[0], "left")) - 1) if span[0] > -math.inf else series.first
        i1 = min(n, int(np.searchsorted(t, span[1], "right")) + 1) if span[1] < math.inf else n
        want = reference_peaks(kept_t, kept_y, series.first, i0, i1, buckets)
        np.testing.assert_array_equal(got[0], want[0])
        np.testing.assert_array_equal(got[1], want[1])


def test_one_batch_larger_than_the_capacity_keeps_its_newest_part():
    t = np.arange(5_000) * 1.0
    y = np.sin(t)
    series = PeakSeries(1_000)
    series.extend(t, y)
    kept_t, kept_y = series.values()
    np.testing.assert_array_equal(kept_t, t[-1000:])
    got = series.peaks(buckets=10)
    want = reference_peaks(kept_t, kept_y, 4_000, 4_000, 5_000, 10)
    np.testing.assert_array_equal(got[1], want[1])


def test_a_gap_of_unreadable_samples_stays_a_gap_and_is_never_zero():
    n = 100_000
    t = np.arange(n) * 0.1
    y = np.full(n, 50.0)
    y[40_000:45_000] = np.nan  # the sensor failed for 500 s
    y[70_000] = np.nan  # one unreadable sample
    series = PeakSeries(n)
    series.extend(t, y)
    x, drawn = series.peaks(buckets=1000)
    assert np.isnan(drawn).any()  # drawn with connect="finite": a gap
    gap = np.isnan(drawn)
    assert np.all((x[gap] >= t[40_000 - 128]) & (x[gap] <= t[45_000 + 128]))  # only where the sensor failed
    assert np.all(drawn[~gap] == 50.0)  # nothing drawn as 0


def test_times_out_of_order_still_keep_every_peak():
    rng = np.random.default_rng(11)
    t = rng.random(50_000) * 100
    y = np.ones(50_000)
    y[777] = 9.0
    series = PeakSeries(50_000)
    series.extend(t, y)
    assert not series.ordered
    x, drawn = series.peaks(10.0, 20.0, buckets=100)  # cannot clip unordered times: the whole series is drawn
    assert x.size <= 2 * 100 + 6 and drawn.max() == 9.0


def test_bad_input_names_the_problem():
    with pytest.raises(ValueError, match="capacity"):
        PeakSeries(0)
    with pytest.raises(ValueError, match="differ in length"):
        PeakSeries(10).extend([0.0, 1.0], [1.0])


# ---- The plots
def shown(qtbot, widget, width=1400, height=450):
    qtbot.addWidget(widget)
    widget.resize(width, height)
    widget.show()
    qtbot.waitExposed(widget)
    return widget


def settle(widget):
    """Paint once, so the view applies its auto-range, then read back what the curve draws."""
    widget.repaint()
    QtCore.QCoreApplication.processEvents()


def test_the_latency_plot_draws_one_slow_iteration_among_a_million(qtbot):
    spike_at = 654_321
    t, y = hour_of_latencies(spike_at)
    plot = shown(qtbot, LatencyPlot())
    plot.set_data(t, y)
    plot.refresh()
    settle(plot)
    view = plot.plot_item.getViewBox()
    x, drawn = plot._curve.getData()
    assert x.size <= 2 * view.width() + 8
    assert drawn.max() == 250.0
    # And it is on screen: the column where it happened has the latency colour high above the baseline, where a
    # column without a spike has only the background.
    image = plot._plot_widget.grab().toImage()
    ratio = image.devicePixelRatio()
    pen = QtGui.QColor(theme.tint(theme.LATENCY_COLOR, 0.67))
    background = QtGui.QColor(theme.BACKGROUND)

    def column_has_pen(t_s: float) -> bool:
        scene = view.mapViewToScene(QtCore.QPointF(t_s, 0.55 * 250.0))
        point = plot._plot_widget.mapFromScene(scene)
        for dx in range(-2, 3):
            pixel = image.pixelColor(int((point.x() + dx) * ratio), int(point.y() * ratio))
            if distance(pixel, pen) < distance(pixel, background):
                return True
        return False

    assert column_has_pen(t[spike_at])
    assert not column_has_pen(t[spike_at] - 600.0)


def distance(a: QtGui.QColor, b: QtGui.QColor) -> float:
    return math.dist((a.red(), a.green(), a.blue()), (b.red(), b.green(), b.blue()))


def test_live_batches_keep_every_spike_and_a_zoom_redraws_from_the_kept_data(qtbot):
    plot = shown(qtbot, LatencyPlot(capacity=200_000), 1000, 400)
    t, y = hour_of_latencies(150_000, spike_ms=80.0, n=200_000)
    y[199_990] = 120.0  # in the newest batch
    for start in range(0, t.size, 5_000):
        plot.add_latencies(t[start:start + 5_000], y[start:start + 5_000])
        plot.refresh()
    settle(plot)
    x, drawn = plot._curve.getData()
    assert drawn.max() == 120.0 and 80.0 in drawn
    assert x[-1] == t[-1]  # the line reaches the newest iteration
    view = plot.plot_item.getViewBox()
    around = t[150_000]
    plot.plot_item.setXRange(around - 5.0, around + 5.0, padding=0)  # a zoom: no new data, a new span
    x, drawn = plot._curve.getData()
    assert 80.0 in drawn and 120.0 not in drawn
    assert x.size <= 2 * view.width() + 8
    assert ((x < around - 5.0) | (x > around + 5.0)).sum() <= 2
    np.testing.assert_array_equal(plot.data()[1], y)  # the data itself is all kept


def test_running_percentile_lines_keep_their_extremes_in_fewer_points(qtbot):
    plot = shown(qtbot, LatencyPlot(), 800, 300)
    t, y = hour_of_latencies(1_000, n=20_000)
    y[12_000:12_400] = 9.0  # a burst of slow iterations: the running p99 rises for a while
    plot.add_latencies(t, y)
    plot.refresh()
    ends = range(100, 20_001, 100)  # a running-percentile point every 100 iterations, over the last 1000
    p50 = [np.median(y[max(0, e - 1000):e]) for e in ends]
    p99 = [np.percentile(y[max(0, e - 1000):e], 99) for e in ends]
    width = plot.plot_item.getViewBox().width()
    p50_x, p50_y = plot._p50_line.getData()
    p99_x, p99_y = plot._p99_line.getData()
    # Wide strokes (3 px over a 6 px halo) get one block per 12 px: fewer points, the same extremes.
    assert p50_x.size <= 2 * width / 12 + 8 and p99_x.size <= width / 12 + 8
    assert p50_y.max() == pytest.approx(max(p50)) and p50_y.min() == pytest.approx(min(p50))
    assert p99_y.max() == pytest.approx(max(p99))  # the dashed p99 line draws its upper envelope: every rise
    assert p50_y[-1] == pytest.approx(np.median(y[-1000:]))  # and ends at the current value
    assert plot.percentiles()["n"] == 1000


def test_an_hour_of_telemetry_keeps_its_dips_and_follow_mode_clips(qtbot):
    plot = shown(qtbot, TimeSeriesPlot("CPU", "utilization", "%", y_range=(0, 100)))
    t = np.arange(36_000) / 10.0
    values = 50 + 40 * np.sin(t / 60)
    values[12_345] = 0.0  # one sample at 0 %, e.g. a stall
    plot.set_data("total", t, values)
    for core in range(16):
        plot.set_data(f"cpu{core}", t, values * 0.9)
    plot.refresh()
    settle(plot)
    width = plot.plot_item.getViewBox().width()
    for name in ("total", "cpu7"):
        x, drawn = plot._series[name].curve.getData()
        assert x.size <= 2 * width + 8
        assert drawn.min() == 0.0
    plot.set_follow(60.0)
    plot.refresh()
    x, _ = plot._series["total"].curve.getData()
    assert x.min() >= t[-1] - 60.0 - 0.2 and x.max() == t[-1]
    assert plot.data("total")[0].size == 36_000


def test_the_time_axis_moves_in_steps_and_always_shows_the_newest_data(qtbot):
    plot = shown(qtbot, LatencyPlot(capacity=100_000), 1000, 300)
    t = np.linspace(0.0, HOUR_S, 100_000)
    plot.set_data(t, np.ones(t.size))
    plot.refresh()
    view = plot.plot_item.getViewBox()
    before = view.viewRange()[0]
    assert before[0] <= 0.0 and before[1] >= HOUR_S
    plot.add_latencies([HOUR_S + 0.1], [1.0])  # a tick later: within the step, the axis stays put
    plot.refresh()
    assert view.viewRange()[0] == before
    later = before[1] + 30.0  # past the step: the axis moves, and the newest sample is on screen
    plot.add_latencies([later], [1.0])
    plot.refresh()
    low, high = view.viewRange()[0]
    assert high >= later and (low, high) != tuple(before)
    assert (high - later) / (high - low) < 0.1  # a step is a few percent of the span, not a jump
