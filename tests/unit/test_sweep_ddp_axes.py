"""The data-parallel sweep axes: ranks, bucket_mb, grad_accum (torch options) and loader_workers (input-pipeline).
Each value is checked against the spec option's own bounds as it is parsed; every point carries its values at
the right spec paths; a knob's scaling curve (ranks 1, 2, 4) runs back to back; a point whose batch does not
split over its ranks is impossible with the spec's reason."""

from __future__ import annotations

import pytest

from console.sweep import SweepError, SweepGrid, expand
from console.sweep.expansion import _apply
from console.sweep.labels import point_label

BASE = {"model": "mlp", "mode": "training", "batch": 4, "duration_s": 0.3, "warmup_s": 0.1}


@pytest.mark.parametrize(("texts", "option", "said"), [
    ({"ranks": "0"}, "--ranks", "must be a whole number from 1 to 1024, got 0"),
    ({"ranks": "2,x"}, "--ranks", "'x' is not a whole number (in '2,x'); give whole numbers from 1 to 1024"),
    ({"ranks": "1,2,2"}, "--ranks", "2 appears twice"),
    ({"bucket_mb": "x"}, "--bucket-mb", "'x' is not a number (in 'x')"),
    ({"bucket_mb": "0"}, "--bucket-mb", "must be a number > 0 and ≤ 4,096 MB, got 0"),
    ({"bucket_mb": "nan"}, "--bucket-mb", "must be a number > 0"),
    ({"grad_accum": "1.5"}, "--grad-accum", "'1.5' is not a whole number"),
    ({"grad_accum": "0"}, "--grad-accum", "from 1 to 1024, got 0"),
    ({"loader_workers": "-1"}, "--loader-workers", "from 0 to 64, got -1"),
    ({"loader_workers": ""}, "--loader-workers", "empty list: give comma-separated values, e.g. 0,2,4"),
])
def test_each_value_is_refused_naming_the_option_and_the_rule(texts, option, said):
    with pytest.raises(SweepError) as info:
        SweepGrid.parse(**texts)
    assert info.value.axis == option and said in str(info.value)


def test_values_are_parsed_in_their_kinds():
    grid = SweepGrid.parse(ranks="1, 2,4", bucket_mb="0.5,25", grad_accum="1,2", loader_workers="0,2")
    assert grid.to_dict() == {"bucket_mb": [0.5, 25], "grad_accum": [1, 2], "loader_workers": [0, 2],
                              "ranks": [1, 2, 4]}
    assert SweepGrid.from_dict(grid.to_dict()) == grid  # as the history stores it


def test_points_carry_their_values_at_the_spec_paths_each_knobs_ranks_back_to_back():
    expansion = expand(BASE, SweepGrid.parse(ranks="1,2", bucket_mb="10,25", grad_accum="1,2"), strict=True)
    points = [p["point"] for p in expansion.points]
    assert points == [{"bucket_mb": b, "grad_accum": a, "ranks": r} for b in (10, 25) for a in (1, 2) for r in (1, 2)]
    torch = [p["spec"]["engine_options"]["torch"] for p in expansion.points]
    assert [(t["bucket_mb"], t["grad_accum"], t["ranks"]) for t in torch] == [
        (b, a, r) for b in (10, 25) for a in (1, 2) for r in (1, 2)]
    assert all(t["scaling"] == "strong" and t["ranks_cluster"] is None for t in torch)
    assert expansion.points[1]["label"] == "10 MB buckets · accum 1 · 2 ranks"
    assert BASE == {"model": "mlp", "mode": "training", "batch": 4, "duration_s": 0.3, "warmup_s": 0.1}


def test_the_base_engine_options_are_kept_beside_the_swept_one():
    base = {**BASE, "engine_options": {"torch": {"ranks_cluster": "10.0.0.5:6379", "scaling": "weak"}}}
    spec = _apply(base, {"ranks": 4, "loader_workers": 3, "batch": 8})
    assert spec["engine_options"]["torch"] == {"ranks_cluster": "10.0.0.5:6379", "scaling": "weak", "ranks": 4}
    assert spec["scenario_options"] == {"loader_workers": 3} and spec["batch"] == 8
    assert base["engine_options"]["torch"] == {"ranks_cluster": "10.0.0.5:6379", "scaling": "weak"}


def test_a_batch_that_does_not_split_over_the_ranks_is_an_impossible_point():
    expansion = expand({**BASE, "batch": 6}, SweepGrid.parse(ranks="1,2,4"))
    assert [p["point"]["ranks"] for p in expansion.points] == [1, 2]
    [impossible] = expansion.impossible
    assert impossible["label"] == "4 ranks" and impossible["field"] == "torch.ranks"
    assert "--batch 6 does not split over 4 ranks" in impossible["reason"]


def test_ranks_need_training_which_the_points_say():
    with pytest.raises(SweepError) as info:
        expand({"model": "mlp"}, SweepGrid.parse(ranks="1,2"))
    assert info.value.headline == "no point of the grid can run"
    assert [p["field"] for p in info.value.impossible] == ["torch.ranks"] * 2
    assert "add --mode training --engine torch" in info.value.impossible[0]["reason"]


def test_loader_workers_need_the_input_pipeline_scenario():
    with pytest.raises(SweepError) as info:
        expand(BASE, SweepGrid.parse(loader_workers="0,2"))
    assert info.value.axis == "--loader-workers" and "--scenario input-pipeline --data-dir DIR" in str(info.value)


def test_labels_name_each_axis_in_its_unit():
    point = {"ranks": 1, "bucket_mb": 0.5, "grad_accum": 4, "loader_workers": 1, "batch": 8}
    assert point_label(point) == "0.5 MB buckets · accum 4 · 1 loader · 1 rank · b8"
    assert point_label({"ranks": 4, "loader_workers": 0}) == "0 loaders · 4 ranks"
