"""generate --kv-offload end to end on a tiny gpt (PyTorch, this CPU): blocks spill to a directory or host RAM, are
read back when a prefix repeats, and the result's kv_offload block adds up — against the seeded prompt draw, the
files written, and the recompute pass's first tokens."""

import numpy as np
import pytest

from console.analysis import kv_offload
from console.analysis.summary import summarize
from engines import protocol
from engines.kvcache.prefix_cache import PromptDraw
from engines.worker import run_spec

TINY = {"layers": 2, "hidden": 32, "heads": 2, "vocab": 128, "max_seq": 64}
PROMPT, BLOCK, REQUESTS = 40, 8, 12  # 4 cacheable blocks a prompt (32 tokens before the last 8)


@pytest.fixture(autouse=True)
def _cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("LABCONSOLE_CACHE", str(tmp_path_factory.mktemp("labconsole-cache")))


def generate(target: str, budget_mb: float = 0.0, **options) -> tuple[dict, list[dict]]:
    events = []
    run_spec({"model": "gpt", "engine": "torch", "scenario": "generate", "iterations": REQUESTS, "warmup_s": 0,
              "batch": 1, "model_params": TINY, "generation": {"prompt_tokens": PROMPT, "output_tokens": 3},
              "scenario_options": {"kv_offload": target, "kv_budget_mb": budget_mb, "kv_block_tokens": BLOCK,
                                   "kv_repeat_rate": 0.6, **options}}, events.append)
    for event in events:
        protocol.check(event)
    assert events[-1]["type"] == "result", events[-1].get("message")
    return events[-1], events


def test_a_zero_budget_spills_every_block_and_serves_repeats_from_files(tmp_path):
    result, events = generate(str(tmp_path))
    block = result["kv_offload"]
    draw = PromptDraw(128, PROMPT, 32, 0.6, 42)
    prompts = [draw.next() for _ in range(REQUESTS)]
    new_prefixes = REQUESTS - draw.repeats
    # every repeated prefix is found whole on the target; every new one is written once, block by block
    assert block["requests"] == REQUESTS and block["requests_repeating"] == draw.repeats > 0
    assert block["blocks_looked_up"] == 4 * REQUESTS and block["blocks_hit_target"] == 4 * draw.repeats
    assert block["blocks_hit_memory"] == 0 and block["hit_rate"] == pytest.approx(draw.repeats / REQUESTS)
    assert block["blocks_written"] == 4 * new_prefixes == block["write_ms"]["n"]
    assert block["blocks_read"] == block["blocks_hit_target"] == block["read_ms"]["n"]
    assert len({tuple(p[:32]) for p in prompts}) == new_prefixes
    # one .npy file per block: 2 layers × K,V × 1 row × 2 heads × 8 tokens × 16 dims of float32, plus the header
    data = 2 * 2 * 1 * 2 * 8 * 16 * 4
    assert block["block_bytes"] == data and block["bytes_written"] == block["blocks_written"] * (data + 128)
    assert block["bytes_read"] == block["blocks_read"] * (data + 128)
    assert block["target"] == "directory" and block["path"] == str(tmp_path)
    assert list(tmp_path.iterdir()) == []  # the run's private folder is gone
    # TTFT served vs recomputed, paired on the same prompts; the cached keys/values give the same first token
    assert block["requests_served_from_target"] == draw.repeats
    assert block["ttft_hit_ms"] > 0 and block["ttft_recompute_ms"] > 0
    assert block["ttft_speedup"] == pytest.approx(block["ttft_recompute_ms"] / block["ttft_hit_ms"])
    assert block["first_token_agrees"] == block["first_token_compared"] == draw.repeats
    for name in ("write_ms", "read_ms"):
        assert 0 < block[name]["p50"] <= block[name]["p95"] <= block[name]["p99"]
    verdict = block["judgement"]
    assert verdict["bounds"]["write_p95_ms"] == 500.0 and verdict["passed"] == (not verdict["failed_rules"])
    assert result["kv_hit_rate"] == block["hit_rate"] and result["kv_read_ms_p95"] == block["read_ms"]["p95"]
    # the rest of the scenario is unchanged: TTFT per request, the after-request work outside measured time
    assert len(result["ttft_ms"]) == REQUESTS and result["measured_s"] > 0 and block["side_work_s"] > 0
    # and it reaches the summary and the console's words
    latency_ns = np.concatenate([e["latency_ns"] for e in events if e["type"] == "latencies"])
    summary = summarize(latency_ns, result, None, batch=1)
    assert kv_offload.block_of(summary) == block
    assert kv_offload.lines(block)[-1].split(" — ")[0] in ("PASSED", *(f"FAILED: {r['text']}" for r in
                                                                        verdict["failed_rules"]))


def test_host_ram_with_a_roomy_budget_serves_from_memory_and_writes_nothing():
    result, _ = generate("ram", budget_mb=1.0, kv_min_hit_rate=0.9)
    block = result["kv_offload"]
    assert block["target"] == "ram" and block["blocks_written"] == block["bytes_written"] == 0
    assert block["blocks_hit_target"] == 0 and block["blocks_hit_memory"] > 0
    assert block["ttft_hit_ms"] is None and "not available" in block["ttft_hit_reason"]
    assert block["ttft_hit_memory_ms"] > 0 and block["first_token_agrees"] == block["first_token_compared"] > 0
    verdict = block["judgement"]  # no storage samples: only the hit rate is judged, against the run's 0.9
    assert {r["rule"] for r in verdict["unjudged_rules"]} == {"write_p95_ms", "read_p95_ms"}
    assert verdict["passed"] is False and verdict["failed_rules"][0]["rule"] == "min_hit_rate"
    assert verdict["bounds"]["sources"]["min_hit_rate"] == "the run's setting"
    assert result["kv_judgement"].startswith("failed: hit rate")


def test_the_onnxruntime_engine_is_refused_before_loading():
    events = []
    run_spec({"model": "gpt", "engine": "onnxruntime", "scenario": "generate", "model_params": TINY,
              "generation": {"prompt_tokens": PROMPT, "output_tokens": 3},
              "scenario_options": {"kv_offload": "ram"}}, events.append)
    assert events[-1]["type"] == "error" and "--engine torch" in events[-1]["message"]
