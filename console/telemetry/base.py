"""What a telemetry source is, and the shape of what it reports.

A source is a plug-in: one module holding one :class:`Source` subclass, plus one line in
:data:`console.telemetry.registry.SOURCES`. The sampler process opens every source, asks each what it
can and cannot measure (and why not), then calls :meth:`Source.sample` on a fixed schedule.

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
from typing import Literal

# (t_ns, source, metric, value, unit, method) -- a plain tuple so a batch pickles small and fast.
# t_ns: time.perf_counter_ns() (CLOCK_MONOTONIC on Linux, shared with the engine workers).
# method: "measured" (read from a counter or gauge), "integrated" (derived from measured samples over
# time), "estimated" (a model, e.g. TDP x utilisation) -- an estimate is never shown as a measurement.
Sample = tuple[int, str, str, float, str, str]

Method = Literal["measured", "integrated", "estimated"]
METHODS: tuple[str, ...] = ("measured", "integrated", "estimated")


@dataclass(frozen=True)
class MetricInfo:
    """One metric a source can report: its name, unit and how the value is obtained."""

    name: str
    unit: str
    description: str
    method: Method = "measured"

    def __post_init__(self) -> None:
        if self.method not in METHODS:
            raise ValueError(f"MetricInfo.method must be one of {METHODS}, got {self.method!r}")

    def to_dict(self) -> dict[str, str]:
        return asdict(self)


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
      pid exited) is simply not returned.
    """

    name: str = ""

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
