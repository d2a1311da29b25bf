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
    assert summary["notes"] == ["no iteration was measured"]
