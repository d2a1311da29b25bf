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


def choice_list(value: object, allowed: tuple[str, ...] | list[str], what: str) -> list[str]:
    """A comma-separated string or a list of names, each one of `allowed` (all of them when empty), duplicates
    dropped; a StorageError naming the unknown ones otherwise."""
    names = value or list(allowed)
    if isinstance(names, str):
        names = [name.strip() for name in names.split(",") if name.strip()]
    unknown = [name for name in names if name not in allowed]
    if unknown or not names:
        raise StorageError(f"unknown {what} {', '.join(unknown) or '(none given)'}",
                           f"choose from {','.join(allowed)} (comma-separated)")
    return list(dict.fromkeys(names))


def whole_number(value: object, flag: str, low: int, high: int, fix: str) -> int:
    """`value` as an int from `low` to `high` (a bool is not a number); a StorageError with `fix` otherwise."""
    if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
        raise StorageError(f"{flag} {value!r} is not a whole number from {low} to {high}", fix)
    return value
