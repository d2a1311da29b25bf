"""Time-to-train in the console: run one in a worker, keep it as a history run, score several as MLPerf Training
does. Qt-free, and torch-free (the worker trains)."""

from console.ttt.launch import run
from console.ttt.runs import is_ttt_run, spec_for, store, store_with_status
from console.ttt.score import score

__all__ = ["run", "store", "store_with_status", "is_ttt_run", "spec_for", "score"]
