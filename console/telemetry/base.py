"""What a telemetry source is, and the shape of what it reports.

A source is a plug-in: one module holding one :class:`Source` subclass, plus one line in
:data:`console.telemetry.registry.SOURCES`. The subclass declares its metrics' metadata (unit, plot, energy
role) in ``metric_specs``; the plots and energy accounting read it from there. The sampler process opens
every source, asks each what it can and cannot measure (and why not), then calls :meth:`Source.sample` on a
fixed schedule.

Clock
-----
Every sample carries ``t_ns`` taken from :func:`time.perf_counter_ns`. On Linux that is
``CLOCK_MONOTONIC``: one system-wide clock, the same in every process, and the one the engine workers use
for their latency timestamps. Telemetry and latency therefore lie on one time axis without any offset
correction, even though they are recorded in different processes. (It is not wall-clock time: it does not
jump with NTP and its zero is arbitrary, so store a wall-clock anchor next to it when persisting.)
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from .methods import METHODS, Method

if TYPE_CHECKING:
    from .metadata import MetricSpec

# (t_ns, source, metric, value, unit, method) -- a plain tuple so a batch pickles small and fast.
# t_ns: time.perf_counter_ns() (CLOCK_MONOTONIC on Linux, shared with the engine workers).
# method: "measured" (read from a counter or gauge), "integrated" (derived from measured samples over
# time), "estimated" (a model, e.g. TDP x utilisation) -- an estimate is never shown as a measurement.
Sample = tuple[int, str, str, float, str, str]


@dataclass(frozen=True)
class MetricInfo:
    """One metric a source can report: its name, unit and how the value is obtained."""

    name: str
    unit: str
    description: str
    method: Method = "measured"
    # How often the value is refreshed at most, in seconds; None = at every sampler tick. Slow sensors
    # (temperature, clocks) are read less often than power: their values change slowly and some reads cost.
    period_s: float | None = None

    def __post_init__(self) -> None:
        if self.method not in METHODS:
            raise ValueError(f"MetricInfo.method must be one of {METHODS}, got {self.method!r}")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class Every:
    """Due-check for a group of metrics a source reads less often than the sampler ticks.

    The sampler ticks on an absolute grid and is never early, only late, so a plain ``t >= due`` test would
    drift by a tick whenever one tick is a little later than the previous one. ``due`` therefore accepts a
    tick up to half a tick period early, and advances on the grid of ``period_s`` (re-anchored after a gap).
    """

    __slots__ = ("period_ns", "slack_ns", "next_ns")

    def __init__(self, period_s: float, tick_ns: int) -> None:
        self.period_ns = max(1, round(period_s * 1e9))
        self.slack_ns = max(0, tick_ns // 2)
        self.next_ns: int | None = None

    def due(self, t_ns: int) -> bool:
        nxt = self.next_ns
        if nxt is not None and t_ns < nxt - self.slack_ns:
            return False
        if nxt is None or t_ns - nxt > self.period_ns:  # first read, or a long gap: re-anchor on now
            self.next_ns = t_ns + self.period_ns
        else:
            self.next_ns = nxt + self.period_ns
        return True


class Source(ABC):
    """A telemetry source, polled by the sampler process.

    Life cycle: ``open()`` once, then ``available()``; when available, ``metrics()`` and
    ``unavailable_metrics()`` describe it, ``sample(t_ns)`` is called at the sampling rate, and
    ``watch_pid()`` whenever the parent starts or ends a worker; ``close()`` at the end.

    Rules for implementers:
    - ``open()`` must not raise for an *expected* absence (no driver, no permission, no device): record
      the reason and report it through ``available()``. An unexpected exception is caught by the sampler
      and the source is reported unavailable with that exception as the reason.
    - ``sample()`` is on the hot path (10 Hz by default, in a process that must stay below 1 % of a core):
      no imports, no allocation-heavy work, no blocking I/O beyond reading counters.
    - ``sample()`` returns only metrics it could read this time; a metric that vanishes (e.g. the watched
      pid exited) is simply not returned. A sensor that is not there is never reported as 0: it is left out
      of ``metrics()`` and named, with the reason, in ``unavailable_metrics()``.
    - Rates (bytes/s, faults/s, W from an energy counter) are deltas over the interval since the previous
      read, stamped at its end; the first read only primes them.
    """

    name: str = ""
    # What each metric this source can emit is (unit, plot, energy role): see console/telemetry/metadata.py.
    # Declared on the class, so the console can route and account rows without opening the source.
    metric_specs: tuple[MetricSpec, ...] = ()
    # Poll this source at most every ``period_s`` seconds (None: at every tick). The sampler honours it on its
    # tick grid (every n-th tick). A source mixing fast and slow metrics leaves it None and throttles its slow
    # group itself with :class:`Every`.
    period_s: float | None = None
    # The sampler's tick period, set by the sampler before ``open()`` (the default is 10 Hz's).
    tick_ns: int = 100_000_000

    def open(self) -> None:  # noqa: B027 -- optional hook, deliberately empty
        """Acquire handles (libraries, devices, files) and prime any rate counters."""

    def available(self) -> tuple[bool, str]:
        """(True, "") when the source can sample, else (False, why not)."""
        return True, ""

    @abstractmethod
    def metrics(self) -> list[MetricInfo]:
        """Metrics this source can report (after ``open()``)."""

    def unavailable_metrics(self) -> dict[str, str]:
        """Metrics this kind of source would report but cannot here: metric name -> why not."""
        return {}

    def watch_pid(self, pid: int | None) -> None:  # noqa: B027 -- optional hook, deliberately empty
        """Follow this process (the engine worker) from now on; None stops following."""

    @abstractmethod
    def sample(self, t_ns: int) -> list[Sample]:
        """Read every metric now; stamp the rows with ``t_ns``."""

    def close(self) -> None:  # noqa: B027 -- optional hook, deliberately empty
        """Release what ``open()`` acquired. Must be safe to call more than once."""
