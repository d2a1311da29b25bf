import numpy as np
import pytest

from console.analysis import summarize


def test_percentiles_and_throughput_come_from_the_recorded_latencies():
    latency_ns = np.arange(1, 1001, dtype=np.int64) * 1_000_000  # 1 … 1000 ms
    result = {"measured_s": 10.0, "first_inference_ms": 5.0, "warmup_iterations": 3}
    summary = summarize(latency_ns, result, {"load_s": 0.25}, batch=4)
    lat = summary["latency_ms"]
    assert lat["p50"] == pytest.approx(500.5)
    assert lat["p90"] == pytest.approx(900.1)
    assert lat["p99"] == pytest.approx(990.01)
    assert lat["min"] == 1 and lat["max"] == 1000 and lat["mean"] == pytest.approx(500.5)
    assert summary["throughput_per_s"] == pytest.approx(1000 * 4 / 10.0)
    assert summary["iterations"] == 1000 and summary["load_s"] == 0.25
    assert "measured" in summary["method"]


def test_no_iterations_gives_no_numbers_rather_than_zeros():
    summary = summarize(np.empty(0, dtype=np.int64), None, None, batch=1)
    assert summary["latency_ms"]["p50"] is None
    assert summary["throughput_per_s"] is None
    assert summary["notes"] == ["no iteration was measured — check the run's error"]
    assert summary["valid"] is False


def test_a_percentile_without_enough_samples_is_withheld_with_the_fix():
    rng = np.random.default_rng(0)
    latency_ns = (1e6 * (1 + rng.random(200))).astype(np.int64)  # 200 samples: p90 backed (64), p99 not (662)
    t_ns = np.cumsum(latency_ns)
    summary = summarize(latency_ns, {"measured_s": 3.0}, None, batch=1, t_ns=t_ns)
    lat = summary["latency_ms"]
    assert lat["p50"] is not None and lat["p90"] is not None and lat["p99"] is None
    low, high = lat["ci95"]["p50"]
    assert low <= lat["p50"] <= high
    assert summary["valid"] is False
    rules = {r["rule"] for r in summary["invalid_reasons"]}
    assert "percentile_p99" in rules
    assert any("662" in note for note in summary["notes"])


def test_energy_and_telemetry_are_summarised_over_the_measurement_window():
    latency_ns = np.full(1000, 2_000_000, dtype=np.int64)
    t_ns = np.arange(1000, dtype=np.int64) * 2_000_000
    # An estimated CPU power of 50 W from t=0 to t=2 s, sampled at 10 Hz: 100 J over the window.
    samples = [(int(i * 1e8), "estimated", "cpu.power.estimated", 50.0, "W", "estimated") for i in range(21)]
    samples += [(int(i * 1e8), "psutil", "cpu.util", 40.0, "%", "measured") for i in range(21)]
    summary = summarize(latency_ns, {"measured_s": 2.0}, None, batch=1, t_ns=t_ns, samples=samples,
                        window_ns=(0, 2_000_000_000))
    energy = summary["energy"]
    assert energy["method"] == "estimated"
    assert energy["joules"] == pytest.approx(100.0, rel=0.01)
    assert energy["joules_per_inference"] == pytest.approx(0.1, rel=0.01)
    assert summary["telemetry"]["cpu.util"]["mean"] == pytest.approx(40.0)


def test_a_scenario_that_counts_its_own_samples_sets_the_throughput():
    latency_ns = np.full(100, 5_000_000, dtype=np.int64)  # 100 queries of 8 streams each, served at batch 1
    summary = summarize(latency_ns, {"measured_s": 5.0, "samples_per_s": 160.0}, None, batch=1)
    assert summary["throughput_per_s"] == 160.0
