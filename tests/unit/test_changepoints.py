"""Change points of a series, regressions per configuration, and the verdict against a baseline."""

from __future__ import annotations

import numpy as np
import pytest

from console.analysis import baseline, changepoints, regressions
from console.history import HistoryStore

SPEC = {"model": "mlp", "engine": "torch", "target": "cpu", "batch": 1, "scenario": "single-stream"}


def _noisy(n, seed, level=1.0, cv=0.03):
    return level * np.random.default_rng(seed).lognormal(0, cv, n)


def test_a_ten_percent_step_is_found_where_it_happened():
    values = _noisy(40, 1)
    values[22:] *= 1.10
    [point] = changepoints.detect(values)
    assert point["index"] == 22 and point["direction"] == "up"
    assert point["ci95"][0] < point["ratio"] < point["ci95"][1] and 1.05 < point["ratio"] < 1.15
    assert point["p_value"] < changepoints.ALPHA


def test_a_flat_series_and_a_step_below_the_minimum_effect_raise_nothing():
    assert changepoints.detect(_noisy(50, 2)) == []
    small = _noisy(50, 3, cv=0.002)
    small[25:] *= 1.02  # significant, but under the 5% that anyone acts on
    assert changepoints.detect(small) == []
    assert changepoints.detect(small, min_effect=0.01)[0]["index"] == 25


def test_two_steps_are_both_found_and_one_wild_run_is_not_a_step():
    values = _noisy(60, 4)
    values[20:40] *= 1.2
    values[10] *= 3
    assert [p["index"] for p in changepoints.detect(values)] == [20, 40]


@pytest.mark.parametrize("values, words", [([1.0, float("nan")] * 5, "positive, finite"), ([[1.0]], "one positive"),
                                           ([0.0] * 10, "positive")])
def test_bad_series_are_refused(values, words):
    with pytest.raises(ValueError, match=words):
        changepoints.detect(values)


def _series_run(store, p50_ms, spec=SPEC, valid=True, scale=1.0):
    run_id = store.create_run(spec)
    latencies = (np.random.default_rng(len(store.list_runs())).lognormal(0, 0.02, 200) * p50_ms * 1e6 * scale)
    store.add_latencies(run_id, np.arange(200) * 10**7, latencies.astype(np.int64))
    store.finish_run(run_id, "completed", summary={"valid": valid, "latency_ms": {"p50": float(p50_ms * scale)}})
    return run_id


def test_regressions_name_the_runs_around_the_step(tmp_path):
    with HistoryStore(tmp_path / "h.db") as store:
        medians = _noisy(16, 5)
        ids = [_series_run(store, m * (1.25 if i >= 8 else 1)) for i, m in enumerate(medians)]
        _series_run(store, 9.0, valid=False)  # invalid runs are not part of the series
        other = [_series_run(store, m, {**SPEC, "batch": 8}) for m in _noisy(16, 6)]
        found = regressions.find(store)
        assert len(found) == 1
        [item] = found
        assert item["first_bad_run"] == ids[8] and item["last_good_run"] == ids[7] and item["runs"] == 16
        assert item["configuration"]["batch"] == 1 and item["direction"] == "slower"
        assert regressions.find(store, since="2999-01-01") == []
        assert other and regressions.change_points(store.series(store.get_run(other[0])["fingerprint"])) == []


def test_a_run_against_its_baseline(tmp_path):
    with HistoryStore(tmp_path / "h.db") as store:
        first = _series_run(store, 2.0)
        store.set_baseline(first)
        slower = store.get_run(_series_run(store, 2.0, scale=1.3))
        same = store.get_run(_series_run(store, 2.0))
        # what the finished-run record does (console.analysis.finished_run._add_baseline): the stored baseline,
        # then the verdict against it
        block = baseline.verdict(slower, store.latencies(slower["run_id"])[1], *baseline.stored_baseline(store, slower))
        assert block["run_id"] == first and block["verdict"] == "slower" and block["ratio"] > 1.2
        assert block["ci95"][0] > 1.02 and block["p_value"] < 0.01
        # the same distribution: shown equivalent (the interval inside the noise band), never slower or faster
        assert baseline.verdict(same, store.latencies(same["run_id"])[1],
                                *baseline.stored_baseline(store, same))["verdict"] == "equivalent"
        assert baseline.stored_baseline(store, store.get_run(first)) is None  # it is the baseline
