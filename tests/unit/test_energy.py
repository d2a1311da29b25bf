"""Energy per run and telemetry statistics from sample rows (console.analysis.energy)."""

from __future__ import annotations

import pytest

from console.analysis.energy import ENV_GRID, energy_summary, grid_intensity_from_env, telemetry_summary

S = 1_000_000_000
MS = 1_000_000
PERIOD = 100 * MS


def counter_rows(metric, watts, t_from=0, t_to=10 * S, source="nvml", start_j=5000.0, period=PERIOD):
    """A counter (J) growing at ``watts``, sampled every ``period``."""
    return [(t, source, metric, start_j + watts * (t - t_from) / S, "J", "measured")
            for t in range(t_from, t_to + 1, period)]


def power_rows(metric, watts, t_from=0, t_to=10 * S, source="nvml", method="measured", period=PERIOD):
    return [(t, source, metric, float(watts(t) if callable(watts) else watts), "W", method)
            for t in range(t_from, t_to + 1, period)]


WINDOW = (2 * S + 50 * MS, 7 * S + 50 * MS)  # 5 s, edges between samples


def test_counter_beats_integrated_and_is_interpolated_to_the_window():
    rows = counter_rows("gpu0.energy", 300.0) + power_rows("gpu0.power.avg", 250.0)
    e = energy_summary(rows, *WINDOW, inferences=1000)
    (gpu,) = e["scopes"]
    assert gpu["method"] == "counter" and gpu["scope"] == "gpu0" and gpu["source"] == "nvml"
    assert gpu["joules"] == pytest.approx(1500.0)  # exactly 300 W × 5 s: edges interpolated, not bracketed
    assert gpu["joules_per_inference"] == pytest.approx(1.5)
    assert gpu["sample_period_s"] == pytest.approx(0.1)
    assert gpu["other_methods"] == ["integrated"]
    assert e["method"] == "counter" and e["joules"] == pytest.approx(1500.0) and e["headline_is_total"]
    assert e["total"]["scope"] == "gpu0" and e["window"]["seconds"] == pytest.approx(5.0)
    assert e["carbon"] is None  # not set: absent, never defaulted


def test_integrated_prefers_instant_over_average_power():
    rows = power_rows("gpu0.power.avg", 100.0) + power_rows("gpu0.power.instant", lambda t: 200.0 + 20 * t / S)
    e = energy_summary(rows, *WINDOW, inferences=10)
    (gpu,) = e["scopes"]
    assert gpu["method"] == "integrated" and gpu["metrics"] == ["gpu0.power.instant"]
    t0, t1 = (w / S for w in WINDOW)
    assert gpu["joules"] == pytest.approx(200 * 5 + 10 * (t1**2 - t0**2))  # trapezoid exact on a line


def test_average_power_is_used_with_a_note_when_alone():
    e = energy_summary(power_rows("gpu0.power.avg", 100.0), *WINDOW)
    (gpu,) = e["scopes"]
    assert gpu["method"] == "integrated" and gpu["joules"] == pytest.approx(500.0)
    assert any("moving average" in n for n in gpu["notes"])
    assert gpu["joules_per_inference"] is None and e["inferences"] is None


def test_rapl_counter_beats_estimate_and_sums_zones():
    rows = (counter_rows("rapl.package-0.energy", 100.0, source="rapl", start_j=0.0)
            + counter_rows("rapl.dram-0.energy", 10.0, source="rapl", start_j=0.0)
            + counter_rows("rapl.energy", 110.0, source="rapl", start_j=0.0)  # a sum: must not count again
            + power_rows("cpu.power.estimated", 150.0, source="estimated", method="estimated"))
    e = energy_summary(rows, *WINDOW, inferences=100)
    (cpu,) = e["scopes"]
    assert cpu["method"] == "counter" and cpu["scope"] == "package-0+dram-0" and cpu["source"] == "rapl"
    assert cpu["joules"] == pytest.approx(550.0)
    assert cpu["parts"] == {"rapl.package-0.energy": pytest.approx(500.0), "rapl.dram-0.energy": pytest.approx(50.0)}
    assert cpu["other_methods"] == ["estimated"]


def test_estimate_alone_is_labelled_estimated():
    rows = (power_rows("cpu.power.estimated", 150.0, source="estimated", method="estimated")
            + power_rows("mem.power.estimated", 6.0, source="estimated", method="estimated"))
    e = energy_summary(rows, *WINDOW, inferences=100)
    assert e["method"] == "estimated" and e["scope"] == "cpu+memory (estimated)"
    assert e["joules"] == pytest.approx(780.0)
    assert any("ESTIMATE" in n for n in e["scopes"][0]["notes"])


def test_methods_are_never_mixed_into_a_total():
    rows = (counter_rows("gpu0.energy", 300.0)
            + power_rows("cpu.power.estimated", 150.0, source="estimated", method="estimated"))
    e = energy_summary(rows, *WINDOW, inferences=1000)
    assert [(s["scope"], s["method"]) for s in e["scopes"]] == [("gpu0", "counter"), ("cpu (estimated)", "estimated")]
    assert e["total"] is None and "methods differ" in e["total_reason"]
    # the headline is the best-method part alone, and says exactly what it covers
    assert e["headline_is_total"] is False
    assert e["method"] == "counter" and e["scope"] == "gpu0" and e["joules"] == pytest.approx(1500.0)


def test_same_method_gives_a_total():
    rows = (counter_rows("gpu0.energy", 300.0) + counter_rows("gpu1.energy", 200.0)
            + counter_rows("rapl.package-0.energy", 100.0, source="rapl"))
    e = energy_summary(rows, *WINDOW, inferences=500)
    assert e["total"]["scope"] == "gpu0+gpu1+package-0" and e["total"]["source"] == "nvml+rapl"
    assert e["joules"] == pytest.approx(3000.0) and e["joules_per_inference"] == pytest.approx(6.0)


def test_an_estimate_with_the_wrong_label_is_not_taken_for_a_measurement():
    rows = power_rows("gpu0.power.avg", 100.0, method="estimated")  # a mislabelled row: ignored
    e = energy_summary(rows, *WINDOW)
    assert e["scopes"] == [] and e["joules"] is None and e["reason"]


def test_counter_wraparound_and_reset():
    # a raw counter wrapping at 1000 J (at t = 3 s, inside the window), 100 W
    raw = [(t, "x", "gpu0.energy", (700.0 + 100 * t / S) % 1000.0, "J", "measured")
           for t in range(0, 10 * S + 1, PERIOD)]
    e = energy_summary(raw, *WINDOW, wraps={"gpu0.energy": 1000.0})
    assert e["joules"] == pytest.approx(500.0)
    assert not e["scopes"][0]["notes"]
    e = energy_summary(raw, *WINDOW)  # range unknown: a reset, counted as a lower bound, and said
    assert e["joules"] <= 500.0 + 1e-9
    assert any("reset" in n for n in e["scopes"][0]["notes"])


def test_window_bracketing_uses_the_samples_around_the_edges():
    rows = [(1 * S, "nvml", "gpu0.energy", 100.0, "J", "measured"),
            (3 * S, "nvml", "gpu0.energy", 300.0, "J", "measured"),
            (9 * S, "nvml", "gpu0.energy", 900.0, "J", "measured")]
    e = energy_summary(rows, 2 * S, 8 * S)
    assert e["joules"] == pytest.approx(600.0)  # 100 W, interpolated at 2 s and 8 s
    assert e["coverage"] == pytest.approx(1.0)
    assert e["sample_period_s"] == pytest.approx(4.0)  # median of 2 s and 6 s


def test_partial_coverage_withholds_per_inference():
    rows = counter_rows("gpu0.energy", 100.0, t_from=4 * S)  # sampling began mid-window
    e = energy_summary(rows, 2 * S, 8 * S, inferences=100)
    assert e["coverage"] == pytest.approx(4 / 6)
    assert e["joules"] == pytest.approx(400.0) and e["joules_per_inference"] is None
    assert any("cover" in n for n in e["scopes"][0]["notes"])


def test_too_few_samples_falls_to_the_next_method_and_says_so():
    rows = ([(5 * S, "nvml", "gpu0.energy", 1.0, "J", "measured")]  # one lone counter reading
            + power_rows("gpu0.power.instant", 100.0))
    e = energy_summary(rows, *WINDOW)
    (gpu,) = e["scopes"]
    assert gpu["method"] == "integrated"
    assert any("counter" in n and "fewer than two" in n for n in gpu["notes"])


def test_carbon_only_when_set():
    rows = counter_rows("gpu0.energy", 720.0)
    e = energy_summary(rows, *WINDOW, inferences=100, grid_g_per_kwh=400.0)
    # 3600 J = 1 Wh = 0.001 kWh -> 0.4 g
    assert e["carbon"]["g_co2"] == pytest.approx(0.4)
    assert e["carbon"]["g_co2_per_inference"] == pytest.approx(0.004)
    assert e["carbon"]["grid_g_per_kwh"] == 400.0 and e["carbon"]["method"] == "counter"
    assert energy_summary(rows, *WINDOW, grid_g_per_kwh=None)["carbon"] is None
    bad = energy_summary(rows, *WINDOW, grid_g_per_kwh="lots")
    assert bad["carbon"] is None and any(ENV_GRID in n for n in bad["notes"])
    assert energy_summary(rows, *WINDOW, grid_g_per_kwh="250")["carbon"]["g_co2"] == pytest.approx(0.25)


def test_grid_intensity_from_env(monkeypatch):
    monkeypatch.delenv(ENV_GRID, raising=False)
    assert grid_intensity_from_env() is None
    monkeypatch.setenv(ENV_GRID, " 385 ")
    assert grid_intensity_from_env() == "385"
    assert grid_intensity_from_env({}) is None


def test_dict_rows_from_the_history_store():
    rows = [{"t_ns": t, "source": s, "metric": m, "value": v, "unit": u, "method": me}
            for t, s, m, v, u, me in counter_rows("gpu0.energy", 300.0)]
    assert energy_summary(rows, *WINDOW)["joules"] == pytest.approx(1500.0)


def test_empty_window_and_no_rows():
    with pytest.raises(ValueError):
        energy_summary([], 5, 5)
    e = energy_summary([], 0, S, inferences=3, grid_g_per_kwh=100)
    assert e["joules"] is None and e["scopes"] == [] and e["reason"] and e["carbon"] is None


def test_telemetry_summary():
    rows = (power_rows("gpu0.power.avg", lambda t: t / S)  # 0..10 W
            + counter_rows("gpu0.energy", 300.0)
            + [(t, "nvml", "gpu0.throttle", float(0x4 if t == 3 * S else 0x1), "bitmask", "measured")
               for t in range(0, 10 * S + 1, S)]
            + [(5 * S, "estimated", "cpu.power.estimated", 42.0, "W", "estimated")]
            + [(20 * S, "psutil", "cpu.util", 99.0, "%", "measured")])  # outside the window
    out = telemetry_summary(rows, 2 * S, 4 * S)
    p = out["gpu0.power.avg"]
    assert p["mean"] == pytest.approx(3.0) and p["max"] == pytest.approx(4.0) and p["min"] == pytest.approx(2.0)
    assert p["unit"] == "W" and p["method"] == "measured" and p["source"] == "nvml" and p["samples"] == 21
    assert out["gpu0.energy"]["delta"] == pytest.approx(600.0) and out["gpu0.energy"]["mean"] is None
    assert out["gpu0.throttle"]["bits"] == 0x5 and out["gpu0.throttle"]["mean"] is None
    assert "cpu.power.estimated" not in out and "cpu.util" not in out
    assert telemetry_summary(rows, 0, 10 * S)["cpu.power.estimated"]["method"] == "estimated"
