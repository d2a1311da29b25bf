"""One sampler for the whole console: idle telemetry from launch, shared by every run.

The window starts a hub when it opens (like a system monitor) and each run subscribes to it for its
duration, so a run never waits for a sampler to start and the live plots never have a gap. Recent samples
are kept in a bounded ring only; what belongs to a run is stored by that run's session.
"""

from __future__ import annotations

import collections
import itertools
import threading
from collections.abc import Callable
from typing import Any

from console.telemetry.sampler import Sampler

SamplesCallback = Callable[[list[tuple]], None]
SourcesCallback = Callable[[list[dict[str, Any]]], None]


class TelemetryHub:
    """Fans one Sampler's batches out to subscribers; keeps the last `keep_rows` rows for late joiners."""

    # ---- Public API
    def __init__(self, rate_hz: float = 10.0, sources: list[str] | None = None, keep_rows: int = 200_000):
        self._sampler = Sampler(rate_hz=rate_hz, sources=sources, on_samples=self._fan_samples,
                                on_sources=self._fan_sources)
        self._subscribers: dict[int, tuple[SamplesCallback, SourcesCallback | None]] = {}
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self._recent: collections.deque[tuple] = collections.deque(maxlen=keep_rows)
        self.sources: list[dict[str, Any]] = []

    def start(self) -> None:
        self._sampler.start()

    def stop(self) -> None:
        self._sampler.stop()

    def is_alive(self) -> bool:
        return self._sampler.is_alive()

    @property
    def pid(self) -> int | None:
        """The sampler process's pid (None before start): a run moves it to the console's cores."""
        return self._sampler.pid

    @property
    def death(self) -> dict[str, Any] | None:
        """How the sampler died on its own (Sampler.death), None while it lives: a run notes what it covered."""
        return self._sampler.death

    def watch(self, pid: int | None) -> None:
        """Attribute worker metrics (RSS, CPU, GPU memory) to this process from now on."""
        self._sampler.watch(pid)

    def subscribe(self, on_samples: SamplesCallback, on_sources: SourcesCallback | None = None) -> int:
        with self._lock:
            token = next(self._ids)
            self._subscribers[token] = (on_samples, on_sources)
        if on_sources is not None and self.sources:
            on_sources(self.sources)
        return token

    def unsubscribe(self, token: int) -> None:
        with self._lock:
            self._subscribers.pop(token, None)

    def recent(self) -> list[tuple]:
        """The rows kept in memory (bounded), oldest first — what a view that opens late starts from."""
        with self._lock:
            return list(self._recent)

    # ---- Private API
    def _fan_samples(self, rows: list[tuple]) -> None:
        with self._lock:
            self._recent.extend(rows)
            callbacks = [on_samples for on_samples, _ in self._subscribers.values()]
        for callback in callbacks:
            callback(rows)

    def _fan_sources(self, sources: list[dict[str, Any]]) -> None:
        self.sources = sources
        with self._lock:
            callbacks = [on_sources for _, on_sources in self._subscribers.values() if on_sources]
        for callback in callbacks:
            callback(sources)
