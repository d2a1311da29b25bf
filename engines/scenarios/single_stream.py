"""Single-stream: one query at a time, back to back — the latency a single user sees.

Warm-up runs for `warmup_s` (results not kept; or, with `scenario_options.warmup_until_stable`, until the
last three 100-ms windows agree within 10%, capped — see `_timing.warm_up`), then measurement runs until
`duration_s` or `iterations` — or, with `scenario_options.until_stable`, past `duration_s` window by window until
the last windows agree, capped (`_stability`). Each iteration is one perf_counter_ns pair written into a preallocated buffer; the
buffer is shipped in batches about every 100 ms, so the hot loop never builds a message per
iteration. Cancel is checked between iterations.
"""

from __future__ import annotations

import time
from array import array
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from engines import protocol
from engines.backends.base import LoadedModel
from engines.scenarios import _stability, _timing
from engines.scenarios._stability import StableOptions
from engines.scenarios._timing import CHUNK, FLUSH_NS
from engines.scenarios.base import WARMUP_FIGURES, ScenarioInfo, WarmupOptions

if TYPE_CHECKING:  # type hints only: engines.spec imports the scenarios
    from engines.spec import RunSpec


@dataclass
class SingleStreamOptions(WarmupOptions, StableOptions):
    """Single-stream takes the warm-up and the until-stable options."""

    def check(self, spec: RunSpec) -> None:
        WarmupOptions.check(self, spec)
        StableOptions.check(self, spec)


INFO = ScenarioInfo("single-stream", "Single-stream", __name__, SingleStreamOptions,
                    summary="one query at a time, back to back: the latency a single user sees",
                    figures=WARMUP_FIGURES)


def run(model: LoadedModel, spec: RunSpec, emit: Callable[[dict[str, Any]], None],
        cancelled: Callable[[], bool]) -> dict[str, Any]:
    """Warm up, measure, and return the fields of the `result` event."""
    clock = time.perf_counter_ns
    warmup = _timing.warm_up(model.infer, spec, emit, cancelled, clock)

    emit(protocol.make("phase", phase="measuring", t_ns=clock()))
    starts = array("q", bytes(8 * CHUNK))
    durations = array("q", bytes(8 * CHUNK))
    limit_iterations = spec.iterations or 0
    duration_ns = int(spec.duration_s * 1e9)
    count = 0
    filled = 0
    begin = clock()
    stability = _stability.tracker(spec, begin)
    deadline = begin + duration_ns if stability is None else stability.deadline
    next_flush = begin + FLUSH_NS
    infer = model.infer
    while not cancelled():
        start = clock()
        infer()
        end = clock()
        starts[filled] = start
        durations[filled] = end - start
        filled += 1
        count += 1
        if limit_iterations:
            done = count >= limit_iterations
        else:
            done = end >= deadline
        if done or filled == CHUNK or end >= next_flush:
            _timing.ship_arrays(emit, starts, durations, filled)
            extra = {}
            if stability is not None:
                stability.add(starts[:filled], durations[:filled])
                if done and not stability.decide():  # not stable yet: one more window
                    done, deadline = False, stability.deadline
                extra = stability.progress_fields()
            filled = 0
            if limit_iterations:
                fraction = count / limit_iterations
            else:
                fraction = (end - begin) / duration_ns if stability is None else stability.fraction(end)
            emit(protocol.make("progress", phase="measuring", fraction=min(1.0, fraction), iterations=count,
                               elapsed_s=(end - begin) / 1e9, **extra))
            next_flush = end + FLUSH_NS
        if done:
            break
    measured_end = clock()
    if filled:
        _timing.ship_arrays(emit, starts, durations, filled)
    return {
        **_timing.result_head(count, (measured_end - begin) / 1e9, warmup, spec.batch),
        **warmup.result_fields(),
        **(stability.result_fields("cancelled") if stability is not None else {}),
    }
