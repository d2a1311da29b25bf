"""Number formatting shared by the result views.

People read these figures off a wall screen: three significant digits say as much as a measurement supports,
thousands separators make large counts readable at a glance, and a missing value is an em dash, never a 0.
"""

from __future__ import annotations

import math
import numbers

MISSING = "—"


def as_number(value) -> float | None:
    """`value` as a float; None when it is missing: None, a bool, not a number, or NaN (±inf is kept)."""
    if value is None or isinstance(value, bool):
        return None
    try:
        x = float(value)
    except (TypeError, ValueError):
        return None
    return x if x == x else None


def format_number(value, sig: int = 3) -> str:
    """``sig`` significant digits (0.0123, 12.3, 123), whole numbers from 1,000 up, "—" when missing."""
    x = as_number(value)
    if x is None or not math.isfinite(x):
        return MISSING
    if isinstance(value, numbers.Integral):
        return f"{int(value):,}"
    if x == 0:
        return "0"
    rounded = float(f"{x:.{sig - 1}e}")  # round first so 9.996 becomes 10.0, not 10.00
    decimals = sig - 1 - math.floor(math.log10(abs(rounded)))
    if decimals <= 0:
        return f"{round(x):,}"
    return f"{rounded:,.{decimals}f}"


def format_quantity(value, unit: str, sig: int = 3) -> str:
    """A number with its unit ("12.3 ms"), or "—" alone when the value is missing."""
    text = format_number(value, sig)
    if text == MISSING or not unit:
        return text
    return f"{text} {unit}"
