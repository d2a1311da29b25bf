"""The partner of a scaling run (the newest completed 1-rank run of the same spec on the same host) and the series
of a sweep or a run: points grouped per knob value, E per point against the curve's 1-rank run, the waterfall of
each point (C's, here a stand-in of the contract's shape), and "not available (why)" where something is missing."""

from __future__ import annotations

import pytest
from scaling_samples import fake_waterfall, store_run

from console.history import HistoryStore
from console.scaling import partner, series


@pytest.fixture
def store(tmp_path):
    with HistoryStore(tmp_path / "history.db") as opened:
        yield opened


def test_partner_is_the_newest_completed_one_rank_run_of_the_same_spec_on_this_host(store):
    older = store_run(store, 1, 0.100)
    chosen = store_run(store, 1, 0.101, spec_kw={"name": "baseline", "straggler_ms": 5.0})  # name etc. ignored
    store_run(store, 1, 0.1, status="failed")
    store_run(store, 1, 0.1, spec_kw={"model": "resnet18"})
    store_run(store, 1, 0.1, spec_kw={"batch": 16})
    store_run(store, 1, 0.1, spec_kw={"bucket_mb": 100.0})  # what is trained differs in a knob: not this spec
    elsewhere = store_run(store, 1, 0.1)
    store.set_host(elsewhere, {"host_id": "other-host-id", "hostname": "otherbox"})
    store_run(store, 2, 0.06)  # another N: never a partner
    target = store.get_run(store_run(store, 2, 0.060))
    found = partner(store, target)
    assert found is not None and found["run_id"] == chosen and found["run_id"] != older


def test_partner_is_none_without_a_one_rank_run_and_a_one_rank_run_is_its_own(store):
    two = store.get_run(store_run(store, 2, 0.06))
    assert partner(store, two) is None
    one = store.get_run(store_run(store, 1, 0.1))
    assert partner(store, one)["run_id"] == one["run_id"]


def sweep_of(store, values=(25.0, 100.0)):
    """ranks 1,2,4 × bucket_mb: bigger buckets scale better (less exposed communication)."""
    sweep = store.create_sweep("scaling", {"ranks": [1, 2, 4], "bucket_mb": list(values)})
    steps = {25.0: {1: 0.100, 2: 0.060, 4: 0.035}, 100.0: {1: 0.100, 2: 0.056, 4: 0.030}}
    for bucket in values:
        for ranks in (1, 2, 4):
            exposed = 0.0 if ranks == 1 else (0.008 if bucket == 25.0 else 0.003)
            store_run(store, ranks, steps[bucket][ranks], sweep=sweep, point={"ranks": ranks, "bucket_mb": bucket},
                      spec_kw={"bucket_mb": bucket}, seed=ranks, exposed_s=exposed)
    return sweep


def test_a_sweep_becomes_one_curve_per_knob_value(store):
    sweep = sweep_of(store)
    data = series(store, sweep_id=sweep, waterfall=fake_waterfall)
    assert [c["name"] for c in data["curves"]] == ["bucket_mb=25", "bucket_mb=100"]
    for curve in data["curves"]:
        assert [p["ranks"] for p in curve["points"]] == [1, 2, 4]
        one = curve["points"][0]
        assert one["e"] == 1.0 and curve["baseline_run_id"] == one["run_id"]
    four = data["curves"][1]["points"][2]
    assert four["e"] == pytest.approx(0.100 / (4 * 0.030))
    assert four["interval_95"][0] < four["e"] < four["interval_95"][1]
    assert four["waterfall"]["bars"][-1]["to_s"] == pytest.approx(0.030)  # the chain ends at the measured step
    assert four["breakdown"]["parts"]["exposed_comm_s"] == 0.003 and four["prediction"]["ratio"] == 0.9
    assert len(data["points"]) == 6 and data["levers"]["axes"][0]["axis"] == "bucket_mb"


def test_a_failed_point_is_left_out_and_a_curve_without_its_one_rank_run_says_why(store):
    sweep = store.create_sweep("no base", {"ranks": [1, 2]})
    store_run(store, 1, 0.1, status="failed", sweep=sweep)
    store_run(store, 2, 0.06, sweep=sweep)
    data = series(store, sweep_id=sweep, waterfall=fake_waterfall)
    (point,) = data["points"]
    assert point["e"] is None and "no completed 1-rank run" in point["e_missing"] and "--ranks 1" in point["e_missing"]
    assert "not_available" in point["waterfall"]
    assert data["notes"] == [point["e_missing"]]


def test_a_run_series_gathers_its_partner_and_the_same_spec_at_other_counts(store):
    base = store_run(store, 1, 0.1)
    store_run(store, 2, 0.07)  # an older 2-rank run: the newer one below wins N = 2
    two = store_run(store, 2, 0.06)
    store_run(store, 2, 0.05, spec_kw={"bucket_mb": 100.0})  # another knob value: not this series
    four = store_run(store, 4, 0.035)
    data = series(store, run_id=four, waterfall=fake_waterfall)
    assert [(p["ranks"], p["run_id"]) for p in data["points"]] == [(1, base), (2, two), (4, four)]
    assert data["baseline_run_id"] == base and data["levers"]["axes"] == []
    assert data["points"][1]["e"] == pytest.approx(0.1 / 0.12)


def test_without_the_waterfall_module_each_point_says_why(store):
    sweep = sweep_of(store, values=(25.0,))
    data = series(store, sweep_id=sweep, waterfall=None)
    try:
        import console.analysis.scaling_waterfall  # noqa: F401 — C's part, once it lands
    except ImportError:
        assert "scaling_waterfall is not in this build" in data["points"][1]["waterfall"]["not_available"]
    else:
        assert "bars" in data["points"][1]["waterfall"] or "not_available" in data["points"][1]["waterfall"]


def test_bad_requests_name_the_problem(store):
    single = store.create_run({"model": "mlp", "engine": "torch", "mode": "training", "engine_options": {}})
    store.finish_run(single, "completed", {"iterations": 1})
    with pytest.raises(ValueError, match="not a data-parallel run"):
        series(store, run_id=single)
    with pytest.raises(ValueError, match="no sweep"):
        series(store, sweep_id="feedbeef")
    with pytest.raises(ValueError, match="one of them"):
        series(store)
