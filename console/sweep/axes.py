"""What a sweep can vary, the option that names each axis, and the error that names the option at fault.

Axes are listed outermost first: batch varies fastest, so a series' points (one batch curve) run back to back.
`on` (lab nodes, by label: `accel=h200`) is outermost: each machine's points run back to back. The data-parallel
knobs (gradient bucket size, gradient accumulation, loader workers) vary slower than `ranks`, so each knob value's
scaling curve (ranks 1, 2, 4) runs back to back and its E(N) is read against the 1-rank point measured just before.
"""

from __future__ import annotations

from typing import Any

AXES = ("on", "engine", "target", "precision", "bucket_mb", "grad_accum", "loader_workers", "ranks", "threads",
        "qps", "batch")
AXIS_OPTIONS = {"batch": "--batch", "threads": "--threads", "precision": "--precision", "engine": "--engine",
                "target": "--target", "qps": "--qps", "on": "--on", "ranks": "--ranks", "bucket_mb": "--bucket-mb",
                "grad_accum": "--grad-accum", "loader_workers": "--loader-workers"}
NOT_IN_SPEC = frozenset({"on"})  # axes that say where a point runs, not what it runs
# axes whose value lives deeper in the spec than a top-level field: axis → the spec option's path
SPEC_PATHS = {"qps": "scenario_options.qps", "ranks": "torch.ranks", "bucket_mb": "torch.bucket_mb",
              "grad_accum": "torch.grad_accum", "loader_workers": "scenario_options.loader_workers"}
# checked value by value against the spec option's bounds in the grid; on a default spec alone they mean nothing
# (ranks need --mode training, loader workers the input-pipeline scenario), so only whole points are validated
BOUNDED_BY_GRID = frozenset({"ranks", "bucket_mb", "grad_accum", "loader_workers"})


class SweepError(ValueError):
    """A sweep cannot start; the message names the option (axis) and the value at fault."""

    def __init__(self, axis: str, message: str, impossible: list[dict[str, Any]] | None = None,
                 headline: str = ""):
        super().__init__(f"{axis}: {message}" if axis else message)
        self.axis = axis
        self.detail = message
        self.impossible = impossible or []
        self.headline = headline  # set when the message lists impossible points: the line before the list
