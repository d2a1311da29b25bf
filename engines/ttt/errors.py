"""The one error a time-to-train run raises for bad input: what is wrong, and what to do about it.

The message/fix pair, its pickling and `is_bad_input` are engines.bad_input.BadInputError's.
"""

from __future__ import annotations

from engines.bad_input import BadInputError


class TimeToTrainError(BadInputError):
    """Bad input to a time-to-train run or an impossible request (`message`, `fix`: see BadInputError)."""
