"""Server: queries arrive as a Poisson process at a target rate; latency counts the time spent queueing.

A scheduler (this thread) draws exponential gaps at `scenario_options.qps` from a fixed seed (every run
sees the same arrival pattern) and issues each query at its arrival time whether or not the model is busy;
one worker thread serves a FIFO queue. A query's latency is completion − *scheduled* arrival, as MLPerf
LoadGen measures it, so queueing and any lateness of the scheduler count. The scheduler only sleeps, never
spins: a spinning thread would hold the GIL the worker needs between ops.

Arrivals stop at `duration_s` (or after `iterations` queries exactly, or `max_queries`); queries still queued
then are served (a drain of at most half the duration, ≥ 1 s) and any left after that are reported as
dropped. The result has the target and achieved rates, queue statistics, late and dropped counts.

Find-peak (`find_peak` with `latency_bound_ms`): short trials (exponential, then binary search) find the
highest rate whose p99 stays under the bound; trials run during the warm-up phase and send no latencies;
the measurement is then one run at the peak rate. A bound that even one query at a time cannot meet is an
error that says so, not a search that never ends.
"""

from __future__ import annotations

import queue
import random
import statistics
import threading
import time
from array import array
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from engines import protocol
from engines.backends.base import LoadedModel
from engines.figures import Figure, Figures
from engines.options import SpecError, option
from engines.scenarios import _timing
from engines.scenarios.base import LATENCY_BOUND, RATE_FIGURES, WARMUP_FIGURES, LoadOptions, ScenarioInfo

if TYPE_CHECKING:  # type hints only: engines.spec imports the scenarios
    from engines.spec import RunSpec

MAX_QPS = 1_000_000


@dataclass
class ServerOptions(LoadOptions):
    qps: float | None = option(None, flag="--qps", metavar="RATE", maximum=MAX_QPS, unit="queries/s",
                               label="Rate (queries/s)",
                               help="server: Poisson arrival rate (queries/s); with --find-peak, where the search "
                                    "starts")
    latency_bound_ms: float | None = option(None, flag="--latency-bound-ms", metavar="MS", maximum=3_600_000,
                                            unit="ms", label="p99 bound (ms)",
                                            help="server: p99 bound for --find-peak (otherwise reported as met or "
                                                 "not)")
    find_peak: bool = option(False, flag="--find-peak", label="Find peak rate",
                             help="server: search for the highest rate whose p99 stays under --latency-bound-ms")

    def check(self, spec: RunSpec) -> None:
        super().check(spec)
        if self.find_peak and self.latency_bound_ms is None:
            raise SpecError("scenario_options.latency_bound_ms", "find_peak searches for the highest rate whose "
                            "p99 stays under a bound: give the bound in milliseconds")
        if not self.find_peak and self.qps is None:
            raise SpecError("scenario_options.qps", "scenario server needs a target rate (queries per second), "
                            "or find_peak with a latency bound")


INFO = ScenarioInfo("server", "Server", __name__, ServerOptions,
                    summary="Poisson arrivals at a target rate, queueing counted; or the peak rate under a p99 bound",
                    figures=RATE_FIGURES + Figures((
                        Figure("peak_qps", "Peak rate found", "queries/s"),
                        Figure("latency_bound_ms", "p99 bound", "ms"),
                        Figure("meets_bound", "Meets the bound"), Figure("issued", "Queries issued"),
                        Figure("late", "Late queries"), Figure("dropped", "Dropped queries"),
                        Figure("queue_wait_ms_p99", "Queue wait p99", "ms"),
                        Figure("queue_depth_max", "Queue depth max")),
                        detail=("completed", "late_threshold_ms", "issue_delay_ms_p50", "issue_delay_ms_p99",
                                "queue_wait_ms_mean", "queue_wait_ms_p50", "queue_depth_mean", "service_ms_p50",
                                "service_ms_p50_warmup", "latency_ms_p50", "latency_ms_p99", "seed", "find_peak"))
                    + WARMUP_FIGURES,
                    validity=LATENCY_BOUND)

SEED = 20240601  # the arrival pattern is the same on every run (and every trial) at a given rate
LATE_NS = 1_000_000  # a query issued more than 1 ms after its scheduled arrival counts as late
DRAIN_MIN_S = 1.0
DRAIN_MAX_S = 30.0
# Find-peak: trials of at least 100 queries (at most 10 s each unless the run's duration is longer), the
# search stops when the bracket is within 5% or after MAX_TRIALS trials.
TRIAL_MIN_QUERIES = 100
TRIAL_MAX_S = 10.0
PEAK_PRECISION = 0.05
MAX_TRIALS = 16
MIN_RATE = 1.0


@dataclass
class Served:
    """One stretch of Poisson arrivals at one rate, served by one worker."""

    qps: float
    issued: int
    completed: int
    dropped: int
    span_s: float  # first scheduled arrival's window start → last completion (or end of arrivals, if later)
    latency_ns: array
    wait_ns: array
    service_ns: array
    issue_delay_ns: array
    depth: array  # queries waiting or in service when each query arrived (itself excluded)
    stopped_early: bool = False

    def p(self, q: float, values: array | None = None) -> float | None:
        values = self.latency_ns if values is None else values
        value = _timing.percentile(values, q)
        return None if value is None else value / 1e6


def run(model: LoadedModel, spec: RunSpec, emit: Callable[[dict[str, Any]], None],
        cancelled: Callable[[], bool]) -> dict[str, Any]:
    """Warm up, (find the peak rate,) serve Poisson arrivals, and return the fields of the `result` event."""
    options = spec.scenario_options
    clock = time.perf_counter_ns
    with _timing.precise_sleep():
        warmup = _timing.warm_up(model.infer, spec, emit, cancelled, clock)
        extra: dict[str, Any] = {}
        qps = options.qps
        if options.find_peak:
            search = _find_peak(model.infer, spec, warmup, emit, cancelled)
            qps = search["peak_qps"]
            extra.update(search)
        emit(protocol.make("phase", phase="measuring", t_ns=clock()))
        recorder = _timing.Recorder(emit)
        exact = spec.iterations
        served = _serve(model.infer, qps, spec.duration_s, exact or options.max_queries, bool(exact), cancelled,
                        recorder=recorder, emit=emit)
    p99 = served.p(99)
    result: dict[str, Any] = {
        **_timing.result_head(served.completed, served.span_s, warmup, spec.batch),
        "target_qps": qps,
        "achieved_qps": served.completed / served.span_s if served.span_s > 0 else None,
        "issued": served.issued,
        "completed": served.completed,
        "dropped": served.dropped,
        "late": sum(1 for d in served.issue_delay_ns if d > LATE_NS),
        "late_threshold_ms": LATE_NS / 1e6,
        "issue_delay_ms_p50": served.p(50, served.issue_delay_ns),
        "issue_delay_ms_p99": served.p(99, served.issue_delay_ns),
        "queue_wait_ms_mean": statistics.fmean(served.wait_ns) / 1e6 if served.wait_ns else None,
        "queue_wait_ms_p50": served.p(50, served.wait_ns),
        "queue_wait_ms_p99": served.p(99, served.wait_ns),
        "queue_depth_mean": statistics.fmean(served.depth) if served.depth else None,
        "queue_depth_max": max(served.depth) if served.depth else 0,
        "service_ms_p50": served.p(50, served.service_ns),
        "latency_ms_p50": served.p(50),
        "latency_ms_p99": p99,
        "seed": SEED,
        **warmup.result_fields(),
    }
    service_p50 = result["service_ms_p50"]
    if service_p50 and qps and qps * service_p50 / 1e3 > 1:
        result["note"] = (f"the target rate {qps:g}/s is above what one worker serves (about "
                          f"{1e3 / service_p50:.0f}/s at the median service time): latency is mostly queueing")
    if served.dropped:
        result["note_dropped"] = (f"{served.dropped} queries were still queued when the drain ended and were not "
                                  "served; their latencies are missing, so the percentiles understate the queueing")
    if options.latency_bound_ms is not None:
        result["latency_bound_ms"] = options.latency_bound_ms
        result["meets_bound"] = p99 is not None and p99 <= options.latency_bound_ms and not served.dropped
    result.update(extra)
    return result


# ---- Private API
def _serve(infer: Callable[[], Any], qps: float, duration_s: float, limit: int | None, exact: bool,
           cancelled: Callable[[], bool], recorder: _timing.Recorder | None = None,
           emit: Callable[[dict[str, Any]], None] | None = None, give_up_over_ns: int | None = None,
           give_up_count: int | None = None, seed: int = SEED) -> Served:
    """Issue Poisson arrivals at `qps` for `duration_s` (or `limit` queries) to one worker; wait for it.

    With `recorder`, latencies are shipped as events (about every 100 ms, from this thread) and progress is
    emitted; trials pass none. `give_up_over_ns`/`give_up_count`: stop issuing once that many queries took
    longer than that (a trial that has already failed its bound).
    """
    clock = time.perf_counter_ns
    rng = random.Random(seed)
    pending: queue.SimpleQueue = queue.SimpleQueue()
    latency, wait, service = array("q"), array("q"), array("q")
    issue_delay, depth = array("q"), array("q")
    state = {"completed": 0, "over": 0, "last_end": 0}
    abandon = threading.Event()
    errors: list[BaseException] = []

    init_thread = _timing.thread_initializer()

    def serve() -> None:
        try:
            init_thread()
            while not abandon.is_set():
                item = pending.get()
                if item is None:
                    break
                scheduled = item
                start = clock()
                infer()
                end = clock()
                took = end - scheduled
                latency.append(took)
                wait.append(start - scheduled)
                service.append(end - start)
                if recorder is not None:
                    recorder.add(scheduled, took)
                if give_up_over_ns is not None and took > give_up_over_ns:
                    state["over"] += 1
                state["completed"] += 1
                state["last_end"] = end
        except BaseException as exc:  # noqa: BLE001 — re-raised on the scheduler's thread
            errors.append(exc)

    worker = threading.Thread(target=serve, name="server-worker", daemon=True)
    worker.start()
    duration_ns = int(duration_s * 1e9)
    begin = clock() + 1_000_000  # 1 ms to settle: the first arrival is never late by construction
    issue_end = begin + duration_ns
    arrival = begin + int(rng.expovariate(qps) * 1e9)
    next_flush = begin + _timing.FLUSH_NS
    issued = 0
    stopped_early = ran_out = False  # ran_out: the arrivals filled the whole duration
    while not errors:
        if limit and issued >= limit:
            break
        if not exact and arrival >= issue_end:
            ran_out = True
            break
        now = clock()
        while now < arrival:
            if recorder is not None and now >= next_flush:
                next_flush = now + _timing.FLUSH_NS
                _ship(recorder, emit, issued, limit if exact else None, begin, duration_ns, now)
            if cancelled():
                break
            wake = min(arrival, next_flush) if recorder is not None else arrival
            time.sleep((wake - now) / 1e9)
            now = clock()
        if cancelled():
            break
        if give_up_count is not None and state["over"] > give_up_count:
            stopped_early = True
            break
        depth.append(issued - state["completed"])
        pending.put(arrival)
        issue_delay.append(now - arrival)
        issued += 1
        arrival += int(rng.expovariate(qps) * 1e9)
    if ran_out:
        _timing.sleep_until(issue_end, clock)  # the arrival window is the whole duration
    pending.put(None)
    drain_s = min(DRAIN_MAX_S, max(DRAIN_MIN_S, 0.5 * duration_s))
    drain_until = clock() + int(drain_s * 1e9)
    while worker.is_alive():
        if cancelled() or stopped_early or clock() >= drain_until:
            abandon.set()
            pending.put(None)  # wakes a worker waiting on an empty queue
            worker.join()
            break
        worker.join(_timing.FLUSH_NS / 1e9)
        if recorder is not None:
            _ship(recorder, emit, issued, limit if exact else None, begin, duration_ns, clock())
    if recorder is not None:
        recorder.ship()
    if errors:
        raise errors[0]
    completed = state["completed"]
    end = max(state["last_end"], issue_end) if ran_out else state["last_end"] or clock()
    return Served(qps=qps, issued=issued, completed=completed, dropped=issued - completed,
                  span_s=max(0, end - begin) / 1e9, latency_ns=latency, wait_ns=wait, service_ns=service,
                  issue_delay_ns=issue_delay, depth=depth, stopped_early=stopped_early)


def _ship(recorder: _timing.Recorder, emit, issued: int, limit: int | None, begin: int, duration_ns: int,
          now: int) -> None:
    recorder.ship()
    fraction = issued / limit if limit else (now - begin) / duration_ns
    _timing.progress(emit, "measuring", fraction, recorder.count, max(0, now - begin) / 1e9)


def _find_peak(infer: Callable[[], Any], spec: RunSpec, warmup: _timing.Warmup,
               emit: Callable[[dict[str, Any]], None], cancelled: Callable[[], bool]) -> dict[str, Any]:
    """Exponential then binary search over short trials; return the peak rate and the trials."""
    bound_ms = spec.scenario_options.latency_bound_ms
    bound_ns = int(bound_ms * 1e6)
    service = list(warmup.latencies_ns) or [int(warmup.first_inference_ms * 1e6)]
    service_p50 = statistics.median(service)
    service_p99 = _timing.percentile(service, 99) if len(service) >= TRIAL_MIN_QUERIES else service_p50
    if service_p99 > bound_ns:
        raise ValueError(f"even 1 query/s (one query at a time, no queueing) gives p99 = {service_p99 / 1e6:.3g} ms "
                         f"> {bound_ms:g} ms bound: raise --latency-bound-ms or use a smaller model")
    capacity = 1e9 / max(1.0, service_p50)
    rate = min(MAX_QPS, spec.scenario_options.qps or 0.5 * capacity)
    floor = max(MIN_RATE, min(rate, capacity / 1024))
    trials: list[dict[str, Any]] = []
    started = time.perf_counter_ns()

    def trial(qps: float) -> bool:
        trial_s = min(max(spec.duration_s, TRIAL_MAX_S), max(spec.duration_s, TRIAL_MIN_QUERIES / qps))
        planned = qps * trial_s
        served = _serve(infer, qps, trial_s, None, False, cancelled, give_up_over_ns=bound_ns,
                        give_up_count=max(1, int(0.01 * planned)))
        p99 = served.p(99)
        ok = (not served.stopped_early and not served.dropped and p99 is not None and p99 <= bound_ms)
        trials.append({"qps": qps, "p99_ms": p99, "ok": ok, "queries": served.completed,
                       "stopped_early": served.stopped_early, "dropped": served.dropped})
        _timing.progress(emit, "warmup", len(trials) / MAX_TRIALS, len(trials),
                         (time.perf_counter_ns() - started) / 1e9,
                         note=f"find-peak trial {len(trials)}: {qps:.4g} queries/s → p99 "
                              f"{'n/a' if p99 is None else f'{p99:.3g} ms'} ({'ok' if ok else 'over'})")
        return ok

    low = high = None
    if trial(rate):
        low = rate
        while rate * 2 <= MAX_QPS and len(trials) < MAX_TRIALS and not cancelled():
            rate *= 2
            if trial(rate):
                low = rate
            else:
                high = rate
                break
    else:
        high = rate
        while rate > floor and len(trials) < MAX_TRIALS and not cancelled():
            rate = max(floor, rate / 2)
            if trial(rate):
                low = rate
                break
            high = rate
    if cancelled():
        raise RuntimeError("find-peak was cancelled before it found a rate")
    if low is None:
        last = trials[-1]
        raise ValueError(f"even {last['qps']:.3g} query/s gives p99 = "
                         f"{'n/a' if last['p99_ms'] is None else format(last['p99_ms'], '.3g')} ms > {bound_ms:g} ms "
                         "bound: raise --latency-bound-ms or use a smaller model")
    while high is not None and (high - low) / low > PEAK_PRECISION and len(trials) < MAX_TRIALS:
        if cancelled():
            raise RuntimeError("find-peak was cancelled before it finished")
        middle = (low + high) / 2
        if trial(middle):
            low = middle
        else:
            high = middle
    return {"find_peak": True, "peak_qps": low, "latency_bound_ms": bound_ms, "trials": trials,
            "search_bracket_qps": [low, high], "service_ms_p50_warmup": service_p50 / 1e6}
