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
"""

from __future__ import annotations

import statistics
import time
from array import array
from collections.abc import Callable
from typing import Any

from engines import protocol
from engines.backends.base import LoadedModel
from engines.spec import RunSpec

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

    # ---- measurement
    emit(protocol.make("phase", phase="measuring", t_ns=clock()))
    starts = array("q", bytes(8 * CHUNK))
    durations = array("q", bytes(8 * CHUNK))
    ttft_ns = array("q")
    tpot_ns = array("q")
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
        state = prefill()
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
        requests += 1
        if (requests >= limit_requests) if limit_requests else (end >= deadline):
            break
    measured_end = clock()
    if filled:
        _flush(emit, starts, durations, filled)
    measured_s = (measured_end - begin) / 1e9
    ttft_ms = [t / 1e6 for t in ttft_ns]
    tpot_ms = [t / 1e6 for t in tpot_ns]
    output_tokens = generator.output_tokens
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
    }


def _flush(emit: Callable[[dict[str, Any]], None], starts: array, durations: array, filled: int) -> None:
    emit(protocol.make("latencies", t_ns=starts[:filled].tolist(), latency_ns=durations[:filled].tolist()))
