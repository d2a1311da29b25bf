"""Metric metadata (console.telemetry.metadata) and the catalog the plots and energy read it through."""

from __future__ import annotations

import pytest

from console.telemetry import SOURCES, MetricInfo, Source, catalog
from console.telemetry.metadata import PLOT_KEYS, Energy, MetricSpec
from console.telemetry.registry import load_source_class


class _Probe(Source):
    name = "probe"
    metric_specs = (
        MetricSpec(r"(probe\d+)\.watts", "W", "power", "{0} rail", energy=Energy("{0}", "rail-{0}")),
        MetricSpec(r"probe\.temp", "°C", "temperature"),
    )

    def metrics(self):
        return [MetricInfo("probe0.watts", "W", "rail power"), MetricInfo("probe.temp", "°C", "case", "estimated"),
                MetricInfo("probe.fan", "rpm", "fan speed")]

    def sample(self, t_ns):
        return []


def test_a_spec_resolves_per_device_names():
    spec = _Probe.metric_specs[0]
    assert spec.match("probe12.watts") and not spec.match("probe12.watts.avg") and not spec.match("xprobe1.watts")
    assert spec.energy_method == "integrated"
    assert MetricSpec("x", "J", energy=Energy("cpu")).energy_method == "counter"
    assert MetricSpec("x", "W", method="estimated", energy=Energy("cpu")).energy_method == "estimated"
    assert MetricSpec("x", "W").energy_method is None  # not an energy metric


def test_bad_specs_name_the_problem_and_the_fix():
    with pytest.raises(ValueError, match="unknown plot 'powr'.*" + PLOT_KEYS[0]):
        MetricSpec("x", "W", "powr")
    with pytest.raises(ValueError, match="method must be one of"):
        MetricSpec("x", "W", method="guessed")
    with pytest.raises(ValueError, match=r"energy metric must be .* in J .* or W"):
        MetricSpec("x", "%", energy=Energy("cpu"))
    with pytest.raises(ValueError, match="energy metric must be measured or estimated"):
        MetricSpec("x", "W", method="integrated", energy=Energy("cpu"))


def test_the_catalog_follows_the_registry(monkeypatch):
    assert catalog.current().resolve("probe0.watts") is None
    monkeypatch.setitem(SOURCES, "probe", _Probe)
    found = catalog.current().resolve("probe3.watts")
    assert (found.source, found.label, found.energy_group, found.energy_part) == ("probe", "probe3 rail", "probe3",
                                                                                 "rail-probe3")
    assert catalog.current().resolve("probe.temp").label == "probe.temp"  # no label: the metric's name
    assert "probe" in catalog.current().plot_sources("power")
    assert catalog.current() is catalog.current()  # rebuilt only when the registry changes


def test_a_source_that_cannot_load_is_skipped_not_fatal(monkeypatch, caplog):
    monkeypatch.setitem(SOURCES, "broken", "console.telemetry.no_such_module:Nothing")
    assert catalog.current().resolve("cpu.util").source == "psutil"
    assert "broken" in caplog.text


def test_undeclared_metrics_are_named():
    assert catalog.undeclared(_Probe, _Probe().metrics()) == [
        "probe.temp: reported in °C (estimated) but declared in °C (measured) by 'probe\\\\.temp'",
        "probe.fan: not declared in _Probe.metric_specs",
    ]


def test_every_registered_source_declares_its_metrics():
    """The shipped sources' declarations are valid and feed the plots they did by hand before."""
    plots: dict[str, set[str]] = {}
    for name in SOURCES:
        for spec in load_source_class(name).metric_specs:
            if spec.plot:
                plots.setdefault(spec.plot, set()).add(name)
    assert plots == {"util": {"psutil", "nvml", "amdsmi"}, "power": {"nvml", "rapl", "amdsmi", "estimated"},
                     "memory": {"psutil", "nvml", "amdsmi", "storage"}, "temperature": {"nvml", "amdsmi", "storage"},
                     "clocks": {"psutil", "nvml", "amdsmi"}, "io": {"psutil", "nvml"}}
