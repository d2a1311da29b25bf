"""The System page: routed telemetry, estimates dashed, missing sensors explained, throttling shaded."""

from PySide6 import QtCore, QtGui

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
    assert temperature.unavailable_text() == "temperature: not available"
    assert "nvml: NVML library not found" in temperature.unavailable_details()
    assert "amdsmi: pip install amdsmi" in temperature.unavailable_details()
    assert "Not available: nvml, rapl, amdsmi (hover for why)." in page.summary.text()


# What the sources of a machine without GPUs or RAPL say (this machine's own, at the time of writing).
LONG_REASONS = [
    {"name": "psutil", "available": True, "reason": ""},
    {"name": "nvml", "available": False,
     "reason": "NVML library (libnvidia-ml.so.1) not found: no NVIDIA driver installed on this machine"},
    {"name": "rapl", "available": False,
     "reason": "no /sys/class/powercap: RAPL powercap is a Linux interface (kernel driver intel_rapl_msr or "
               "intel_rapl_common); absent here, e.g. not Linux, a VM or a container without /sys"},
    {"name": "amdsmi", "available": False,
     "reason": "amdsmi is not importable (ModuleNotFoundError: No module named 'amdsmi'): pip install amdsmi "
               "(needs ROCm's AMD SMI library)"},
    {"name": "estimated", "available": False,
     "reason": "TDP of 'AMD EPYC' is not in the table: set LABCONSOLE_CPU_TDP_W to the machine's total CPU TDP in "
               "watts (all sockets) for an estimate"},
]


def test_a_missing_sensor_is_a_short_label_with_the_whole_reason_on_hover(qtbot):
    page = SystemPage(None)
    qtbot.addWidget(page)
    page.show_sources(LONG_REASONS)
    missing = {key: plot for key, plot in page.plots.items() if not plot.is_available()}
    assert set(missing) == {"power", "temperature"}
    power = missing["power"]
    assert power.unavailable_text() == "power: not available"
    for plot in missing.values():
        assert 0 < len(plot.unavailable_text()) <= 40
        details = plot.unavailable_details()
        for source in LONG_REASONS[1:]:
            if source["name"] in details:
                assert f"{source['name']}: {source['reason']}" in details  # whole, not cut short
    assert "set LABCONSOLE_CPU_TDP_W" in power.unavailable_details()
    tooltip = QtGui.QTextDocument()
    tooltip.setHtml(power.unavailable_tooltip())
    assert "intel_rapl_common); absent here" in " ".join(tooltip.toPlainText().split())
    # The line at the top names the missing sources; why each is missing is its tooltip, not a paragraph.
    assert page.summary.text() == ("Sources sampling: psutil.  Not available: nvml, rapl, amdsmi, estimated "
                                   "(hover for why).")
    summary_tip = QtGui.QTextDocument()
    summary_tip.setHtml(page.summary.toolTip())
    assert "pip install amdsmi" in summary_tip.toPlainText()


def test_gpu_throttling_is_shaded_but_idle_is_not(qtbot):
    page = SystemPage(None)
    qtbot.addWidget(page)
    page._t0_ns = 0
    page.add_samples(rows("gpu0.throttle", [0x1, 0x1, 0x44, 0x44, 0x0], unit="bitmask"))
    labels = page.plots["power"].band_labels()
    assert labels == ["gpu0 throttled: sw_power_cap, hw_thermal_slowdown"]
    band = page.plots["power"]._bands[0]
    assert (band.t0, band.t1) == (0.2, 0.4)
