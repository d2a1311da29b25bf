"""A telemetry source registered from inside a test is sampled, drawn and counted, with no other file edited.

The source is a class put into the registry with monkeypatch, so it exists only in this process: the sampler
runs here on a thread (a spawned sampler process imports sources by "module:Class" name and would not see it).
Routing and energy read the same registry, in this process, where the plots and the summary are computed.
"""

from __future__ import annotations

import multiprocessing
import threading
import time

import pytest

from console.analysis.energy import energy_summary
from console.telemetry import SOURCES, MetricInfo, Source, sampler_main
from console.telemetry.metadata import Energy, MetricSpec
from console.ui.run_plots import RunPlots
from console.ui.system_page import SystemPage
from console.ui.telemetry_routes import PLOTS, missing_reason, route

S = 1_000_000_000
WATTS = 50.0


class _NpuMeter(Source):
    """A throwaway accelerator: board power (W), an energy counter (J) and a busy share (%)."""

    name = "npumeter"
    metric_specs = (
        MetricSpec(r"(npu\d+)\.busy", "%", "util", "{0}"),
        MetricSpec(r"(npu\d+)\.board_power", "W", "power", "{0} board", energy=Energy("{0}")),
        MetricSpec(r"(npu\d+)\.joules", "J", energy=Energy("{0}")),
    )

    def metrics(self):
        return [MetricInfo("npu0.busy", "%", "busy share"), MetricInfo("npu0.board_power", "W", "board power"),
                MetricInfo("npu0.joules", "J", "energy counter")]

    def sample(self, t_ns):
        return [(t_ns, self.name, "npu0.busy", 40.0, "%", "measured"),
                (t_ns, self.name, "npu0.board_power", WATTS, "W", "measured"),
                (t_ns, self.name, "npu0.joules", WATTS * t_ns / S, "J", "measured")]


@pytest.fixture
def npumeter(monkeypatch):
    monkeypatch.setitem(SOURCES, _NpuMeter.name, _NpuMeter)


def _sample_for_real(count: int) -> tuple[list[dict], list[tuple]]:
    """The source's description and rows, through the sampler (on a thread, at 20 Hz)."""
    parent, child = multiprocessing.Pipe(duplex=True)
    th = threading.Thread(target=sampler_main, args=(child, 20.0, [_NpuMeter.name]), daemon=True)
    th.start()
    rows: list[tuple] = []
    try:
        first = parent.recv()
        assert first["type"] == "sources"
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and len(rows) < 3 * count:
            if parent.poll(0.1):
                rows += parent.recv()["rows"]
        parent.send({"cmd": "stop"})
        th.join(3)
    finally:
        parent.close()
    return first["sources"], rows


def test_a_registered_source_is_drawn_on_both_pages(npumeter, qtbot):
    assert route("npu0.board_power") == ("power", "npu0 board", False)
    assert route("npu3.busy") == ("util", "npu3", False)
    assert route("npu0.joules") is None  # a counter: accounted, not drawn
    sources, rows = _sample_for_real(5)
    assert {r[2] for r in rows} == {"npu0.busy", "npu0.board_power", "npu0.joules"}

    page = SystemPage(None)
    qtbot.addWidget(page)
    page._t0_ns = rows[0][0]
    page.show_sources(sources)
    page.add_samples(rows)
    for plot in page.plots.values():
        plot.refresh()
    assert page.plots["power"].is_available()
    assert page.plots["power"].data("npu0 board")[1].tolist()[:3] == [WATTS] * 3
    assert page.plots["util"].data("npu0")[1].tolist()[:3] == [40.0] * 3

    plots = RunPlots()
    qtbot.addWidget(plots)
    plots.handle({"type": "started", "t0_ns": rows[0][0]})
    plots.handle({"type": "samples", "rows": rows})
    plots.refresh()
    assert plots.power.data("npu0 board")[1].tolist()[:3] == [WATTS] * 3
    assert plots.cpu.data("npu0")[1].tolist()[:3] == [40.0] * 3


def test_a_missing_registered_source_explains_its_plots(npumeter):
    power = next(p for p in PLOTS if p.key == "power")
    reason = missing_reason(power, [{"name": "npumeter", "available": False, "reason": "no NPU driver"}])
    assert reason == "npumeter: no NPU driver"


def test_a_registered_source_counts_in_energy(npumeter):
    rows = [r for t in range(0, 10 * S + 1, S // 10) for r in _NpuMeter().sample(t)]
    counted = energy_summary(rows, 2 * S, 7 * S, inferences=100)
    (npu,) = counted["scopes"]
    assert npu["group"] == "npu0" and npu["method"] == "counter" and npu["other_methods"] == ["integrated"]
    assert counted["joules"] == pytest.approx(WATTS * 5)

    power_only = [r for r in rows if r[2] != "npu0.joules"]
    integrated = energy_summary(power_only, 2 * S, 7 * S, inferences=100)
    (npu,) = integrated["scopes"]
    assert npu["method"] == "integrated" and npu["metrics"] == ["npu0.board_power"] and npu["source"] == "npumeter"
    assert integrated["joules"] == pytest.approx(WATTS * 5)
    assert integrated["joules_per_inference"] == pytest.approx(WATTS * 5 / 100)


def test_without_the_registration_nothing_is_routed_or_counted():
    rows = [r for t in range(0, 10 * S + 1, S // 10) for r in _NpuMeter().sample(t)]
    assert route("npu0.board_power") is None
    assert energy_summary(rows, 2 * S, 7 * S)["scopes"] == []
