"""Multi-stream: at a fixed cadence, a query of N samples (N streams, e.g. N cameras), latency per query.

Every interval (1 / `scenario_options.qps`, default 20 per second = 50 ms) a query of `streams` samples
(default 8) is issued; it is served as `streams / batch` calls of `infer` back to back (`--batch N` serves it
in one call). A query's latency is its completion − its scheduled tick, so a late start counts. A query
still running when the next tick comes makes that tick (and any after it) a *missed interval*: nothing is
issued for it, and the next query waits for the first tick after completion — as MLPerf's original
multi-stream did. The run ends after `duration_s` of ticks, exactly `iterations` queries, or `max_queries`; with
`scenario_options.until_stable`, ticks go on past `duration_s` window by window until the last windows agree,
capped (`_stability`).

Each `latencies` entry is one query of `streams` samples: `samples_per_s` in the result counts samples
(queries × streams / measured time).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from engines import protocol
from engines.backends.base import LoadedModel
from engines.figures import Figure, Figures
from engines.options import SpecError, option
from engines.scenarios import _stability, _timing
from engines.scenarios._stability import StableOptions
from engines.scenarios.base import QUERY_FIGURES, RATE_FIGURES, WARMUP_FIGURES, LoadOptions, ScenarioInfo

if TYPE_CHECKING:  # type hints only: engines.spec imports the scenarios
    from engines.spec import RunSpec

DEFAULT_STREAMS = 8  # samples per query (MLPerf's original multi-stream)
DEFAULT_MULTI_STREAM_QPS = 20.0  # a query every 50 ms


@dataclass
class MultiStreamOptions(LoadOptions, StableOptions):
    qps: float | None = option(None, flag="--qps", metavar="RATE", maximum=1_000_000, unit="queries/s",
                               label="Rate (queries/s)",
                               help=f"multi-stream: queries/s at a fixed cadence (default {DEFAULT_MULTI_STREAM_QPS:g}"
                                    f" = every {1000 / DEFAULT_MULTI_STREAM_QPS:g} ms)")
    streams: int | None = option(None, flag="--streams", metavar="N", maximum=65536, label="Streams",
                                 help=f"multi-stream: samples per query (default {DEFAULT_STREAMS}; --batch N serves "
                                      "a query in one call)")

    def check(self, spec: RunSpec) -> None:
        super().check(spec)
        StableOptions.check(self, spec)
        streams = self.streams or DEFAULT_STREAMS
        if streams % spec.batch:
            divisors = [d for d in range(1, streams + 1) if streams % d == 0]
            raise SpecError("scenario_options.streams" if self.streams else "batch",
                            f"a multi-stream query of {streams} samples is served in calls of batch {spec.batch}, "
                            f"which does not divide it; use a batch of {', '.join(map(str, divisors[-6:]))} "
                            f"(batch {streams}: one call a query) or another number of streams")


INFO = ScenarioInfo("multi-stream", "Multi-stream", __name__, MultiStreamOptions,
                    summary="a query of N samples at a fixed cadence (N cameras); missed intervals counted",
                    figures=RATE_FIGURES + Figures((
                        Figure("streams", "Streams"), Figure("interval_ms", "Interval", "ms"),
                        Figure("missed_intervals", "Missed intervals"),
                        Figure("p99_within_interval", "p99 within interval")),
                        detail=("calls_per_query", "latency_ms_p99")) + QUERY_FIGURES + WARMUP_FIGURES)


def run(model: LoadedModel, spec: RunSpec, emit: Callable[[dict[str, Any]], None],
        cancelled: Callable[[], bool]) -> dict[str, Any]:
    """Warm up, issue a query every interval, and return the fields of the `result` event."""
    options = spec.scenario_options
    streams = options.streams or DEFAULT_STREAMS
    qps = options.qps or DEFAULT_MULTI_STREAM_QPS
    interval_ns = max(1, round(1e9 / qps))
    calls = max(1, streams // spec.batch)
    clock = time.perf_counter_ns
    infer = model.infer
    with _timing.precise_sleep():
        warmup = _timing.warm_up(infer, spec, emit, cancelled, clock)
        exact = spec.iterations
        limit = exact or options.max_queries
        duration_ns = int(spec.duration_s * 1e9)

        emit(protocol.make("phase", phase="measuring", t_ns=clock()))
        begin = clock() + 1_000_000
        stability = _stability.tracker(spec, begin) if not exact else None
        recorder = _timing.Recorder(emit, keep=True, observer=stability.add if stability is not None else None)
        end_ticks = begin + duration_ns if stability is None else stability.deadline
        tick_index = 0
        queries = missed = 0
        last_end = begin
        ran_out = False  # the run ended because its duration's ticks were all due
        next_flush = begin + _timing.FLUSH_NS
        while not cancelled():
            tick = begin + tick_index * interval_ns
            if exact:
                if queries >= exact:
                    break
            elif tick >= end_ticks:
                if stability is not None:  # every query of the window has been answered: decide
                    recorder.ship()
                    if not stability.decide():
                        end_ticks = stability.deadline
                        continue
                ran_out = True
                break
            elif limit and queries >= limit:
                break
            now = clock()
            while now < tick and not cancelled():
                if now >= next_flush:
                    recorder.ship()
                    _progress(emit, queries, exact, begin, end_ticks - begin, now, stability)
                    next_flush = now + _timing.FLUSH_NS
                time.sleep((min(tick, next_flush) - now) / 1e9)
                now = clock()
            if cancelled():
                break
            for _ in range(calls):
                infer()
            last_end = clock()
            recorder.add(tick, last_end - tick)
            queries += 1
            following = (last_end - begin) // interval_ns + 1  # the first tick after completion
            missed += max(0, following - tick_index - 1)
            tick_index = max(tick_index + 1, following)
            if last_end >= next_flush:
                recorder.ship()
                _progress(emit, queries, exact, begin, end_ticks - begin, last_end, stability)
                next_flush = last_end + _timing.FLUSH_NS
        recorder.ship()
    if ran_out:
        due = (end_ticks - begin + interval_ns - 1) // interval_ns
        missed = max(0, missed - max(0, tick_index - due))  # ticks past the end were never due
        measured_end = max(last_end, end_ticks)
    else:
        measured_end = last_end
    measured_s = max(0, measured_end - begin) / 1e9
    p99 = _timing.percentile(recorder.kept, 99)
    return {
        **_timing.result_head(queries, measured_s, warmup, spec.batch),
        "streams": streams,
        "samples_per_query": streams,
        "calls_per_query": calls,
        "interval_ms": interval_ns / 1e6,
        "target_qps": qps,
        "achieved_qps": queries / measured_s if measured_s > 0 else None,
        "queries": queries,
        "missed_intervals": missed,
        "samples_per_s": queries * streams / measured_s if measured_s > 0 else None,
        "latency_ms_p99": None if p99 is None else p99 / 1e6,
        "p99_within_interval": p99 is not None and p99 <= interval_ns,
        "scenario_note": "each latency is one query of streams samples (calls_per_query calls of batch); "
                         "samples_per_s counts samples",
        **warmup.result_fields(),
        **(stability.result_fields("max_queries" if limit and queries >= limit else "cancelled")
           if stability is not None else {}),
    }


def _progress(emit, queries: int, exact: int | None, begin: int, duration_ns: int, now: int,
              stability: _stability.StabilityWindows | None = None) -> None:
    fraction = queries / exact if exact else (now - begin) / duration_ns
    extra = stability.progress_fields() if stability is not None else {}
    _timing.progress(emit, "measuring", fraction, queries, max(0, now - begin) / 1e9, **extra)
