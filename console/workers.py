"""Calls into engines code that imports torch/onnxruntime, made in a short-lived spawned process.

The function is named as "module:function" and imported only in the child, so the console process never
imports the module (nor torch/onnxruntime behind it).
"""

from __future__ import annotations

import concurrent.futures
import importlib
import multiprocessing
from typing import Any


def call_in_worker(target: str, *args: Any, timeout_s: float = 120.0) -> Any:
    """Run `module:function(*args)` in a fresh spawn-context process; its exceptions are re-raised here."""
    ctx = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(max_workers=1, mp_context=ctx) as pool:
        return pool.submit(_call_by_name, target, args).result(timeout=timeout_s)


def _call_by_name(target: str, args: tuple) -> Any:
    module, _, function = target.partition(":")
    return getattr(importlib.import_module(module), function)(*args)
