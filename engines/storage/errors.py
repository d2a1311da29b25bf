"""The one error a storage benchmark raises for bad input: what is wrong, and what to do about it.

Plain data (message, fix) so it crosses a process boundary intact: the console runs a kind in a spawned worker,
and the exception is pickled back with both parts.
"""

from __future__ import annotations


class StorageError(ValueError):
    """Bad input or an impossible request: `message` names the problem, `fix` says what to do."""

    def __init__(self, message: str, fix: str = ""):
        super().__init__(message, fix)
        self.message = str(message)
        self.fix = str(fix)

    def __str__(self) -> str:
        return f"{self.message}: {self.fix}" if self.fix else self.message

    def __reduce__(self):  # pickled across the worker's boundary with both parts
        return (type(self), (self.message, self.fix))
