"""The one error a time-to-train run raises for bad input: what is wrong, and what to do about it.

Plain data (message, fix), so it crosses the worker's process boundary intact; `is_bad_input` tells
console.storage.launch that this is the user's input (exit 2 territory), not a crash.
"""

from __future__ import annotations


class TimeToTrainError(ValueError):
    """Bad input or an impossible request: `message` names the problem, `fix` says what to do."""

    is_bad_input = True

    def __init__(self, message: str, fix: str = ""):
        super().__init__(message, fix)
        self.message = str(message)
        self.fix = str(fix)

    def __str__(self) -> str:
        return f"{self.message}: {self.fix}" if self.fix else self.message

    def __reduce__(self):  # pickled across the worker's boundary with both parts
        return (type(self), (self.message, self.fix))
