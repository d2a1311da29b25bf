"""console.analysis.scaling_waterfall: from the ideal N-rank step to the measured one, bar by bar."""

from __future__ import annotations

import pytest
from ddp_samples import MS, steps

from console.analysis.scaling_waterfall import BARS, waterfall
from engines.ddp.breakdown import summarize


def _bd(ranks, scaling="strong", **kw):
    return summarize(steps(ranks, **kw), hosts=None, scaling=scaling, global_batch=8)


def test_strong_scaling_starts_at_t1_over_n_and_ends_at_the_measured_step():
    one = _bd(1, forward_ms=20.0, backward_ms=40.0)
    two = _bd(2, forward_ms=10.0, backward_ms=20.0, slow={1: 5.0}, exposed_ms=3.0)
    w = waterfall(two, one, 2, "strong")
    assert [b["name"] for b in w["bars"]] == list(BARS)
    assert w["ideal_s"] == pytest.approx(one["step_s"]["mean"] / 2)
    assert w["ends_at_measured"] and w["bars"][-1]["to_s"] == pytest.approx(two["step_s"]["mean"], abs=1e-9)
    assert w["adds_up"] and w["closure_n"] == pytest.approx(1.0)
    bars = {b["name"]: b for b in w["bars"]}
    # per-rank compute halves (30 of 60 ms): no compute loss; the optimizer (3 ms on every rank) does not halve
    assert bars["compute"]["delta_s"] == pytest.approx(0.0, abs=0.5 * MS)
    assert bars["optimizer"]["delta_s"] == pytest.approx(3 * MS - 3 * MS / 2)
    assert bars["straggler"]["delta_s"] == pytest.approx(5 * MS, abs=0.5 * MS)
    assert bars["exposed communication"]["delta_s"] == pytest.approx(3 * MS)
    for previous, bar in zip(w["bars"], w["bars"][1:], strict=False):
        assert bar["from_s"] == previous["to_s"] and bar["how"]


def test_weak_scaling_starts_at_t1_and_ends_at_the_measured_step():
    one = _bd(1, scaling="weak")
    four = _bd(4, scaling="weak", exposed_ms=6.0, data_ms=5.0)
    w = waterfall(four, one, 4, "weak")
    assert w["ideal_s"] == pytest.approx(one["step_s"]["mean"])
    assert w["ends_at_measured"]
    bars = {b["name"]: b for b in w["bars"]}
    assert bars["data wait"]["delta_s"] == pytest.approx(3 * MS)  # 5 ms at 4 ranks against 2 ms at one
    assert bars["optimizer"]["delta_s"] == pytest.approx(0.0)


def test_unattributed_time_is_its_own_bar_and_breaks_adds_up():
    per_rank = steps(2)
    for rank in per_rank:
        rank["step_s"] = [s + 8 * MS for s in rank["step_s"]]
    two = summarize(per_rank, hosts=None, scaling="strong", global_batch=8)
    w = waterfall(two, _bd(1), 2, "strong")
    assert w["ends_at_measured"] and not w["adds_up"]
    assert w["bars"][-1]["name"] == "unattributed" and w["bars"][-1]["delta_s"] == pytest.approx(8 * MS)


def test_the_gradient_copy_back_is_its_own_bar_and_an_older_breakdown_has_it_unattributed():
    one = _bd(1)
    two = _bd(2, copy_ms=1.3)
    bars = {b["name"]: b for b in waterfall(two, one, 2, "strong")["bars"]}
    assert bars["gradient copy-back"]["delta_s"] == pytest.approx(1.3 * MS)  # no DDP, no copy-back, on one rank
    assert "gradient_as_bucket_view" in bars["gradient copy-back"]["how"]
    assert bars["unattributed"]["delta_s"] == pytest.approx(0.0, abs=1e-9)
    older = {**two, "parts": {k: v for k, v in two["parts"].items() if k != "grad_copy_s"}}
    older["unattributed_s"] = two["unattributed_s"] + two["parts"]["grad_copy_s"]  # as it was stored before
    w = waterfall(older, one, 2, "strong")
    bars = {b["name"]: b for b in w["bars"]}
    assert w["ends_at_measured"] and bars["gradient copy-back"]["delta_s"] == 0.0
    assert bars["unattributed"]["delta_s"] == pytest.approx(1.3 * MS)


def test_bad_input_is_refused_with_the_fix():
    one, two = _bd(1), _bd(2)
    with pytest.raises(ValueError, match="not 4"):
        waterfall(two, one, 4, "strong")
    with pytest.raises(ValueError, match="1-rank run"):
        waterfall(two, two, 2, "strong")
    with pytest.raises(ValueError, match="'strong' or 'weak'"):
        waterfall(two, one, 2, "both")
    with pytest.raises(ValueError, match="missing"):
        waterfall(two, None, 2, "strong")
    with pytest.raises(ValueError, match="lacks straggler_s"):
        waterfall({**two, "parts": {k: v for k, v in two["parts"].items() if k != "straggler_s"}}, one, 2, "strong")
