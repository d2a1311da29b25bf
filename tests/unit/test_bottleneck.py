"""The verdict on canned runs: every class, the two "never" rules, ties, counters, determinism."""

import copy
import json

import pytest
from analysis_samples import CARD, MIB, cached_run, gemm_run, op, reduction_run, run, stream_run, tiny_run

from console.analysis.bottleneck import CLASSES, diagnose, noise_band


def verdict_of(r):
    v = diagnose(r)
    json.dumps(v)  # plain data, for --json and the history
    assert set(v) == {"class", "confidence", "evidence", "recommendation", "secondary", "scores", "sentence"}
    assert 0.0 <= v["confidence"] <= 1.0 and set(v["scores"]) == set(CLASSES)
    assert v["sentence"].endswith(".") and "\n" not in v["sentence"]
    return v


def test_gemm_chain_is_compute_with_its_numbers():
    v = verdict_of(gemm_run())
    assert v["class"] == "compute" and v["confidence"] >= 0.7
    ev = v["evidence"]
    assert ev["achieved_gflop_s"] == pytest.approx(50, rel=0.01) and ev["peak_gflop_s"] == 100
    assert ev["intensity_flop_per_byte"] > ev["ridge_flop_per_byte"]
    assert "bf16" in v["recommendation"] and "Bound by compute" in v["sentence"]


def test_streaming_beyond_the_llc_is_memory_bandwidth():
    v = verdict_of(stream_run())
    assert v["class"] == "memory-bandwidth" and v["confidence"] >= 0.7
    assert v["evidence"]["working_set_mb"] > v["evidence"]["llc_mb"]
    assert v["evidence"]["bandwidth_utilisation"] == pytest.approx(0.9, abs=0.01)
    assert "fuse" in v["recommendation"]


def test_a_reduction_over_a_large_tensor_is_memory_bandwidth():
    assert verdict_of(reduction_run())["class"] == "memory-bandwidth"


def test_the_same_graph_in_cache_is_cache_resident():
    v = verdict_of(cached_run())
    assert v["class"] == "cache-resident"
    assert v["evidence"]["working_set_mb"] < v["evidence"]["llc_mb"]


def test_never_memory_bound_when_the_working_set_fits_even_at_dram_speed():
    """A cache-sized working set moving bytes at exactly the DRAM roof is still not memory-bandwidth-bound."""
    v = verdict_of(cached_run(achieved=10e9))
    assert v["class"] != "memory-bandwidth" and v["scores"]["memory-bandwidth"] == 0.0
    assert v["class"] == "cache-resident"


def test_thousands_of_tiny_ops_are_host_overhead():
    v = verdict_of(tiny_run())
    assert v["class"] == "host-overhead" and v["confidence"] >= 0.7
    assert v["evidence"]["calls_per_iteration"] == 2000 and v["evidence"]["time_per_call_us"] == 2.0
    assert v["evidence"]["time_outside_ops"] == pytest.approx(2 / 3, abs=0.01)
    assert "larger batch" in v["recommendation"]


def test_never_compute_for_tiny_ops_even_when_they_are_gemms_above_the_ridge():
    # 5000 tiny GEMM calls per iteration, each "above the ridge" and at 50% of the peak on paper
    tiny_gemms = run([op("aten::mm", 50000, 0.1, flops=50000 * 1e5, moved=50000 * 2e3)], wall_s=0.12)
    v = verdict_of(tiny_gemms)
    assert v["class"] != "compute" and v["scores"]["compute"] == 0.0
    assert v["class"] == "host-overhead"


def test_a_large_gap_between_wall_and_op_time_is_host_overhead():
    # few ops, not tiny, but 80% of the wall time is spent outside them (Python, dispatch)
    r = run([op("aten::addmm", 10, 0.02, flops=10 * 0.1e9, moved=10 * 4e6)], wall_s=0.1)
    v = verdict_of(r)
    assert v["class"] == "host-overhead" and v["scores"]["compute"] == 0.0


def test_input_pipeline_from_the_scenario_wait_fraction():
    v = verdict_of(gemm_run(scenario={"wait_fraction": 0.7, "samples_per_s": 120.0, "disk_mb_s": 480.0}))
    assert v["class"] == "input-pipeline" and v["evidence"]["wait_fraction"] == 0.7
    assert v["evidence"]["storage_read_gb_s"] == 0.5 and v["secondary"] == "compute"
    assert "loader workers" in v["recommendation"]


def test_host_device_transfer_on_a_gpu_run():
    gpu_card = {**CARD, "target": "cuda:0", "device_memory_bandwidth_gbs": 1000.0, "peak_flops": {"fp32": 20e12}}
    r = run([op("Memcpy", 100, 0.06, moved=100 * 64 * MIB), op("MatMul", 100, 0.04, flops=100 * 1e9, moved=100 * 1e7)],
            engine="onnxruntime", target="cuda:0", card=gpu_card)
    v = verdict_of(r)
    assert v["class"] == "host-device-transfer" and v["evidence"]["copy_share"] == pytest.approx(0.6)
    assert "pinned memory" in v["recommendation"]


def test_copies_on_a_cpu_run_are_memory_traffic_not_transfers():
    r = run([op("aten::copy_", 20, 20 * 128 * MIB / 9e9, moved=20 * 128 * MIB)])
    v = verdict_of(r)
    assert v["scores"]["host-device-transfer"] == 0.0 and v["class"] == "memory-bandwidth"


def test_memory_capacity_from_swap_and_memory_near_the_total():
    swapping = {"swap.used": {"min": 0.1, "max": 2.5, "mean": 1.0}, "mem.used": {"max": 15.8}, "mem.total": {"max": 16}}
    v = verdict_of(gemm_run(telemetry=swapping))
    assert v["class"] == "memory-capacity" and v["evidence"]["swap_growth_gib"] == 2.4
    assert v["evidence"]["mem.used_fraction"] == pytest.approx(0.988, abs=0.001)


def test_throttling_from_gpu_reasons_and_clock_drops():
    thermal = {"gpu0.throttle": {"bits": 0x40}, "gpu0.clock.sm": {"min": 1200, "max": 1980}}
    v = verdict_of(gemm_run(telemetry=thermal))
    assert v["class"] == "throttling" and v["evidence"]["gpu0.throttle_bits"] == "0x40"
    idle_only = verdict_of(gemm_run(telemetry={"gpu0.throttle": {"bits": 0x1}}))  # gpu_idle is not throttling
    assert idle_only["class"] == "compute"
    cpu = verdict_of(gemm_run(telemetry={"cpu.freq": {"min": 1500, "max": 3000}}))
    assert cpu["class"] == "throttling" and cpu["evidence"]["cpu.freq_drop"] == 0.5


def half_and_half(**kw):
    """Half the op time in GEMMs at 30% of the peak, half streaming 128 MiB per call at 4 GB/s (40% of the roof)."""
    return run([op("aten::addmm", 10, 0.3, flops=0.3 * 30e9, moved=10 * 4e6),
                op("aten::add", 10, 0.3, moved=0.3 * 4e9)], **kw)


def test_two_explanations_within_the_noise_are_inconclusive():
    v = verdict_of(half_and_half())
    assert v["class"] == "inconclusive"
    assert {v["evidence"]["best"].split()[0], v["evidence"]["runner_up"].split()[0]} == {"compute", "memory-bandwidth"}
    assert "sweep" in v["recommendation"]
    noisy = verdict_of(gemm_run(cv=0.2))  # the band widens with the run's own variation
    assert noisy["evidence"]["noise_band"] == 0.25
    assert noise_band({"cv": 0.01}) == 0.1 and noise_band({}) == 0.1


def test_nothing_scoring_is_inconclusive_with_no_secondary():
    v = verdict_of(run([op("aten::view", 10, 0.01)], wall_s=0.0105))
    assert v["class"] == "inconclusive" and v["secondary"] is None


def test_without_a_card_the_verdict_comes_from_timings_and_says_so():
    v = verdict_of(tiny_run(card=None))
    assert v["class"] == "host-overhead" and "no machine card" in v["evidence"]["notes"]
    assert "default" in str(v["evidence"]["call_floor_us"])
    gemm = verdict_of(gemm_run(card=None))
    assert gemm["class"] == "compute"
    # no cache size: 134 MB per call overflows every LLC, 2 MB is undecidable (never called memory-bound)
    assert verdict_of(stream_run(card=None))["class"] == "memory-bandwidth"
    unsure = verdict_of(cached_run(card=None))
    assert unsure["class"] == "inconclusive" and unsure["scores"]["memory-bandwidth"] == 0.4


def test_counters_are_extra_evidence_and_their_absence_is_said():
    plain = verdict_of(stream_run())
    assert "counters not available (no counter data" in plain["evidence"]["notes"]
    missing = verdict_of(stream_run(counters={"available": False, "reason": "perf_event_paranoid is 3"}))
    assert "perf_event_paranoid is 3" in missing["evidence"]["notes"]
    counters = {"available": True, "reason": "", "ipc": 0.4, "llc_miss_rate": 0.6,
                "topdown": {"retiring": 0.1, "bad_speculation": 0.0, "frontend_bound": 0.05, "backend_bound": 0.85,
                            "memory_bound": 0.7}, "method": "perf stat"}
    tie = verdict_of(half_and_half())
    with_counters = verdict_of(half_and_half(counters=counters))  # the counters break the tie
    assert tie["class"] == "inconclusive" and with_counters["class"] == "memory-bandwidth"
    assert with_counters["scores"]["memory-bandwidth"] > tie["scores"]["memory-bandwidth"]
    assert with_counters["evidence"]["topdown_memory_bound"] == 0.7 and with_counters["evidence"]["llc_miss_rate"] == 0.6
    # counters never overturn the cache rule
    cached = verdict_of(cached_run(counters=counters))
    assert cached["class"] == "cache-resident" and cached["scores"]["memory-bandwidth"] == 0.0


def test_diagnose_is_deterministic_and_leaves_its_input_alone():
    r = stream_run()
    before = copy.deepcopy(r)
    assert diagnose(r) == diagnose(copy.deepcopy(r))
    assert r == before


def gemv_run(**kw):
    """catalog `mlp` at batch 1, as the profiler saw it on a 2-core VM: three linears (batch-1 GEMVs, intensity
    0.5 FLOP/byte, 2.6 MB of weights per call) take 88% of op time at 3.2 GFLOP/s, the activations the rest."""
    per_call = 2.6e6
    return run([op("aten::linear", 30, 30 * per_call * 0.5 / 3.2e9, flops=30 * per_call * 0.5, moved=30 * per_call),
                op("aten::gelu", 20, 0.0033, moved=20 * 16e3)], **kw)


def test_without_a_card_a_gemm_below_every_ridge_is_never_compute():
    """The window once stored "Bound by compute (71% confident): … intensity 0.498 FLOP/byte" for this run; no
    machine has its ridge under MIN_RIDGE, so without roofs the thin GEMMs count as memory traffic and the verdict
    says the card is what is missing."""
    v = verdict_of(gemv_run(card=None, cv=0.02))
    assert v["class"] == "inconclusive" and v["scores"]["compute"] == 0.0
    assert v["sentence"].startswith("Inconclusive: no machine card")
    assert v["evidence"]["missing"] == "machine card" and "labconsole machine" in v["recommendation"]
    # with this machine's card (33.5 MB LLC) the same run is what it is: cache-resident
    card = {**CARD, "llc_bytes": 33_500_000, "peak_flops": {"fp32": 150e9}}
    assert verdict_of(gemv_run(card=card))["class"] == "cache-resident"


def test_the_conservative_ridge_holds_only_below_it():
    from console.analysis.bottleneck import MIN_RIDGE

    assert MIN_RIDGE == 1.0
    # a thin GEMM streaming 256 MB per call overflows every cache: memory-bandwidth even without a card
    big = 256 * MIB
    thin = run([op("aten::mm", 10, 10 * big / 5e9, flops=10 * big * 0.25, moved=10 * big)], card=None)
    assert verdict_of(thin)["class"] == "memory-bandwidth"
    # intensity taken from FLOPs and bytes when the row has none; at 2 FLOP/byte a GEMM may still be compute
    fat = op("aten::mm", 10, 0.2, flops=10 * 2 * 8e6, moved=10 * 8e6)
    fat["intensity"] = None
    assert verdict_of(run([fat], card=None))["class"] == "compute"
    # a card's measured ridge decides for itself (no floor on top of a measured roof)
    assert verdict_of(gemm_run())["class"] == "compute"
