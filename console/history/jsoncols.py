"""JSON as the history stores it: NaN and ±infinity become null, because SQLite's JSON functions (and the
run_summary view, Datasette, jq) reject the bare NaN that Python's json writes by default."""

from __future__ import annotations

import dataclasses
import json
import math
import os
from typing import Any

import numpy as np


def dumps(value: Any, what: str) -> str:
    """Strict JSON text of `value` (numpy values, paths, dataclasses and sets converted; non-finite → null)."""
    try:
        return json.dumps(finite(value), default=_default, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{what} cannot be stored as JSON: {exc}") from exc


def finite(value: Any) -> Any:
    """`value` with every non-finite float replaced by None (containers copied, everything else as is)."""
    if isinstance(value, float) or isinstance(value, np.floating):
        return float(value) if math.isfinite(value) else None
    if isinstance(value, dict):
        return {key: finite(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite(item) for item in value]
    if isinstance(value, np.ndarray):
        return finite(value.tolist())
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return finite(dataclasses.asdict(value))
    return value


def _default(value: Any) -> Any:
    if isinstance(value, np.generic):
        return finite(value.item())
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    if isinstance(value, (set, frozenset)):
        return sorted(value, key=str)
    raise TypeError(f"{type(value).__name__} is not JSON-serialisable")
