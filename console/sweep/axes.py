"""What a sweep can vary, the option that names each axis, and the error that names the option at fault.

Axes are listed outermost first: batch varies fastest, so a series' points (one batch curve) run back to back.
`on` (lab nodes, by label: `accel=h200`) is outermost: each machine's points run back to back.
"""

from __future__ import annotations

from typing import Any

AXES = ("on", "engine", "target", "precision", "threads", "qps", "batch")
AXIS_OPTIONS = {"batch": "--batch", "threads": "--threads", "precision": "--precision", "engine": "--engine",
                "target": "--target", "qps": "--qps", "on": "--on"}
NOT_IN_SPEC = frozenset({"on"})  # axes that say where a point runs, not what it runs


class SweepError(ValueError):
    """A sweep cannot start; the message names the option (axis) and the value at fault."""

    def __init__(self, axis: str, message: str, impossible: list[dict[str, Any]] | None = None,
                 headline: str = ""):
        super().__init__(f"{axis}: {message}" if axis else message)
        self.axis = axis
        self.detail = message
        self.impossible = impossible or []
        self.headline = headline  # set when the message lists impossible points: the line before the list
