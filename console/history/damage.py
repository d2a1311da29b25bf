"""Reading a run's JSON columns strictly, and saying which run and field is damaged instead of failing.

Why: a history is a plain SQLite file that other tools write too (sqlite3, Datasette, a disk that lost a sector,
an import of another machine's file). One row whose JSON is cut off (`{not json`), holds NaN, or is the wrong
kind of value must not take the whole history down. Every reader of runs decodes through `decode_run`: each JSON
column is parsed as strict JSON (RFC 8259 — no NaN or Infinity — and the column's kind of value: an object, or a
list of text for tags). A column that fails is set to None and the run carries
`damaged: [{"field", "reason"}]`. Then each caller decides, never by accident: lists of runs skip a damaged one
(the store remembers it for a one-line note), a run asked for by id is refused with `DamagedRunError` naming the
field and the fix, and `history` and the History page show it as damaged. The same check refuses such rows at
import, so they do not spread.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterable, Mapping
from typing import Any, TextIO

from console.history.errors import HistoryError

# JSON column → (the kind of value it holds, its table): what a healthy row has
RUN_COLUMNS: dict[str, tuple[type, str]] = {
    "spec": (dict, "runs"), "summary": (dict, "runs"), "environment": (dict, "runs"),
    "sweep_point": (dict, "runs"), "configuration": (dict, "run_facts"), "tags": (list, "run_facts"),
}
SWEEP_COLUMNS: dict[str, tuple[type, str]] = {"grid": (dict, "sweeps"), "base": (dict, "sweeps"),
                                             "summary": (dict, "sweeps")}
LABELS = {"tags": "tag list", "sweep_point": "sweep point"}  # a field as a sentence names it ("its tag list is …")
_KINDS = {dict: "an object", list: "a list", str: "a string", int: "a number", float: "a number", bool: "true/false"}
RESTORE = "restore the history file from a backup (or set the column right with sqlite3) to use it again"
FIX = ("the other runs are unaffected and commands that list runs skip this one (`labconsole history` marks each "
       f"damaged run); {RESTORE}")


class DamagedRunError(HistoryError):
    """A run asked for by id cannot be used: one of its JSON columns is damaged. `damaged` lists which and why."""

    def __init__(self, run_id: str, damaged: list[dict[str, str]], path: str | os.PathLike | None = None):
        self.run_id = run_id
        self.damaged = damaged
        super().__init__(f"run {run_id[:8]} is damaged in the history: {describe(damaged)}", FIX, path)


def sweep_error(sweep_id: str, damaged: list[dict[str, str]], path: str | os.PathLike | None = None) -> HistoryError:
    """A sweep asked for by id whose grid, base or summary is damaged: which and why, and the fix."""
    return HistoryError(f"sweep {sweep_id[:8]} is damaged in the history: {describe(damaged)}",
                        f"its runs are unaffected (`labconsole history` lists them); {RESTORE}", path)


def decode(field: str, text: Any, columns: Mapping[str, tuple[type, str]] = RUN_COLUMNS) -> tuple[Any, str | None]:
    """(value, None) for a healthy column, (None, reason) for a damaged one. NULL and JSON null are 'absent'.
    `columns`: the table's kinds of value (RUN_COLUMNS, SWEEP_COLUMNS)."""
    if text is None:
        return None, None
    kind = columns[field][0] if field in columns else None
    if not isinstance(text, str):
        what = "binary data" if isinstance(text, (bytes, bytearray, memoryview)) else f"a bare {type(text).__name__}"
        return None, f"holds {what}, not JSON text"
    try:
        value = _DECODER.decode(text)
    except json.JSONDecodeError as exc:
        return None, f"is not JSON ({exc.msg} at character {exc.pos})"
    except ValueError as exc:  # NaN / Infinity, an integer of thousands of digits
        return None, f"is not strict JSON ({_one_line(exc)})"
    except RecursionError:
        return None, "is nested too deeply to read"
    if value is None or kind is None:
        return value, None
    if not isinstance(value, kind):
        return None, f"holds {_KINDS.get(type(value), type(value).__name__)} where {_KINDS[kind]} belongs"
    if field == "tags" and not all(isinstance(tag, str) for tag in value):
        return None, "holds a list with something other than text in it"
    return value, None


def decode_run(row: dict[str, Any], columns: Mapping[str, tuple[type, str]] = RUN_COLUMNS) -> dict[str, Any]:
    """Decode the JSON columns of a run row (or a sweep row: SWEEP_COLUMNS) in place; a damaged one becomes None
    and is listed in `damaged`."""
    damaged = []
    for field in columns:
        if field not in row:
            continue
        row[field], reason = decode(field, row[field], columns)
        if reason:
            damaged.append({"field": field, "reason": reason})
    if damaged:
        row["damaged"] = damaged
    return row


def describe(damaged: Iterable[Mapping[str, str]]) -> str:
    """'its summary is not JSON (…); its environment …' — one line."""
    return "; ".join(f"its {LABELS.get(item['field'], item['field'])} {item['reason']}" for item in damaged)


def skipped_note(run_id: str, damaged: list[dict[str, str]]) -> str:
    """The one line a command prints when it leaves a damaged run out."""
    return (f"labconsole: note: skipped run {run_id[:8]}, which is damaged ({describe(damaged)}); "
            "`labconsole history` lists it")


def print_skipped(store: Any, stream: TextIO | None = None) -> int:
    """Print one note per damaged run the store's listings left out (store.skipped_damaged); returns how many."""
    skipped = getattr(store, "skipped_damaged", {}) or {}
    for run_id, damaged in skipped.items():
        print(skipped_note(run_id, damaged), file=stream or sys.stderr)
    return len(skipped)


# ---- Private helpers
def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON value")


# One decoder, floats parsed in C: a listing of 10,000 runs decodes as fast as with json.loads. (A number beyond a
# double, 1e999, reads as infinity as in any JSON reader; checking each float in Python cost a third more time.)
_DECODER = json.JSONDecoder(parse_constant=_no_constant)


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())[:200]
