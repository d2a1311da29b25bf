"""The System page: routed telemetry, estimates dashed, missing sensors explained, throttling shaded."""

from PySide6 import QtCore

from console.ui.system_page import SystemPage
from console.ui.telemetry_routes import route

SOURCES = [
    {"name": "psutil", "available": True, "reason": ""},
    {"name": "nvml", "available": False, "reason": "NVML library not found"},
    {"name": "rapl", "available": False, "reason": "permission denied: sudo chmod o+r …/energy_uj"},
    {"name": "amdsmi", "available": False, "reason": "pip install amdsmi"},
    {"name": "estimated", "available": True, "reason": ""},
]


def rows(metric, values, method="measured", unit="", source="test"):
    return [(int(i * 1e8), source, metric, float(v), unit, method) for i, v in enumerate(values)]


def test_routes_name_series_and_mark_estimates():
    assert route("cpu.util") == ("util", "CPU total", False)
    assert route("cpu3.util") == ("util", "cpu3", False)
    assert route("gpu0.power.instant") == ("power", "gpu0 instant", False)
    assert route("cpu.power.estimated", "estimated") == ("power", "CPU (estimated)", True)
    assert route("gpu1.pcie.rx") == ("io", "gpu1 PCIe rx", False)
    assert route("gpu0.throttle") is None


def test_system_page_shows_what_exists_and_says_why_the_rest_is_missing(qtbot):
    page = SystemPage(None)
    qtbot.addWidget(page)
    page._t0_ns = 0
    page.show_sources(SOURCES)
    page.add_samples(rows("cpu.util", [10, 20, 30], unit="%") + rows("cpu.power.estimated", [40, 45, 50], "estimated"))
    for plot in page.plots.values():
        plot.refresh()
    assert page.plots["util"].data("CPU total")[1].tolist() == [10, 20, 30]
    power = page.plots["power"]
    assert power.is_available()
    pen = power._series["CPU (estimated)"].curve.opts["pen"]
    assert pen.style() == QtCore.Qt.PenStyle.DashLine
    temperature = page.plots["temperature"]
    assert not temperature.is_available()
    assert "NVML library not found" in temperature.unavailable_text()
    assert "pip install amdsmi" in temperature.unavailable_text()
    assert "Not available" in page.summary.text()


def test_gpu_throttling_is_shaded_but_idle_is_not(qtbot):
    page = SystemPage(None)
    qtbot.addWidget(page)
    page._t0_ns = 0
    page.add_samples(rows("gpu0.throttle", [0x1, 0x1, 0x44, 0x44, 0x0], unit="bitmask"))
    labels = page.plots["power"].band_labels()
    assert labels == ["gpu0 throttled: sw_power_cap, hw_thermal_slowdown"]
    band = page.plots["power"]._bands[0]
    assert (band.t0, band.t1) == (0.2, 0.4)
