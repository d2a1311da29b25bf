"""Decoder byte arithmetic against a hand computation, memory-bandwidth utilization and the KV footprint table."""

import pytest

from console.analysis import decoder
from engines.catalog import gpt_sizes

TINY = {"layers": 2, "hidden": 32, "heads": 2, "vocab": 128, "max_seq": 64}


# ---- byte counts (engines/catalog/gpt_sizes.py)
def test_parameter_counts_by_hand():
    # per block 12·32² Linear weights + 13·32 vectors; lm_head 128·32; final norm 2·32; embeddings (128 + 64)·32
    counts = gpt_sizes.parameter_counts(TINY)
    assert counts == {"linear": 2 * 12 * 32 * 32 + 128 * 32, "vectors": 2 * 13 * 32 + 2 * 32,
                      "embeddings": (128 + 64) * 32, "total": 28672 + 896 + 6144}


def test_parameter_counts_match_the_built_model():
    from engines.catalog import gpt

    for params in (TINY, gpt.catalog.params_for("gpt")):
        model = gpt.build(gpt.catalog.params_for("gpt", params))
        assert gpt_sizes.parameter_counts(params)["total"] == sum(p.numel() for p in model.parameters())


@pytest.mark.parametrize(("precision", "weights", "per_position"), [
    ("fp32", (28672 + 896) * 4, 2 * 2 * 32 * 4),
    ("bf16", (28672 + 896) * 2, 2 * 2 * 32 * 2),
    ("fp16", (28672 + 896) * 2, 2 * 2 * 32 * 2),
    ("int8", 28672 * 1 + 896 * 4, 2 * 2 * 32 * 4),  # int8 Linear weights, fp32 vectors and cache
])
def test_decode_bytes_by_hand(precision, weights, per_position):
    counts = gpt_sizes.decode_bytes(TINY, precision, batch=2, prompt_tokens=8, output_tokens=6)
    # 5 decode steps attend to 9 … 13 positions: mean 11, for each of the 2 sequences
    assert counts["weight_bytes_per_token"] == weights
    assert counts["kv_bytes_per_position"] == per_position
    assert counts["mean_attended_positions"] == 11
    assert counts["kv_read_bytes_per_token"] == 2 * 11 * per_position
    assert counts["decode_bytes_per_token"] == weights + 2 * 11 * per_position
    assert counts["sequence_tokens"] == 14 and counts["kv_cache_bytes"] == 2 * 14 * per_position
    assert counts["max_sequence_tokens"] == 64 and "not measured" in counts["method"]


def test_an_unknown_precision_is_named():
    with pytest.raises(ValueError, match="unknown precision 'fp8'; known: fp32, bf16, fp16, int8"):
        gpt_sizes.kv_bytes_per_position(TINY, "fp8")


# ---- memory-bandwidth utilization (console/analysis/decoder.py)
def scenario(**extra):
    counts = gpt_sizes.decode_bytes(TINY, "fp32", batch=2, prompt_tokens=8, output_tokens=6)
    detail = {k: counts.pop(k) for k in ("mean_attended_positions", "max_sequence_tokens", "method")}
    return {"tpot_ms_p50": 0.2, "tpot_ms_mean": 0.15, "decode_step_ms_mean": 0.1,
            "prefill_share": 0.25, **counts, "decode_bytes": detail, **extra}


def card(**extra):
    return {"target": "cpu", "memory_bandwidth_gbs": 10.0, "llc_bytes": 1024, **extra}


def test_utilization_is_bytes_per_token_over_time_per_token_over_bandwidth():
    out = decoder.bandwidth_utilization(scenario(), card())
    step_bytes = 118272 + 11264
    assert out["bytes_per_token"] == step_bytes and out["time_per_token_ms"] == pytest.approx(0.1)
    assert out["achieved_gbs"] == pytest.approx(step_bytes / 1e-4 / 1e9)
    assert out["utilization"] == pytest.approx(step_bytes / 1e-4 / 10e9)
    assert out["bandwidth_source"] == "memory_bandwidth_gbs" and out["bandwidth_gbs"] == 10.0
    assert out["cache_resident"] is False and out["reason"] is None


def test_time_per_token_falls_back_to_tpot():
    out = decoder.bandwidth_utilization(scenario(decode_step_ms_mean=None), card())
    assert out["time_per_token_ms"] == pytest.approx(0.15)


def test_a_working_set_in_cache_is_flagged_not_called_bandwidth():
    out = decoder.bandwidth_utilization(scenario(), card(llc_bytes=32 * 2**20))
    assert out["cache_resident"] is True and out["utilization"] is not None
    assert "fit in the last-level cache" in out["reason"] and "not DRAM-bandwidth utilization" in out["reason"]
    largest = decoder.bandwidth_utilization(scenario(), card(llc_bytes=None, caches={"l2": 1024, "l3": 2**30}))
    assert largest["cache_resident"] is True  # no llc_bytes: the largest cache listed


def test_a_gpu_card_is_judged_on_device_memory():
    out = decoder.bandwidth_utilization(scenario(), {"target": "cuda", "memory_bandwidth_gbs": 10.0,
                                                     "device_memory_bandwidth_gbs": 4000.0})
    assert out["bandwidth_source"] == "device_memory_bandwidth_gbs" and out["bandwidth_gbs"] == 4000.0
    assert out["cache_resident"] is None  # no cache size on the card: unknown, not guessed


def test_without_a_card_or_a_bandwidth_the_reason_says_why_and_the_fix():
    none = decoder.bandwidth_utilization(scenario(), None)
    assert none["utilization"] is None and "no machine card" in none["reason"]
    assert "labconsole machine --target" in none["reason"] and none["achieved_gbs"] > 0
    missing = decoder.bandwidth_utilization(scenario(), {"target": "cuda", "memory_bandwidth_gbs": 10.0,
                                                         "not_available": {"device_memory_bandwidth_gbs": "no GPU"}})
    assert missing["utilization"] is None
    assert "no device_memory_bandwidth_gbs on the machine card for cuda (no GPU)" in missing["reason"]
    idle = decoder.bandwidth_utilization(scenario(decode_step_ms_mean=None, tpot_ms_mean=None, tpot_ms_p50=None),
                                         card())
    assert idle["utilization"] is None and "no decode step" in idle["reason"]


# ---- KV footprint table
def test_footprint_table_is_computed_over_batch_and_sequence():
    table = decoder.kv_footprint_table(512, batch=3, sequence_tokens=14, max_sequence_tokens=8192)
    assert table["computed"] is True and "computed, not measured" in table["method"]
    assert table["batches"] == [1, 2, 3, 4, 8, 16, 32, 64]
    assert table["sequence_tokens"] == [14, 128, 256, 512, 1024, 2048, 4096, 8192]
    for i, batch in enumerate(table["batches"]):
        for j, length in enumerate(table["sequence_tokens"]):
            assert table["bytes"][i][j] == batch * length * 512
    assert table["run"] == {"batch": 3, "sequence_tokens": 14}


def test_footprint_stops_at_the_position_table():
    assert decoder.kv_footprint_table(512, max_sequence_tokens=300)["sequence_tokens"] == [128, 256, 300]
    assert decoder.kv_footprint_table(512, max_sequence_tokens=64)["sequence_tokens"] == [64]


def test_decoder_block_for_a_generate_run_and_none_otherwise():
    block = decoder.decoder_block({"batch": 2, "scenario": scenario()}, card())
    assert block["prefill_share"] == 0.25 and block["memory_bandwidth"]["utilization"] > 0
    assert block["kv_footprint"]["sequence_tokens"] == [14, 64]  # the run's, then clipped at max_seq 64
    assert block["kv_footprint"]["bytes"][0] == [14 * 512, 64 * 512]
    assert block["kv_footprint"]["run"] == {"batch": 2, "sequence_tokens": 14}
    assert decoder.decoder_block({"batch": 1, "scenario": {"target_qps": 5.0}}, card()) is None


def test_annotate_puts_the_block_and_two_plain_figures_in_the_summary():
    summary = {"batch": 2, "scenario": scenario()}
    assert decoder.annotate(summary, card()) is summary
    usage = summary["decoder"]["memory_bandwidth"]
    assert summary["scenario"]["decode_gbs"] == usage["achieved_gbs"] > 0
    assert summary["scenario"]["decode_bandwidth_utilization"] == usage["utilization"] > 0
    without = decoder.annotate({"batch": 2, "scenario": scenario()}, None)
    assert without["scenario"]["decode_bandwidth_utilization"] is None
    assert "no machine card" in without["decoder"]["memory_bandwidth"]["reason"]
    other = {"batch": 1, "scenario": {"target_qps": 5.0}}
    assert decoder.annotate(other, card()) == {"batch": 1, "scenario": {"target_qps": 5.0}}
