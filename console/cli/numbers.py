"""Argparse types for numeric flags: nan, ±inf and values out of range are refused as the flag's own error.

Why: a plain `type=int`/`type=float` accepts 'inf', 'nan' and 1e20, which then fail far away (an SQLite
overflow, a sampler that never ends, a projection that prints inf) — as a traceback. With a type from here the
value is refused where it is typed, in argparse's usual words, exit 2:
`labconsole history: error: argument --limit: must be a whole number from 1 to 1,000,000,000, got '1e20'`.
Spec options get their type from their OptionField (`spec_type`), so the flag and the spec share one range.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from typing import Any

__all__ = ["whole", "number", "spec_type"]


# ---- Public API
def whole(low: int, high: int) -> Callable[[str], int]:
    """A whole number from `low` to `high` (both included)."""
    allowed = f"a whole number from {low:,} to {high:,}"

    def parse(text: str) -> int:
        value = _whole_or_none(text)
        if value is None or not low <= value <= high:
            raise argparse.ArgumentTypeError(f"must be {allowed}, got {text!r}")
        return value

    parse.__name__ = "whole number"
    return parse


def number(low: float, high: float, *, low_open: bool = False, high_open: bool = False,
           unit: str = "") -> Callable[[str], float]:
    """A finite number between `low` and `high`; `*_open` leaves that end out (0 < alpha < 1)."""
    allowed = f"a number {'>' if low_open else '≥'} {_fmt(low)} and {'<' if high_open else '≤'} {_fmt(high)}" + (
        f" {unit}" if unit else "")

    def parse(text: str) -> float:
        value = _float_or_none(text)
        inside = value is not None and (low < value if low_open else low <= value) and (
            value < high if high_open else value <= high)
        if not inside:
            raise argparse.ArgumentTypeError(f"must be {allowed}, got {text!r}")
        return value

    parse.__name__ = "number"
    return parse


def spec_type(fld: Any) -> Callable[[str], Any]:
    """The argparse type of a spec option of kind int or float: its bounds are the spec's (engines.options)."""
    from engines.options import SpecError, check_value, int_bounds

    def parse(text: str) -> Any:
        value: Any = _whole_or_none(text) if fld.kind == "int" else _float_or_none(text)
        if value is None:
            if fld.kind == "int":
                low, high = int_bounds(fld)
                raise argparse.ArgumentTypeError(f"must be a whole number from {low} to {high}, got {text!r}")
            value = math.nan  # check_value names the range
        try:
            check_value(fld, value)
        except SpecError as exc:
            raise argparse.ArgumentTypeError(exc.detail.replace(f"got {value}", f"got {text!r}")) from None
        return value

    parse.__name__ = fld.kind
    return parse


# ---- Private API
def _whole_or_none(text: str) -> int | None:
    try:
        return int(str(text).strip())
    except ValueError:
        return None


def _float_or_none(text: str) -> float | None:
    try:
        value = float(str(text).strip())
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def _fmt(value: float) -> str:
    return f"{int(value):,}" if float(value).is_integer() else f"{value:g}"
