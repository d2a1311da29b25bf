"""Offline: maximum throughput — the model is kept busy back to back, optionally from several threads at once.

Each call of `infer` is one query of `batch` samples; `scenario_options.concurrency` threads (default 1) call
it at the same time (torch releases the GIL inside its ops, ONNX Runtime's session.run is thread-safe), so
throughput can grow until the cores are full. Every call is one (start, duration) pair in the standard
`latencies` events, so the summary's throughput (calls × batch / measured time) is the offline throughput.

The run ends after `duration_s`, or exactly `iterations` calls, or — MLPerf's offline shape — when one
query of `scenario_options.samples_per_query` samples is done (`query_latency_ms` is that query's latency);
`max_queries` caps the calls of a timed run. Measured time runs from the start to the last call's end.

With `scenario_options.until_stable` a timed run goes on past `duration_s` window by window until the last
windows agree, capped (`_stability`): the scenario's thread wakes at each window's deadline and decides; a call
that starts after the final deadline is not recorded, so the run ends on a window boundary (give or take the
calls in flight there).
"""

from __future__ import annotations

import itertools
import math
import threading
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
from engines.scenarios.base import QUERY_FIGURES, WARMUP_FIGURES, LoadOptions, ScenarioInfo, WarmupOptions

if TYPE_CHECKING:  # type hints only: engines.spec imports the scenarios
    from engines.spec import RunSpec


@dataclass
class OfflineOptions(LoadOptions, StableOptions):
    concurrency: int | None = option(None, flag="--concurrency", metavar="N", maximum=256, label="Concurrency",
                                     help="offline: threads calling the model at once (default 1)")
    samples_per_query: int | None = option(None, flag="--samples-per-query", metavar="N", label="Samples per query",
                                           help="offline: one query of N samples; the run ends when it is done")

    def check(self, spec: RunSpec) -> None:
        if spec.mode != "inference" and (self.concurrency or 1) > 1:
            raise SpecError("mode", "scenario offline measures inference when concurrency > 1 (training steps on "
                                    "one model cannot overlap); use mode inference")
        WarmupOptions.check(self, spec)
        StableOptions.check(self, spec)
        if self.until_stable and self.samples_per_query is not None:
            raise SpecError("scenario_options.until_stable", "extends a timed run, and a run of one query of "
                            "samples_per_query samples ends when that query is done: drop one of them")
        if self.samples_per_query is not None and spec.iterations is not None:
            raise SpecError("scenario_options.samples_per_query", "give either iterations or samples_per_query "
                            "(both say when an offline run ends)")


INFO = ScenarioInfo("offline", "Offline", __name__, OfflineOptions,
                    summary="maximum throughput: the model kept busy back to back, from one or more threads",
                    figures=Figures((Figure("concurrency", "Concurrency"),)) + QUERY_FIGURES
                    + Figures((Figure("padded_samples", "Padded samples"),), detail=("query_latency_ms",))
                    + WARMUP_FIGURES)


def run(model: LoadedModel, spec: RunSpec, emit: Callable[[dict[str, Any]], None],
        cancelled: Callable[[], bool]) -> dict[str, Any]:
    """Warm up, keep `concurrency` threads calling the model, and return the fields of the `result` event."""
    options = spec.scenario_options
    concurrency = options.concurrency or 1
    clock = time.perf_counter_ns
    warmup = _timing.warm_up(model.infer, spec, emit, cancelled, clock)

    if options.samples_per_query:
        limit: int | None = math.ceil(options.samples_per_query / spec.batch)
    else:
        limit = spec.iterations
    timed = limit is None
    if timed and options.max_queries:
        limit = options.max_queries
    duration_ns = int(spec.duration_s * 1e9)

    emit(protocol.make("phase", phase="measuring", t_ns=clock()))
    begin = clock()
    stability = _stability.tracker(spec, begin) if timed else None
    recorder = _timing.Recorder(emit, observer=stability.add if stability is not None else None)
    tickets = itertools.count()  # next() is atomic under the GIL: one ticket per call
    stop = threading.Event()
    finished = threading.Event()
    ends = [0] * concurrency
    errors: list[BaseException] = []
    remaining = [concurrency]
    lock = threading.Lock()
    # The threads stop at stop_at[0]: the duration's end, or — until stable — the cap until the decision
    stop_at = [None if not timed else begin + duration_ns if stability is None else stability.cap_end]

    init_thread = _timing.thread_initializer()

    def work(index: int) -> None:
        infer = model.infer
        try:
            init_thread()
            while not stop.is_set():
                if limit is not None and next(tickets) >= limit:
                    break
                start = clock()
                infer()
                end = clock()
                deadline = stop_at[0]
                if stability is not None and start >= deadline:
                    break  # started after the final deadline (until stable): not part of the measurement
                recorder.add(start, end - start)
                ends[index] = end
                if deadline is not None and end >= deadline:
                    break
        except BaseException as exc:  # noqa: BLE001 — re-raised on the scenario's thread
            errors.append(exc)
            stop.set()
        finally:
            with lock:
                remaining[0] -= 1
                if not remaining[0]:
                    finished.set()

    threads = [threading.Thread(target=work, args=(i,), name=f"offline-{i}", daemon=True) for i in range(concurrency)]
    for thread in threads:
        thread.start()
    wait_s = _timing.FLUSH_NS / 1e9
    while not finished.wait(wait_s):
        if cancelled():
            stop.set()
        recorder.ship()
        now = clock()
        extra = {}
        if stability is not None:
            if now >= stability.deadline and not stability.ended and stability.decide():
                stop_at[0] = stability.deadline  # stable or capped: calls started after it are not recorded
            extra = stability.progress_fields()
            fraction = stability.fraction(now)
            if not stability.ended:  # wake at the next deadline, not up to 100 ms after it
                wait_s = max(0.0, min(_timing.FLUSH_NS, stability.deadline - clock()) / 1e9)
            else:
                wait_s = _timing.FLUSH_NS / 1e9
        else:
            fraction = recorder.count / limit if limit and not timed else (now - begin) / duration_ns
        _timing.progress(emit, "measuring", fraction, recorder.count, (now - begin) / 1e9, **extra)
    for thread in threads:
        thread.join()
    recorder.ship()
    if errors:
        raise errors[0]
    measured_end = max([*ends, begin])
    if stability is not None:
        stability.catch_up(measured_end)
    measured_s = (measured_end - begin) / 1e9
    calls = recorder.count
    samples = calls * spec.batch
    result: dict[str, Any] = {
        **_timing.result_head(calls, measured_s, warmup, spec.batch),
        "samples_per_s": samples / measured_s if measured_s > 0 else None,
        "queries": calls,
        "samples": samples,
        "concurrency": concurrency,
        **warmup.result_fields(),
        **(stability.result_fields("max_queries" if limit and calls >= limit else "cancelled")
           if stability is not None else {}),
    }
    if options.samples_per_query:
        result["samples_per_query"] = options.samples_per_query
        result["query_latency_ms"] = measured_s * 1e3
        if samples > options.samples_per_query and calls == limit:
            result["padded_samples"] = samples - options.samples_per_query
    return result
