"""Roofline over a machine card: roofs, the binding roof per op, efficiency, the whole-run dot, chart data."""

import json

import pytest
from analysis_samples import CARD, MIB, op

from console.analysis import roofline


def test_roofs_come_from_the_card_and_the_ridge_is_their_ratio():
    roof = roofline.roofs(CARD, "fp32")
    assert roof["peak_flops"] == 100e9 and roof["bandwidth_bytes_s"] == 10e9
    assert roof["ridge"] == pytest.approx(10.0) and roof["llc_bytes"] == 8 * MIB
    assert roofline.roofs(CARD, "bf16")["ridge"] == pytest.approx(20.0)


def test_a_precision_the_card_lacks_falls_back_to_fp32_and_says_so():
    roof = roofline.roofs(CARD, "int8")
    assert roof["precision_used"] == "fp32" and roof["peak_flops"] == 100e9
    assert "no int8 peak" in roof["note"]


def test_a_card_without_ceilings_is_a_clear_error():
    with pytest.raises(roofline.RooflineError, match="no peak_flops.*labconsole machine --refresh"):
        roofline.roofs({"target": "cpu", "peak_flops": {}, "memory_bandwidth_gbs": 10}, "fp32")
    with pytest.raises(roofline.RooflineError, match="no memory bandwidth"):
        roofline.roofs({"target": "cpu", "peak_flops": {"fp32": 1e9}}, "fp32")


def test_gpu_cards_use_device_memory_bandwidth_and_llc_falls_back_to_the_largest_cache():
    gpu = {**CARD, "target": "cuda:0", "device_memory_bandwidth_gbs": 1000.0, "llc_bytes": None}
    roof = roofline.roofs(gpu, "fp32")
    assert roof["bandwidth_bytes_s"] == 1e12 and roof["llc_bytes"] == 8 * MIB
    assert roofline.llc_bytes({"caches": {}}) is None


def test_annotate_names_the_binding_roof_and_the_efficiency():
    gemm = op("aten::addmm", 10, 0.1, flops=5e9, moved=1e8)  # intensity 50 ≥ ridge 10, 50 GFLOP/s
    stream = op("aten::add", 10, 0.1, flops=1e8, moved=1e9)  # intensity 0.1, 1 GFLOP/s; roof 1 GFLOP/s
    copy = op("aten::copy_", 10, 0.2, moved=1e9)  # no FLOPs: 5 GB/s against 10 GB/s
    blank = op("aten::view", 10, 0.001)
    out = roofline.annotate([gemm, stream, copy, blank], CARD, "fp32")
    assert [o["bound"] for o in out] == ["compute", "memory", "memory", None]
    assert out[0]["roof"] == 100e9 and out[0]["efficiency"] == pytest.approx(0.5)
    assert out[1]["roof"] == pytest.approx(1e9) and out[1]["efficiency"] == pytest.approx(1.0)
    assert out[2]["roof"] is None and out[2]["efficiency"] == pytest.approx(0.5)
    assert out[3]["efficiency"] is None
    assert "bound" not in gemm  # copies, the input is left alone


def test_cache_speed_shows_as_efficiency_above_one_and_is_not_clipped():
    fast = op("aten::add", 100, 0.01, moved=4e8)  # 40 GB/s against a 10 GB/s DRAM roof
    assert roofline.annotate([fast], CARD)[0]["efficiency"] == pytest.approx(4.0)


def test_intensity_is_derived_when_the_row_lacks_it():
    row = {"op": "MatMul", "calls": 1, "time_s": 1.0, "flops": 2e9, "bytes": 1e8, "achieved_flops_s": 2e9}
    out = roofline.annotate([row], CARD)[0]
    assert out["intensity"] == pytest.approx(20.0) and out["bound"] == "compute"


def test_run_point_and_chart_data_are_plain():
    ops = [op("aten::addmm", 10, 0.1, flops=5e9, moved=1e8), op("aten::add", 10, 0.1, flops=1e8, moved=1e9),
           op("aten::copy_", 10, 0.2, moved=1e9)]
    for o in ops:
        o["share"] = o["time_s"] / 0.4
    point = roofline.run_point(ops, op_time_s=0.4)
    assert point["intensity"] == pytest.approx(5.1e9 / 2.1e9) and point["achieved_flops_s"] == pytest.approx(5.1e9 / 0.4)
    data = roofline.chart_data(ops, CARD, "fp32", op_time_s=0.4)
    json.dumps(data)
    assert [r["name"] for r in data["roofs"]] == ["bf16", "fp32"]
    assert [r["selected"] for r in data["roofs"]] == [False, True]
    assert [d["op"] for d in data["dots"]] == ["aten::addmm", "aten::add"]
    assert data["not_drawn"] == ["aten::copy_"] and data["dots"][0]["share"] == pytest.approx(0.25)
    assert roofline.run_point([op("aten::copy_", 1, 0.1, moved=10)]) is None
