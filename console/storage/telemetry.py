"""What the storage devices did while a storage benchmark ran (console/telemetry/diskstats: MB/s, IOPS, queue
depth, await, page cache, NVMe temperature), kept so it is stored with the run on the same monotonic clock as the
benchmark's reads.

The window already samples every source in its telemetry hub and passes it here; the CLI has none, so this starts
a sampler of the storage source alone (its own process, as every sampler: the benchmark's worker is not disturbed)
for the benchmark's duration. Rows beyond MAX_ROWS are dropped and counted (`dropped`), never silently. Qt-free.
"""

from __future__ import annotations

import threading
from typing import Any

SOURCE = "storage"
MAX_ROWS = 400_000  # about 10 minutes of a busy machine's devices at 10 Hz
CLI_RATE_HZ = 4.0  # the CLI's own sampler: enough for a minutes-long benchmark, cheap beside it


class StorageTelemetry:
    """`with StorageTelemetry(hub) as kept:` … `kept.rows`; hub None starts (and stops) a sampler of its own.
    A sampler that cannot start leaves `rows` empty and says why in `problem`."""

    def __init__(self, hub: Any = None, rate_hz: float = CLI_RATE_HZ, on_rows: Any = None):
        self._hub, self._own = hub, hub is None
        self._rate_hz = rate_hz
        self._on_rows = on_rows
        self._token: int | None = None
        self._lock = threading.Lock()
        self.rows: list[tuple] = []
        self.dropped = 0
        self.problem: str | None = None

    def __enter__(self) -> StorageTelemetry:
        if self._own:
            try:
                from console.telemetry.hub import TelemetryHub

                self._hub = TelemetryHub(rate_hz=self._rate_hz, sources=[SOURCE])
                self._hub.start()
            except Exception as exc:  # telemetry is a companion to the benchmark, never its reason to fail
                self.problem = f"storage telemetry could not start ({type(exc).__name__}: {exc})"
                self._hub = None
                return self
        if self._hub is not None:
            self._token = self._hub.subscribe(self._keep)
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self._hub is not None and self._token is not None:
            self._hub.unsubscribe(self._token)
        if self._own and self._hub is not None:
            self._hub.stop()

    def take(self) -> list[tuple]:
        """The rows kept so far (and forget them)."""
        with self._lock:
            rows, self.rows = self.rows, []
        return rows

    def _keep(self, rows: list[tuple]) -> None:
        kept = [tuple(row) for row in rows if len(row) > 1 and row[1] == SOURCE]
        if not kept:
            return
        with self._lock:
            room = MAX_ROWS - len(self.rows)
            self.rows.extend(kept[:max(0, room)])
            self.dropped += max(0, len(kept) - max(0, room))
        if self._on_rows is not None:
            self._on_rows(kept)
