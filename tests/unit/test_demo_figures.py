"""Demo mode's figures: the last second's latency and throughput, power by its best method (an estimate says
so, a missing sensor says why), and a race's verdict with its interval from console.analysis.compare."""

import numpy as np
import pytest

from console.demo import figures

MS = 1_000_000


def batch(start_ms, count, latency_ms, step_ms=None):
    step = step_ms or latency_ms
    t = (start_ms + np.arange(count) * step) * MS
    return t.astype(np.int64), np.full(count, latency_ms * MS, dtype=np.int64)


def test_live_latency_and_throughput_cover_the_last_second():
    live = figures.LiveRun(batch=4)
    assert live.latency_ms() is None and live.throughput() is None
    live.add_latencies(*batch(0, 1000, 2.0))  # 0–2 s at 2 ms
    live.add_latencies(*batch(2000, 1000, 1.0))  # 2–3 s at 1 ms: the last second
    assert live.iterations == 2000
    assert live.latency_ms() == pytest.approx(1.0)
    assert live.throughput() == pytest.approx(4 * 1000 / 1.0, rel=0.01)  # samples per second at batch 4
    t, _ = live.recent()
    assert t.min() >= (3000 - 1001) * MS


def row(metric, value, method="measured", unit="W", t_ms=0):
    return (t_ms * MS, "src", metric, value, unit, method)


def test_power_takes_the_best_method_per_group_and_labels_an_estimate():
    live = figures.LiveRun()
    live.add_samples([row("cpu.power.estimated", 50.0, "estimated"), row("mem.power.estimated", 5.0, "estimated"),
                      row("cpu.util", 80.0, unit="%")])
    reading = live.power()
    assert reading.estimated and reading.watts == pytest.approx(55.0) and reading.scope == "cpu"
    live.add_samples([row("rapl.package-0.power", 40.0, t_ms=100), row("rapl.package-0.power", 44.0, t_ms=200),
                      row("rapl.dram-0.power", 6.0, t_ms=200)])
    reading = live.power()  # measured RAPL wins over the estimate for the cpu group: package + dram summed
    assert not reading.estimated and reading.method == "measured" and reading.watts == pytest.approx(48.0)
    live.add_samples([row("gpu0.power.instant", 200.0, t_ms=300), row("gpu0.power.avg", 150.0, t_ms=300)])
    reading = live.power()
    assert reading.scope == "cpu+gpu0" and reading.watts == pytest.approx(248.0)  # instant before the 1-s average
    wrong = figures.LiveRun()
    wrong.add_samples([row("rapl.package-0.power", 40.0, "estimated")])  # not as the metric is declared
    assert wrong.power() is None


def test_a_missing_power_sensor_says_why():
    sources = [{"name": "psutil", "available": True},
               {"name": "nvml", "available": False, "reason": "NVML library (libnvidia-ml.so.1) not found: no driver"},
               {"name": "rapl", "available": False, "reason": "no /sys/class/powercap: RAPL is Linux"},
               {"name": "estimated", "available": False, "reason": "TDP of 'X' is not in the table: set it"}]
    assert figures.power_missing([]) is None
    assert figures.power_missing(sources) == "no power source on this machine (nvml, rapl, estimated)"
    detailed = figures.power_missing(sources, detailed=True)
    assert detailed == ("nvml: NVML library not found · rapl: no /sys/class/powercap · "
                        "estimated: TDP of 'X' is not in the table")
    sources[3]["available"] = True
    assert figures.power_missing(sources) is None


def test_final_power_comes_from_the_runs_energy_with_its_method():
    summary = {"energy": {"joules": 30.0, "window": {"seconds": 3.0}, "method": "estimated", "scope": "cpu",
                          "joules_per_inference": 0.01}}
    reading = figures.final_power(summary)
    assert reading.watts == pytest.approx(10.0) and reading.estimated and reading.joules_per_inference == 0.01
    assert figures.final_power({"energy": {"joules": None, "reason": "no samples"}}) is None
    assert figures.final_power_reason({"energy": {"joules": None, "reason": "no samples"}}) == "no samples"


def test_validity_line_quotes_the_first_failed_rule():
    assert figures.validity_line({"valid": True})[0] is True
    valid, line = figures.validity_line({"valid": False, "invalid_reasons": [
        {"detail": "measured 0.3 s, the minimum is 2 s"}, {"detail": "p99 needs 662"}]})
    assert not valid and line == "NOT VALID: measured 0.3 s, the minimum is 2 s (+1 more)"


def rounds(median_ms, count=3, n=400, seed=0, valid=True):
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(count):
        lat = (median_ms * (1 + 0.05 * rng.standard_normal(n))).clip(min=0.01) * MS
        out.append(figures.Round(lat.astype(np.int64), {"iterations": n, "duration_s": n * median_ms / 1e3,
                                                          "throughput_per_s": 1e3 / median_ms, "valid": valid}))
    return out


def test_a_race_verdict_names_the_winner_with_its_interval():
    verdict = figures.race_verdict(rounds(2.0), rounds(1.0, seed=1), 1, 1, "PyTorch", "ONNX Runtime")
    assert verdict["winner"] == "B" and verdict["tone"] == "good"
    assert verdict["headline"] == f"ONNX Runtime is {verdict['factor']:.2f}× faster than PyTorch"
    low, high = verdict["interval"]
    assert low <= verdict["factor"] <= high and 1.7 < verdict["factor"] < 2.3
    assert verdict["lines"][0].startswith("95% CI ") and "block test p < 0.001" in verdict["lines"][0]
    assert "3 rounds each, alternating" in verdict["lines"][0]
    assert verdict["compare"]["blocks"] == [9, 9]  # each round cut into 3 consecutive blocks


def test_a_race_without_a_difference_says_so_and_batches_compare_per_sample():
    same = figures.race_verdict(rounds(1.0), rounds(1.0, seed=2), 1, 1, "A side", "B side")
    assert same["winner"] is None and same["headline"].startswith(("Equally fast within ±2%", "Could not tell apart",
                                                                   "Not shown"))
    assert "noise band ±2%" in same["lines"][0]
    # equally fast is claimed only when the whole interval lies inside the band; else what was resolved
    low, high = same["compare"]["ci95"]
    assert (same["headline"] == "Equally fast within ±2%") == (0.98 <= low and high <= 1.02)
    assert same["lines"][1].startswith("B is between ") and "cannot be resolved" in same["lines"][1]
    assert "equally" not in figures.race_verdict(rounds(1.0), rounds(1.1, seed=2), 1, 1, "A", "B")["headline"].lower()
    # batch 8 taking 4× as long per call does twice the work per second: B wins per sample
    per_sample = figures.race_verdict(rounds(1.0), rounds(4.0, seed=3, valid=False), 1, 8, "batch 1", "batch 8")
    assert per_sample["per_sample"] and per_sample["winner"] == "B"
    assert per_sample["headline"].endswith("faster than batch 1 per sample")
    assert "3 of 6 runs not VALID" in per_sample["lines"][-1]


def test_side_figures_pool_the_completed_rounds():
    side = figures.side_figures(rounds(2.0, count=2), batch=1)
    assert side["rounds"] == 2 and side["latency_ms"] == pytest.approx(2.0, rel=0.02)
    assert side["throughput"] == pytest.approx(500.0) and side["power"] is None
    assert figures.side_figures([], 1)["latency_ms"] is None
