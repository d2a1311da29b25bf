"""Errors of the machine card that the user can fix (a bad directory, a target this machine lacks).

Standard library only: the console catches this class after a worker re-raised it, without importing torch.
"""

from __future__ import annotations


class MachineError(ValueError):
    """A request the machine card cannot honour; the message names the problem and the fix."""


class Unavailable(Exception):
    """One ceiling cannot be measured here (no GPU, engine not installed); its reason goes to `not_available`."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason
