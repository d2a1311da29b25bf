"""What-if projections on canned runs: each op by its binding roof, terms apart, threads, the method text."""

import json

import pytest
from analysis_samples import CARD, cached_run, gemm_run, stream_run, tiny_run

from console.analysis import whatif


def project(r, to_card=CARD, **kw):
    out = whatif.project(r["ops"], r["profile"], r["summary"], r["machine"], to_card, **kw)
    json.dumps(out)
    assert out["method"] and isinstance(out["terms"], dict)
    return out


def test_same_card_same_threads_projects_the_measured_latency():
    r = gemm_run()
    out = project(r)
    assert out["ratio"] == pytest.approx(1.0) and out["latency_ms"] == pytest.approx(r["summary"]["latency_ms"]["p50"])


def test_compute_ops_scale_with_peak_and_memory_ops_with_bandwidth():
    faster_flops = {**CARD, "host": "lab-b", "peak_flops": {"fp32": 200e9}}
    faster_memory = {**CARD, "host": "lab-b", "memory_bandwidth_gbs": 20.0}
    gemm, stream = gemm_run(), stream_run()
    assert project(gemm, faster_flops)["terms"]["compute"]["scale"] == 0.5
    # gemm: 0.4 s compute (halved by a 2× peak), 0.01 s gelu on 4 MB a call (in cache: follows the peak too),
    # 5% of the wall outside ops (call floor unchanged); twice the bandwidth changes nothing
    assert project(gemm, faster_flops)["ratio"] == pytest.approx((0.2 + 0.005 + 0.0205) / 0.4305, rel=1e-3)
    assert project(gemm, faster_memory)["ratio"] == pytest.approx(1.0)
    assert project(stream, faster_flops)["ratio"] == pytest.approx(1.0)
    assert project(stream, faster_memory)["terms"]["memory"]["scale"] == 0.5
    assert "lab-a/cpu → lab-b/cpu" in project(stream, faster_memory)["method"]


def test_an_op_is_never_projected_past_the_target_roof():
    # stream runs at 9 GB/s of 10; with 2 threads ideal would be 18 GB/s, but the card's roof is 10 GB/s
    out = project(stream_run(), threads_from=1, threads_to=2)
    memory = out["terms"]["memory"]
    assert memory["to_ms"] == pytest.approx(memory["from_ms"] * 0.9, rel=1e-6)
    assert "ideal ×2" in out["method"] and "capped" in out["method"]


def test_threads_use_measured_scaling_when_given_or_on_the_card():
    r = cached_run()  # cache-resident: scales with the compute speedup
    measured = project(r, threads_from=1, threads_to=2, thread_scaling={"compute": 1.6, "memory": 1.2})
    assert measured["terms"]["cache"]["scale"] == pytest.approx(1 / 1.6) and "measured scaling ×1.6" in measured["method"]
    card = {**CARD, "thread_scaling": {"compute": {"1": 40e9, "2": 72e9}, "memory": {"1": 6e9, "2": 9e9}}}
    r["machine"] = card
    on_card = project(r, card, threads_from=1, threads_to=2)
    assert on_card["terms"]["cache"]["scale"] == pytest.approx(40 / 72) and "card's measured" in on_card["method"]


def test_tiny_ops_and_time_outside_ops_follow_the_call_floor_not_threads():
    r = tiny_run()
    threads = project(r, threads_from=1, threads_to=2)
    assert threads["ratio"] == pytest.approx(1.0)
    lighter = {**CARD, "call_floor_us": {"torch": 4.0, "onnxruntime": 5.0}}
    out = project(r, lighter)
    assert out["terms"]["overhead"]["scale"] == 0.5 and out["terms"]["outside_ops"]["scale"] == 0.5
    assert out["ratio"] == pytest.approx(0.5)


def test_input_wait_scales_with_storage_apart_from_the_model():
    r = gemm_run(scenario={"wait_fraction": 0.5})
    fast_disk = {**CARD, "storage_read_gbs": 1.0}
    out = project(r, fast_disk)
    assert out["terms"]["input"]["scale"] == 0.5 and out["ratio"] == pytest.approx(0.75)
    assert "storage read ratio" in out["method"]
    no_storage = {**CARD, "storage_read_gbs": None}
    assert "input wait kept as measured" in project(r, no_storage)["notes"][0]


def test_throughput_follows_latency_and_error_is_relative():
    r = gemm_run()
    out = project(r, {**CARD, "peak_flops": {"fp32": 200e9}})
    assert out["throughput_per_s"] == pytest.approx(r["summary"]["throughput_per_s"] / out["ratio"])
    assert whatif.error({"latency_ms": 11.0}, 10.0) == pytest.approx(0.1)


def test_a_profile_without_op_time_is_a_clear_error():
    r = gemm_run()
    with pytest.raises(ValueError, match="no op time to project"):
        whatif.project([], {"iterations": 1, "wall_s": 0.0, "op_time_s": 0.0}, r["summary"], CARD, CARD)


def test_an_op_faster_than_the_card_roof_is_not_slowed_by_it():
    """A card measured on a busy machine can show a roof below what an op achieved: threads still speed it up."""
    r = gemm_run()  # 50 GFLOP/s achieved
    low_card = {**CARD, "peak_flops": {"fp32": 30e9}}
    r["machine"] = low_card
    out = project(r, low_card, threads_from=1, threads_to=2)
    assert out["terms"]["compute"]["to_ms"] == pytest.approx(out["terms"]["compute"]["from_ms"])
    assert any("faster than the card's roof" in n for n in out["notes"])
