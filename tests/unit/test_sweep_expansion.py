"""Sweep expansion (console.sweep.expansion): every point validated before anything runs, impossible points
with their reason, capability checks against the discovered targets."""

from __future__ import annotations

import pytest
from sweep_samples import BASE, TARGETS

from console.sweep import SweepError, SweepGrid, expand, impossible_lines


def test_expansion_validates_every_point_batch_fastest():
    grid = SweepGrid.parse(batch="1,2,4", threads="1,2")
    expansion = expand(BASE, grid)
    assert expansion.impossible == []
    assert [p["point"] for p in expansion.points] == [
        {"threads": t, "batch": b} for t in (1, 2) for b in (1, 2, 4)]
    assert [p["index"] for p in expansion.points] == list(range(6))
    first = expansion.points[0]
    assert first["label"] == "1 thread · b1" and expansion.points[-1]["label"] == "2 threads · b4"
    assert first["spec"]["batch"] == 1 and first["spec"]["threads"] == 1
    assert first["spec"]["duration_s"] == 0.3 and first["spec"]["model"] == "mlp"
    assert expand(BASE, grid).points == expansion.points  # deterministic
    assert BASE == {"model": "mlp", "duration_s": 0.3, "warmup_s": 0.1}  # the base is not mutated


def test_impossible_points_are_listed_with_their_reason_and_skipped():
    grid = SweepGrid.parse(batch="1,2", engine="torch,onnxruntime", precision="fp32,bf16")
    expansion = expand(BASE, grid, targets=TARGETS)
    assert len(expansion.points) == 6
    assert [p["label"] for p in expansion.impossible] == ["onnxruntime · bf16 · b1", "onnxruntime · bf16 · b2"]
    assert all(p["reason"] == "onnxruntime offers no bf16 on cpu (it offers fp32, int8)"
               for p in expansion.impossible)
    assert impossible_lines(expansion.impossible) == [
        "onnxruntime · bf16 · b1, onnxruntime · bf16 · b2 — onnxruntime offers no bf16 on cpu (it offers fp32, int8)"]
    with pytest.raises(SweepError) as info:
        expand(BASE, grid, targets=TARGETS, strict=True)
    assert info.value.headline == "2 of 8 points cannot run" and len(info.value.impossible) == 2
    assert "onnxruntime offers no bf16" in str(info.value)


def test_spec_level_impossibility_is_a_point_reason():
    grid = SweepGrid.parse(batch="1,2", engine="torch,onnxruntime")
    expansion = expand({**BASE, "mode": "training"}, grid)
    assert [p["point"]["engine"] for p in expansion.points] == ["torch", "torch"]
    assert {p["field"] for p in expansion.impossible} == {"mode"}
    assert "training runs need --engine torch" in expansion.impossible[0]["reason"]


def test_a_grid_with_no_possible_point_is_an_error():
    with pytest.raises(SweepError) as info:
        expand(BASE, SweepGrid.parse(batch="1,2", target="cuda:0"), targets=TARGETS)
    assert "cuda:0 is not usable here" in str(info.value) and "CPU-only" in str(info.value)
    assert "(all 2 points)" in str(info.value)
    with pytest.raises(SweepError) as info:
        expand(BASE, SweepGrid.parse(batch="1", target="cuda:0,mps"), targets=TARGETS)
    assert info.value.headline == "no point of the grid can run"
    assert len(impossible_lines(info.value.impossible)) == 2
    with pytest.raises(SweepError) as info:  # a bad base value is named as the spec field
        expand({**BASE, "duration_s": -1}, SweepGrid.parse(batch="1,2"))
    assert info.value.axis == "duration_s" and "must be a number > 0" in str(info.value)


def test_a_value_refused_on_its_own_is_an_error_not_a_skip():
    with pytest.raises(SweepError, match="--target: unknown target 'gpu'"):
        expand(BASE, SweepGrid.parse(batch="1", target="cpu,gpu"))
    with pytest.raises(SweepError, match="--batch: must be a whole number from 1 to 65536"):
        expand(BASE, SweepGrid.parse(batch="1,70000"))


def test_cuda_validates_at_spec_level_without_targets():
    expansion = expand(BASE, SweepGrid.parse(batch="1", target="cpu,cuda:0"))
    assert [p["point"]["target"] for p in expansion.points] == ["cpu", "cuda:0"]


def test_unknown_targets_and_missing_discovery():
    with pytest.raises(SweepError, match="target mps is not on this machine"):
        expand(BASE, SweepGrid.parse(batch="1", target="mps"), targets=TARGETS[:2])
    with pytest.raises(SweepError, match="cuda:1 is not usable here: this PyTorch is a CPU-only build"):
        expand(BASE, SweepGrid.parse(batch="1", target="cuda:1"), targets=TARGETS)
    # discovery failed (no engine details): nothing is refused, the worker decides
    unknown = [{"id": "cpu", "available": True, "engine_details": {}}]
    assert len(expand(BASE, SweepGrid.parse(batch="1", precision="bf16"), targets=unknown).points) == 1


def test_request_rates_set_the_server_scenario_option():
    expansion = expand({**BASE, "scenario": "server"}, SweepGrid.parse(qps="10,20.5"))
    assert [p["spec"]["scenario_options"]["qps"] for p in expansion.points] == [10, 20.5]
    assert [p["label"] for p in expansion.points] == ["10 qps", "20.5 qps"]
    with pytest.raises(SweepError, match="--qps: request rates apply to the server"):
        expand(BASE, SweepGrid.parse(qps="10"))
