"""What goes into a history row and what comes out of one: a spec as a dict, JSON text, plain numbers, sample rows.

Every part of the store (store_runs, store_series, store_cards …) shares these; the writer thread uses
check_storable, json_copy and sample_row to refuse bad input on the caller's thread, before anything is queued.
"""

from __future__ import annotations

import dataclasses
import json
import os
import sqlite3
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from console.history import jsoncols, schema
from console.history.errors import HistoryError

SPEC_COLUMNS = ("name", "model", "engine", "target", "scenario")  # the spec's fields that are columns of `runs`


def check_storable(spec: Mapping[str, Any], path: str | os.PathLike | None = None) -> None:
    """Refuse a spec whose text SQLite cannot store (a lone surrogate such as '\\udcff': a byte of a file name or
    an argument in another encoding), naming the field, before anything is measured for it."""
    for column in SPEC_COLUMNS:
        value = spec.get(column)
        if value is None:
            continue
        try:
            str(value).encode("utf-8")
        except UnicodeEncodeError as exc:
            flag = "--name" if column == "name" else f"--{column}"
            raise HistoryError(
                f"the run's {column} {ascii(str(value))} cannot be stored in the history: it holds "
                f"{ascii(exc.object[exc.start:exc.end])}, which is not a character (a byte of text in another "
                "encoding, e.g. from a file name)",
                f"give a {column} in plain Unicode text ({flag} TEXT); rename the file if it came from one.",
                path) from exc


def as_dict(value: Any) -> dict[str, Any]:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    if isinstance(value, Mapping):
        return dict(value)
    raise TypeError(f"spec must be a mapping or a dataclass, got {type(value).__name__}")


def dumps(value: Any, what: str) -> str:
    return jsoncols.dumps(value, what)


def json_copy(value: Any, what: str) -> Any:
    """A deep, JSON-shaped copy: what the database will hold, taken now (the caller may mutate the original)."""
    return None if value is None else json.loads(dumps(value, what))


def dumps_or_none(value: Any, what: str) -> str | None:
    return None if value is None else dumps(value, what)


def text_or_none(value: Any) -> str | None:
    return None if value is None else str(value)


def int_or_none(value: Any) -> int | None:
    try:
        return None if value is None or isinstance(value, bool) else int(value)
    except (TypeError, ValueError):
        return None


def int_array(values: Sequence[int] | np.ndarray, what: str) -> np.ndarray:
    array = np.asarray(values)
    if array.ndim != 1:
        raise ValueError(f"{what} must be one-dimensional, got shape {array.shape}")
    if array.size and not np.issubdtype(array.dtype, np.integer):
        raise ValueError(f"{what} must hold integer nanoseconds, got {array.dtype}")
    return array.astype(np.int64, copy=True)


def sample_row(row: Sequence[Any]) -> tuple[int, str, str, float | None, str, str]:
    """Validate one (t_ns, source, metric, value, unit, method) row and give it plain Python types."""
    t_ns, source, metric, value, unit, method = row
    if method not in schema.SAMPLE_METHODS:
        raise ValueError(f"sample method must be one of {', '.join(schema.SAMPLE_METHODS)}, got {method!r}")
    return (int(t_ns), str(source), str(metric), None if value is None else float(value), unit, method)


def dicts(cursor: sqlite3.Cursor) -> list[dict[str, Any]]:
    names = [column[0] for column in cursor.description]
    return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]
