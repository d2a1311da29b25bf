"""Run history: every run, its latencies and telemetry, in one plain SQLite file (WAL, sqlite-utils).

`HistoryStore` is one connection for reading and direct writes; `HistoryWriter` is the thread that records
live runs. Both raise `HistoryError`, whose message names the problem and the fix. No Qt here: the window,
the CLI and tests all use the same code.
"""

from console.history.errors import HistoryError
from console.history.schema import (
    FINAL_STATUSES,
    LATEST_VERSION,
    MIGRATIONS,
    RUN_STATUSES,
    SAMPLE_METHODS,
    SWEEP_STATUSES,
)
from console.history.store import INTERRUPTED_ERROR, HistoryStore, open_reader
from console.history.writer import HistoryWriter

__all__ = [
    "FINAL_STATUSES",
    "INTERRUPTED_ERROR",
    "LATEST_VERSION",
    "MIGRATIONS",
    "RUN_STATUSES",
    "SAMPLE_METHODS",
    "SWEEP_STATUSES",
    "HistoryError",
    "HistoryStore",
    "HistoryWriter",
    "open_reader",
]
