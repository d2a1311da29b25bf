"""Reads a model file's inputs and fingerprint in a spawned worker (torch files need torch to be read)."""

from __future__ import annotations

from typing import Any

from console.workers import call_in_worker


def inspect_model(path: str, timeout_s: float = 120.0) -> dict[str, Any]:
    """{path, format, inputs [{name, dtype, shape}], sha256, …}; raises with the worker's clear message."""
    info = call_in_worker("engines.model_files:inspect", path, timeout_s=timeout_s)
    return {**info, "path": path}
