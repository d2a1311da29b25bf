"""Collectives in the console: run one in a worker, keep it as a history run, find the latest for the window.
Qt-free, and torch-free (the worker does the measuring)."""

from console.collectives.launch import run
from console.collectives.runs import is_collectives_run, latest, spec_for, store, store_with_status

__all__ = ["run", "store", "store_with_status", "latest", "is_collectives_run", "spec_for"]
