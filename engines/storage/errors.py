"""The one error a storage benchmark raises for bad input: what is wrong, and what to do about it.

The message/fix pair, its pickling and `is_bad_input` are engines.bad_input.BadInputError's.
"""

from __future__ import annotations

from engines.bad_input import BadInputError


class StorageError(BadInputError):
    """Bad input to a storage benchmark or an impossible request (`message`, `fix`: see BadInputError)."""


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
