"""The grid: which values to sweep per axis, parsed from comma-separated text and checked value by value.

A value that is wrong on its own is an error here, not an impossible point later: `--batch 1,x`,
`--precision fp64`, `--batch 0`, duplicates and empty lists are refused naming the option and the value, so a
typo never silently shrinks a grid. Combinations (bf16 on ONNX Runtime) are `expansion`'s job.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from console.sweep.axes import AXES, AXIS_OPTIONS, BOUNDED_BY_GRID, SPEC_PATHS, SweepError
from console.sweep.labels import show_value
from engines import backends

MAX_POINTS = 512
_EXAMPLES = {"batch": "1,2,4,8", "threads": "1,2,4", "precision": "fp32,bf16", "engine": "torch,onnxruntime",
             "target": "cpu,cuda:0", "qps": "10,20,40", "on": "accel=h200,accel=cpu", "ranks": "1,2,4",
             "bucket_mb": "1,25,100", "grad_accum": "1,2,4", "loader_workers": "0,2,4"}
_WHOLE = ("batch", "threads", "ranks", "grad_accum", "loader_workers")  # axes of whole numbers


@dataclass
class SweepGrid:
    """The values to sweep per axis; an empty axis keeps the base spec's value. `threads` may hold None
    (the engine's default); `qps` needs the server scenario; `ranks`, `bucket_mb` and `grad_accum` are
    data-parallel training's (torch options), `loader_workers` the input-pipeline scenario's."""

    batch: list[int] = field(default_factory=list)
    threads: list[int | None] = field(default_factory=list)
    precision: list[str] = field(default_factory=list)
    engine: list[str] = field(default_factory=list)
    target: list[str] = field(default_factory=list)
    qps: list[float] = field(default_factory=list)
    on: list[str] = field(default_factory=list)  # lab nodes, one LABEL=VALUE each (needs a cluster)
    ranks: list[int] = field(default_factory=list)  # data-parallel ranks (a scaling curve)
    bucket_mb: list[float] = field(default_factory=list)  # DDP gradient bucket sizes
    grad_accum: list[int] = field(default_factory=list)  # micro-batches per optimizer step
    loader_workers: list[int] = field(default_factory=list)  # input-pipeline loader workers

    @classmethod
    def parse(cls, **texts: str | None) -> SweepGrid:
        """From comma-separated text per axis (CLI options, the window's fields); None or "" = not swept.

        `SweepGrid.parse(batch="1,2,4", precision="fp32, bf16")`. Raises SweepError naming the axis and value.
        """
        _refuse_unknown_axes(texts)
        values: dict[str, list[Any]] = {}
        for axis, text in texts.items():
            if text is None:
                continue
            values[axis] = _parse_list(axis, str(text))
        return cls(**values).validate()

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SweepGrid:
        """From `to_dict()`'s shape (what the history stores); not validated, so an old record still reads."""
        _refuse_unknown_axes(data)
        return cls(**{axis: list(values) for axis, values in data.items()})

    def to_dict(self) -> dict[str, list[Any]]:
        """Only the swept axes, in AXES order (what the history stores)."""
        return {axis: list(getattr(self, axis)) for axis in AXES if getattr(self, axis)}

    def validate(self) -> SweepGrid:
        """Each value on its own: types, ranges, known names, no duplicates. Combinations are `expand`'s job."""
        if not self.to_dict():
            raise SweepError("", "the grid is empty: give at least one axis to sweep (--batch 1,2,4,8, "
                                 "--threads 1,2, --precision fp32,bf16, --engine torch,onnxruntime, --target, --qps, "
                                 "--ranks 1,2,4 …)")
        for axis in AXES:
            seen: set[Any] = set()
            for value in getattr(self, axis):
                _check_value(axis, value)
                if value in seen:
                    raise SweepError(AXIS_OPTIONS[axis], f"{show_value(value)} appears twice; give each value once")
                seen.add(value)
        if self.size > MAX_POINTS:
            raise SweepError("", f"the grid has {self.size} points; at most {MAX_POINTS} run in one sweep "
                                 "(split it into several sweeps)")
        return self

    @property
    def size(self) -> int:
        size = 1
        for values in self.to_dict().values():
            size *= len(values)
        return size

    def varying(self) -> list[str]:
        """The axes with more than one value (those that tell points apart)."""
        return [axis for axis, values in self.to_dict().items() if len(values) > 1]


# ---- Private API
def _refuse_unknown_axes(names: Mapping[str, Any]) -> None:
    unknown = sorted(set(names) - set(AXES))
    if unknown:
        raise SweepError(unknown[0], f"not a sweep axis; axes are {', '.join(AXES)}")


def _parse_list(axis: str, text: str) -> list[Any]:
    option = AXIS_OPTIONS[axis]
    items = [item.strip() for item in text.split(",")]
    if not any(items):
        raise SweepError(option, "empty list: give comma-separated values, e.g. " + _EXAMPLES[axis])
    if "" in items:
        raise SweepError(option, f"empty value in {text!r}: give comma-separated values, e.g. {_EXAMPLES[axis]}")
    values: list[Any] = []
    for item in items:
        if axis in _WHOLE:
            if axis == "threads" and item.lower() in ("default", "auto"):
                values.append(None)
                continue
            try:
                values.append(int(item))
            except ValueError:
                low, high = _whole_bounds(axis)
                raise SweepError(option, f"{item!r} is not a whole number (in {text!r}); give whole numbers from "
                                         f"{low} to {high}") from None
        elif axis in ("qps", "bucket_mb"):
            try:
                values.append(float(item))
            except ValueError:
                raise SweepError(option, f"{item!r} is not a number (in {text!r})") from None
            if values[-1].is_integer():
                values[-1] = int(values[-1])
        else:
            values.append(item)
    return values


def _whole_bounds(axis: str) -> tuple[int, int]:
    """The spec's range for a whole-number axis (batch, threads, ranks …), for the message that refuses a typo."""
    from engines.options import int_bounds

    return int_bounds(_spec_field(axis))


def _spec_field(axis: str) -> Any:
    """The spec option an axis sets (engines.options.OptionField)."""
    from engines.spec import spec_fields

    path = SPEC_PATHS.get(axis, axis)
    return next(fld for fld in spec_fields() if fld.path == path)


def _check_value(axis: str, value: Any) -> None:
    option = AXIS_OPTIONS[axis]
    if axis in BOUNDED_BY_GRID:  # the spec option's own kind and bounds, in its words
        from engines.options import SpecError, check_value

        try:
            check_value(_spec_field(axis), value)
        except SpecError as exc:
            raise SweepError(option, exc.detail) from None
    elif axis in ("batch", "threads"):
        if axis == "threads" and value is None:
            return
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise SweepError(option, f"{show_value(value)} is not a whole number ≥ 1")
    elif axis == "qps":
        if not isinstance(value, (int, float)) or isinstance(value, bool) or not 0 < value < math.inf:
            raise SweepError(option, f"{show_value(value)} is not a request rate > 0 (queries per second)")
    elif axis == "precision":
        if value not in backends.precisions():
            raise SweepError(option, f"unknown precision {value!r}; allowed: {', '.join(backends.precisions())}")
    elif axis == "on":
        key, sep, wanted = str(value).partition("=")
        if not isinstance(value, str) or not sep or not key.strip() or not wanted.strip():
            raise SweepError(option, f"{show_value(value)} is not LABEL=VALUE (a node's label, e.g. accel=h200; "
                                     "`labconsole cluster` lists them)")
    elif axis == "engine":
        if value not in backends.names():
            raise SweepError(option, f"unknown engine {value!r}; allowed: {', '.join(backends.names())}")
    elif not isinstance(value, str) or not value:
        raise SweepError(option, f"{show_value(value)} is not a target id (cpu, cuda:N, mps)")
