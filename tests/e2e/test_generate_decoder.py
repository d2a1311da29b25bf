"""Generate on a tiny gpt, both engines: the prefill/decode split and the decode byte counts reach the result,
the summary's scenario block and the decoder analysis (utilization against a machine card, KV footprint)."""

import numpy as np
import pytest

from console.analysis import decoder
from console.analysis.summary import summarize
from engines import protocol
from engines.catalog import gpt_sizes
from engines.worker import run_spec

TINY = {"layers": 2, "hidden": 32, "heads": 2, "vocab": 128, "max_seq": 64}
GENERATION = {"prompt_tokens": 8, "output_tokens": 6}


@pytest.fixture(autouse=True)
def _cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("LABCONSOLE_CACHE", str(tmp_path_factory.mktemp("labconsole-cache")))


def generate(engine: str) -> tuple[dict, list[dict]]:
    events = []
    run_spec({"model": "gpt", "engine": engine, "scenario": "generate", "iterations": 2, "warmup_s": 0,
              "batch": 2, "model_params": TINY, "generation": GENERATION}, events.append)
    for event in events:
        protocol.check(event)
    assert events[-1]["type"] == "result", events[-1].get("message")
    return events[-1], events


@pytest.mark.parametrize("engine", ["torch", "onnxruntime"])
def test_generate_reports_the_split_and_the_decode_bytes(engine):
    result, events = generate(engine)
    # prefill and decode: 2 requests × batch 2; prompt 8 tokens, 5 decode steps each
    assert result["prefill_tokens"] == 2 * 2 * 8 and result["decode_tokens"] == 2 * 2 * 5
    assert result["prefill_s"] > 0 and result["decode_s"] > 0
    assert result["prefill_tokens_per_s"] == pytest.approx(result["prefill_tokens"] / result["prefill_s"])
    assert result["decode_tokens_per_s"] == pytest.approx(result["decode_tokens"] / result["decode_s"])
    assert result["decode_step_ms_mean"] == pytest.approx(result["decode_s"] * 1e3 / (2 * 5))
    assert result["prefill_share"] == pytest.approx(result["prefill_s"] / (result["prefill_s"] + result["decode_s"]))
    assert result["prefill_s"] == pytest.approx(sum(result["ttft_ms"]) / 1e3, rel=1e-6)
    # the byte counts are the hand-checked arithmetic (tests/unit/test_decoder.py) for this shape
    expected = gpt_sizes.decode_bytes(TINY, "fp32", 2, 8, 6)
    for key in ("weight_bytes_per_token", "kv_read_bytes_per_token", "decode_bytes_per_token",
                "kv_bytes_per_position", "kv_cache_bytes", "sequence_tokens"):
        assert result[key] == expected[key], key
    assert result["weight_bytes_per_token"] == (28672 + 896) * 4 and result["kv_cache_bytes"] == 2 * 14 * 512
    assert result["decode_bytes"]["precision"] == "fp32" and "not measured" in result["decode_bytes"]["method"]

    # through the console's summary: the scenario block carries them under the same names
    latency_ns = np.concatenate([e["latency_ns"] for e in events if e["type"] == "latencies"])
    summary = summarize(latency_ns, result, None, batch=2)
    block = summary["scenario"]
    assert block["prefill_tokens"] == 32 and block["kv_cache_bytes"] == 2 * 14 * 512
    assert block["decode_bytes"]["mean_attended_positions"] == 11
    analysis = decoder.decoder_block(summary, {"target": "cpu", "memory_bandwidth_gbs": 10.0, "llc_bytes": 1024})
    usage = analysis["memory_bandwidth"]
    assert usage["utilization"] == pytest.approx(
        result["decode_bytes_per_token"] / (result["decode_step_ms_mean"] / 1e3) / 10e9)
    assert analysis["kv_footprint"]["run"] == {"batch": 2, "sequence_tokens": 14}
    assert analysis["kv_footprint"]["sequence_tokens"][-1] == 64  # the tiny model's position table
