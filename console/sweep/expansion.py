"""Every point of a grid as a validated RunSpec, before anything runs; the points that cannot run, with why.

A sweep takes minutes; finding out at point 7 that bf16 does not exist on ONNX Runtime wastes them. `expand`
builds and validates every point's RunSpec up front and, given the discovered targets, checks that the target
exists and that the engine offers the precision there. A point that cannot run is *impossible*: it is listed
with its reason. Callers decide what to do with impossible points (`strict=True` refuses the whole sweep: the
CLI's default, so a typo never silently shrinks a grid); a grid with no possible point is always an error.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from console.sweep.axes import AXIS_OPTIONS, BOUNDED_BY_GRID, NOT_IN_SPEC, SPEC_PATHS, SweepError
from console.sweep.grid import SweepGrid
from console.sweep.labels import impossible_text, point_label
from engines import scenarios
from engines.spec import RunSpec, SpecError

_SPEC_PREFIX = "\x00spec:"  # marks a reason that came from a SpecError (internal)


@dataclass
class Expansion:
    points: list[dict[str, Any]]  # {"index", "point", "label", "spec"}: validated, runnable
    impossible: list[dict[str, Any]]  # {"point", "label", "reason"} (+ "field" when a spec field refused it)


def expand(base: Mapping[str, Any], grid: SweepGrid, targets: Sequence[Mapping[str, Any]] | None = None,
           strict: bool = False) -> Expansion:
    """Every point of the grid on top of `base` (a RunSpec dict), validated before anything runs.

    `targets` (console.machine.targets.discover_targets()) adds the checks only the machine can answer: does the target
    exist, does the engine run there, does it offer the precision. Raises SweepError for a bad grid, for a
    value wrong on its own, when no point is possible, and (strict) when any point is impossible.
    """
    grid = grid.validate()
    base = dict(base)
    try:
        RunSpec.from_dict(base)  # the shape only: the base alone may be invalid where every point is fine
    except SpecError as exc:
        raise SweepError(exc.field, str(exc).split(": ", 1)[1]) from None
    axes = grid.to_dict()
    if "qps" in axes:
        _check_scenario_takes_rates(base)
    if "loader_workers" in axes:
        _check_scenario_takes_loaders(base)
    varying = grid.varying()
    _check_each_value(base, axes)
    points, impossible = [], []
    for combo in itertools.product(*axes.values()):
        point = dict(zip(axes, combo, strict=True))
        label = point_label(point, varying)
        reason, spec = _point_spec(base, point, targets)
        if reason:
            impossible.append({"point": point, "label": label, "reason": reason})
            if reason.startswith(_SPEC_PREFIX):  # a spec field refused this point: keep its name for the message
                field_name, _, detail = reason[len(_SPEC_PREFIX):].partition(": ")
                impossible[-1].update(reason=detail, field=field_name)
        else:
            points.append({"index": len(points), "point": point, "label": label, "spec": spec})
    if not points:
        reasons = {(p.get("field", ""), p["reason"]) for p in impossible}
        if len(reasons) == 1:  # the same reason everywhere: the base (or the one target) is at fault, say just that
            field_name, reason = reasons.pop()
            raise SweepError(field_name, reason + (f" (all {len(impossible)} points)" if len(impossible) > 1 else ""),
                             impossible)
        headline = "no point of the grid can run"
        raise SweepError("", f"{headline}: {impossible_text(impossible)}", impossible, headline)
    if strict and impossible:
        headline = f"{len(impossible)} of {grid.size} points cannot run"
        raise SweepError("", f"{headline}: {impossible_text(impossible)}", impossible, headline)
    return Expansion(points, impossible)


# ---- Private API
def _check_scenario_takes_rates(base: Mapping[str, Any]) -> None:
    """Said once for the whole grid, naming the fix, rather than as the same spec error on every point."""
    users = scenarios.takers("qps")
    scenario = base.get("scenario", "single-stream")
    if scenario not in users:
        raise SweepError("--qps", f"request rates apply to the {' and '.join(users)} scenarios, not {scenario}; "
                                  "use --scenario server")


def _check_scenario_takes_loaders(base: Mapping[str, Any]) -> None:
    users = scenarios.takers("loader_workers")
    scenario = base.get("scenario", "single-stream")
    if scenario not in users:
        raise SweepError("--loader-workers", f"loader workers apply to the {' and '.join(users)} scenario, not "
                                             f"{scenario}: use --scenario input-pipeline --data-dir DIR")


def _apply(base: Mapping[str, Any], point: Mapping[str, Any]) -> dict[str, Any]:
    """The base spec dict with the point's values at their places: a top-level field, scenario_options.<x>, or
    engine_options.<backend>.<x> (ranks, bucket_mb, grad_accum are torch's). The base is not changed."""
    spec = {key: (dict(value) if isinstance(value, dict) else value) for key, value in base.items()}
    for axis, value in point.items():
        if axis in NOT_IN_SPEC:
            continue
        head, _, name = SPEC_PATHS.get(axis, axis).partition(".")
        if not name:
            spec[axis] = value
        elif head == "scenario_options":
            spec["scenario_options"] = {**(spec.get("scenario_options") or {}), name: value}
        else:  # a backend's option
            engine_options = dict(spec.get("engine_options") or {})
            engine_options[head] = {**(engine_options.get(head) or {}), name: value}
            spec["engine_options"] = engine_options
    return spec


def _check_each_value(base: Mapping[str, Any], axes: Mapping[str, list[Any]]) -> None:
    """A value the spec refuses on its own (target 'gpu', batch beyond the limit) is an error, not a skip.

    "On its own" = on a default spec (catalog mlp), so a value refused only in combination (torch for a .onnx
    file) is left to the points, where it makes them impossible.
    """
    neutral = {"scenario": base["scenario"]} if "qps" in axes and "scenario" in base else {}
    for axis, values in axes.items():
        if axis in NOT_IN_SPEC or axis in BOUNDED_BY_GRID:  # BOUNDED_BY_GRID: checked in the grid already
            continue
        for value in values:
            try:
                RunSpec.from_dict(_apply(neutral, {axis: value})).validate()
            except SpecError as exc:
                if exc.field == axis or exc.field.startswith("scenario_options"):
                    raise SweepError(AXIS_OPTIONS[axis], str(exc).split(": ", 1)[1]) from None


def _point_spec(base: Mapping[str, Any], point: Mapping[str, Any],
                targets: Sequence[Mapping[str, Any]] | None) -> tuple[str, dict[str, Any] | None]:
    """(reason it cannot run, None) or ("", the validated spec as a dict)."""
    try:
        spec = RunSpec.from_dict(_apply(base, point)).validate()
    except SpecError as exc:
        return _SPEC_PREFIX + str(exc), None
    reason = _capability(spec, targets) if targets and not NOT_IN_SPEC & set(point) else ""  # a node decides
    return reason, (None if reason else spec.to_dict())


def _capability(spec: RunSpec, targets: Sequence[Mapping[str, Any]]) -> str:
    """What the discovered targets say about this point; "" when it can run (or nothing is known)."""
    target = next((t for t in targets if t.get("id") == spec.target), None)
    if target is None:  # 'cuda' vs 'cuda:0', or a device that is not there
        kind = spec.target.partition(":")[0]
        same_kind = [t for t in targets if str(t.get("id", "")).partition(":")[0] == kind]
        if not same_kind:
            return f"target {spec.target} is not on this machine (`labconsole targets` lists what is)"
        if spec.target == kind and any(t.get("available") for t in same_kind):
            return ""
        target = same_kind[0] if not any(t.get("available") for t in same_kind) else None
        if target is None:
            ids = ", ".join(str(t["id"]) for t in same_kind)
            return f"target {spec.target} is not on this machine (it has {ids})"
    if not target.get("available", True):
        return f"target {spec.target} is not usable here: {target.get('reason') or 'not available'}"
    details = target.get("engine_details") or {}
    if not details:
        return ""  # discovery did not say: let the worker decide
    engine = details.get(spec.engine)
    if not engine or not engine.get("available"):
        why = (engine or {}).get("reason") or f"{spec.engine} is not installed"
        return f"{spec.engine} does not run on {spec.target}: {why}"
    offered = engine.get("precisions") or []
    if offered and spec.precision not in offered:
        return f"{spec.engine} offers no {spec.precision} on {spec.target} (it offers {', '.join(offered)})"
    return ""
