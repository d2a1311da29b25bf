"""The base of the errors a benchmark raises for bad input: what is wrong, and what to do about it.

Plain data (message, fix), so it crosses the worker's process boundary intact (pickled back with both parts) and the
console can print both; `is_bad_input` tells the launcher (console.storage.launch) that this is the user's input,
not a crash. Each kind names its own subclass (CollectivesError, StorageError, TimeToTrainError).
"""

from __future__ import annotations


class BadInputError(ValueError):
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
