"""Generate: one request at a time on a decoder model — prefill the prompt, then decode token by token.

A request is `prefill()` (the prompt's forward pass and the first token: its time is the time to first
token, TTFT) followed by `output_tokens - 1` decode steps, each feeding the last token with the KV cache
(greedy, so every run generates the same tokens). Per request, TPOT (time per output token) is the time
from the first token to the last, divided by the decode steps.

The rules are single-stream's: warm-up for `warmup_s` (at least one whole request, the first one's TTFT
reported as `first_inference_ms`), then measurement until `duration_s` or `iterations` *requests*; a request
that has started is finished, unless the run is cancelled (checked between steps). Each decode step is one
perf_counter_ns pair in a preallocated buffer, shipped as the standard `latencies` event about every 100 ms,
so the console's live plot and summary show per-token latency; TTFT and TPOT per request travel in the
`result` event (`ttft_ms`, `tpot_ms`), with `iterations` = decode steps measured (as the latencies count).

The result also splits the measured requests into prefill and decode (time, tokens, tokens/s), and carries
the bytes a decode step cannot avoid moving — streamed weights, KV reads at this batch and prompt, the KV
cache's footprint — computed by the model family's `decode_bytes()` (engines/catalog/gpt_sizes.py), so the
console can turn time per token into memory-bandwidth utilization against the machine card
(console/analysis/decoder.py). Those byte counts are arithmetic on the parameters, not measurements.

With `--kv-offload DIR|ram` (engines.kvcache) the measured requests draw prompts that share prefixes, served from a
prefix cache whose blocks beyond `--kv-budget-mb` spill to the target; TTFT then includes the lookup and the reads.
The work done after each request (spilling, the recompute pass) is left out of `measured_s`; the result gains
`kv_offload` (hit rate, TTFT served vs recomputed, write/read latency percentiles, bytes, the judgement) and a few
flat `kv_*` figures for the summary card.
"""

from __future__ import annotations

import importlib
import statistics
import time
from array import array
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from engines import catalog, protocol
from engines.backends.base import LoadedModel, TokenGenerator
from engines.figures import Figure, Figures
from engines.kvcache.options import KvOffloadOptions
from engines.scenarios.base import ScenarioInfo

if TYPE_CHECKING:  # type hints only: engines.spec imports the scenarios
    from engines.spec import RunSpec

INFO = ScenarioInfo("generate", "Generate (decoder models)", __name__, KvOffloadOptions,
                    summary="prefill then token-by-token decode: time to first token and per output token",
                    extra_fields=("generation.prompt_tokens", "generation.output_tokens"),
                    figures=Figures((
                        Figure("requests", "Requests"), Figure("ttft_ms_p50", "Time to first token p50", "ms"),
                        Figure("tpot_ms_p50", "Time per output token p50", "ms"),
                        Figure("output_tokens_per_s", "Output tokens", "tokens/s"),
                        Figure("prompt_tokens", "Prompt tokens"), Figure("output_tokens", "Output tokens per request"),
                        # prefill and decode apart, and the bytes a decode step reads (computed; the console adds
                        # decode_gbs and its utilization: console.analysis.decoder)
                        Figure("prefill_s", "Prefill time", "s"), Figure("decode_s", "Decode time", "s"),
                        Figure("prefill_tokens_per_s", "Prefill", "tokens/s"),
                        Figure("decode_tokens_per_s", "Decode", "tokens/s"),
                        Figure("decode_step_ms_mean", "Decode step mean", "ms"),
                        Figure("weight_bytes_per_token", "Weights read per token (computed)", "bytes"),
                        Figure("kv_cache_bytes", "KV cache (computed)", "bytes"),
                        Figure("decode_gbs", "Decode reads", "GB/s"),
                        Figure("decode_bandwidth_utilization", "Decode bandwidth use"),
                        # --kv-offload: the KV cache on storage (the whole block is the result's kv_offload)
                        Figure("kv_hit_rate", "KV prefix hit rate"),
                        Figure("kv_ttft_hit_ms", "TTFT, prefix from storage", "ms"),
                        Figure("kv_ttft_recompute_ms", "TTFT, prefix recomputed", "ms"),
                        Figure("kv_write_ms_p95", "KV write p95", "ms"), Figure("kv_read_ms_p95", "KV read p95", "ms"),
                        Figure("kv_judgement", "KV storage bounds")),
                        detail=("listed_requests", "warmup_requests", "tokens", "ttft_ms_mean", "tpot_ms_mean",
                                "prefill_tokens", "decode_tokens", "kv_read_bytes_per_token", "decode_bytes_per_token",
                                "sequence_tokens", "kv_bytes_per_position", "prefill_share")))

FLUSH_NS = 100_000_000  # ship latencies about every 100 ms
CHUNK = 4096  # preallocated slots; a chunk is shipped early if it fills before 100 ms
MAX_LISTED = 10_000  # per-request lists in the result are cut here (the statistics cover every request)
SAMPLE_TOKENS = 16


def run(model: LoadedModel, spec: RunSpec, emit: Callable[[dict[str, Any]], None],
        cancelled: Callable[[], bool]) -> dict[str, Any]:
    """Warm up, measure requests, and return the fields of the `result` event."""
    generator = model.generator
    if spec.mode != "inference":
        raise ValueError("scenario generate measures inference; run it with mode inference")
    if generator is None:
        raise ValueError(f"scenario generate needs a decoder model (gpt); {spec.model} is not one — use "
                         "--scenario single-stream for it")
    steps = generator.output_tokens - 1
    if steps < 1:
        raise ValueError("scenario generate needs generation.output_tokens ≥ 2 (one prefill token plus at least "
                         "one decode step to time)")
    prefill, decode = generator.prefill, generator.decode_step
    clock = time.perf_counter_ns

    # ---- warm-up: whole requests, the first one cold
    emit(protocol.make("phase", phase="warmup", t_ns=clock()))
    t0 = clock()
    state = prefill()
    first_inference_ms = (clock() - t0) / 1e6
    warmup_steps = 0
    warmup_requests = 0
    warmup_end = t0 + int(spec.warmup_s * 1e9)
    next_report = clock() + FLUSH_NS
    while not cancelled():
        for _ in range(steps):
            if cancelled():
                break
            state = decode(state)
            warmup_steps += 1
        warmup_requests += 1
        now = clock()
        if now >= next_report:
            emit(protocol.make("progress", phase="warmup", fraction=min(1.0, (now - t0) / max(1, warmup_end - t0)),
                               iterations=warmup_steps, elapsed_s=(now - t0) / 1e9))
            next_report = now + FLUSH_NS
        if now >= warmup_end:
            break
        state = prefill()

    kv = _kv_session(spec, generator)
    measured_prefill = kv.prefill if kv else prefill
    aside_ns = 0  # after-request KV work (spills, recompute pass): not part of the measured time

    # ---- measurement
    emit(protocol.make("phase", phase="measuring", t_ns=clock()))
    starts = array("q", bytes(8 * CHUNK))
    durations = array("q", bytes(8 * CHUNK))
    ttft_ns = array("q")
    tpot_ns = array("q")
    decode_ns = 0  # whole decode phases of the measured requests (tpot_ns is rounded per request)
    limit_requests = spec.iterations or 0
    duration_ns = int(spec.duration_s * 1e9)
    count = 0
    filled = 0
    requests = 0
    begin = clock()
    deadline = begin + duration_ns
    next_flush = begin + FLUSH_NS
    while not cancelled():
        start = clock()
        state = measured_prefill()
        first = clock()
        complete = True
        end = first
        for _ in range(steps):
            if cancelled():
                complete = False
                break
            step_start = clock()
            state = decode(state)
            end = clock()
            starts[filled] = step_start
            durations[filled] = end - step_start
            filled += 1
            count += 1
            if filled == CHUNK or end >= next_flush:
                _flush(emit, starts, durations, filled)
                filled = 0
                fraction = requests / limit_requests if limit_requests else (end - begin) / duration_ns
                emit(protocol.make("progress", phase="measuring", fraction=min(1.0, fraction), iterations=count,
                                   elapsed_s=(end - begin) / 1e9))
                next_flush = end + FLUSH_NS
        if not complete:
            break
        ttft_ns.append(first - start)
        tpot_ns.append((end - first) // steps)
        decode_ns += end - first
        requests += 1
        if kv:
            aside_ns += kv.after_request()
        if (requests >= limit_requests) if limit_requests else (end >= deadline):
            break
    measured_end = clock()
    if filled:
        _flush(emit, starts, durations, filled)
    measured_s = (measured_end - begin - aside_ns) / 1e9
    ttft_ms = [t / 1e6 for t in ttft_ns]
    tpot_ms = [t / 1e6 for t in tpot_ns]
    output_tokens = generator.output_tokens
    kv_block = _kv_result(kv)
    return {
        "iterations": count,
        "measured_s": measured_s,
        "warmup_iterations": warmup_steps,
        "first_inference_ms": first_inference_ms,
        "batch": spec.batch,
        "scenario_note": "latencies are decode steps (time per output token); time to first token is in ttft_ms",
        "requests": requests,
        "warmup_requests": warmup_requests,
        "prompt_tokens": generator.prompt_tokens,
        "output_tokens": output_tokens,
        "tokens": requests * output_tokens * spec.batch,
        "output_tokens_per_s": requests * output_tokens * spec.batch / measured_s if measured_s > 0 else None,
        "ttft_ms": ttft_ms[:MAX_LISTED],
        "tpot_ms": tpot_ms[:MAX_LISTED],
        "listed_requests": min(requests, MAX_LISTED),
        "ttft_ms_p50": statistics.median(ttft_ms) if ttft_ms else None,
        "tpot_ms_p50": statistics.median(tpot_ms) if tpot_ms else None,
        "ttft_ms_mean": statistics.fmean(ttft_ms) if ttft_ms else None,
        "tpot_ms_mean": statistics.fmean(tpot_ms) if tpot_ms else None,
        "tokens_sample": [int(t) for t in generator.tokens(state)[0][:SAMPLE_TOKENS]],
        **_split(sum(ttft_ns), decode_ns, requests * steps, generator.prompt_tokens, spec.batch, requests),
        **_byte_counts(spec, generator),
        **kv_block,
    }


def _kv_session(spec: RunSpec, generator: TokenGenerator) -> Any:
    """The KV cache on storage when --kv-offload asks for one (engines.kvcache), else None."""
    if not spec.scenario_options.kv_offload:
        return None
    # by name, as input-pipeline loads engines.checkpoints: a worker-only module (it handles torch tensors), so
    # the console, which imports this module for its options, never imports torch through it
    session = importlib.import_module("engines.kvcache.session")
    vocab = int(catalog.params_for(spec.model, spec.model_params)["vocab"])
    return session.start(generator, spec.scenario_options, vocab)


def _kv_result(kv: Any) -> dict[str, Any]:
    """The `kv_offload` block and its flat headline figures (the summary card lists plain values)."""
    if kv is None:
        return {}
    block = kv.finish()
    verdict = block["judgement"]
    failed = "; ".join(rule["text"] for rule in verdict["failed_rules"])
    return {"kv_offload": block, "kv_hit_rate": block["hit_rate"], "kv_ttft_hit_ms": block["ttft_hit_ms"],
            "kv_ttft_recompute_ms": block["ttft_recompute_ms"], "kv_write_ms_p95": block["write_ms"]["p95"],
            "kv_read_ms_p95": block["read_ms"]["p95"],
            "kv_judgement": "not judged" if verdict["passed"] is None else
            ("passed" if verdict["passed"] else f"failed: {failed}")}


def _split(prefill_ns: int, decode_ns: int, decode_steps: int, prompt_tokens: int, batch: int,
           requests: int) -> dict[str, Any]:
    """Prefill against decode over the measured requests: time, tokens, rate, prefill's share of the time and
    the mean decode step (the time per output token that memory-bandwidth utilization divides by).

    Prefill's tokens are the prompts' (it also picks the first output token); decode's are the tokens its steps
    generate, batch rows included."""
    prefill_s, decode_s = prefill_ns / 1e9, decode_ns / 1e9
    prefill_tokens, decode_tokens = requests * prompt_tokens * batch, decode_steps * batch
    total = prefill_s + decode_s
    return {
        "prefill_s": prefill_s,
        "decode_s": decode_s,
        "prefill_tokens": prefill_tokens,
        "decode_tokens": decode_tokens,
        "prefill_tokens_per_s": prefill_tokens / prefill_s if prefill_s > 0 else None,
        "decode_tokens_per_s": decode_tokens / decode_s if decode_s > 0 else None,
        "decode_step_ms_mean": decode_s * 1e3 / decode_steps if decode_steps else None,
        "prefill_share": prefill_s / total if total > 0 else None,
    }


def _byte_counts(spec: RunSpec, generator: TokenGenerator) -> dict[str, Any]:
    """The model family's byte counts for this batch and request shape (computed, not measured).

    A decoder family opts in with `decode_bytes(params, precision, batch, prompt_tokens, output_tokens)`; the
    headline counts go in the result as plain numbers, the rest (mean attended positions, the longest sequence, method) under
    `decode_bytes`."""
    family = importlib.import_module(catalog.get(spec.model).module)
    counts_of = getattr(family, "decode_bytes", None)
    if counts_of is None:
        return {"decode_bytes": {"method": f"not computed: the {spec.model} family has no decode_bytes()"}}
    counts = counts_of(catalog.params_for(spec.model, spec.model_params), spec.precision, spec.batch,
                       generator.prompt_tokens, generator.output_tokens)
    detail = {key: counts.pop(key) for key in ("mean_attended_positions", "max_sequence_tokens", "method")}
    return {**counts, "decode_bytes": {**detail, "precision": spec.precision}}


def _flush(emit: Callable[[dict[str, Any]], None], starts: array, durations: array, filled: int) -> None:
    emit(protocol.make("latencies", t_ns=starts[:filled].tolist(), latency_ns=durations[:filled].tolist()))
