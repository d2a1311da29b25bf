"""The one spec builder: flat option values (from flags, the run form or a sweep) → a RunSpec.

Why one: the window, the sweep page, `labconsole run` and `labconsole sweep` each used to map their fields to a
RunSpec by hand, and the copies drifted (a sweep from the window lost scalar input values). Every surface now
hands this module a flat mapping keyed by option path (`engines.spec.spec_fields`: "batch", "torch.compile",
"scenario_options.qps" …), where None means "not given, use the default"; errors come back naming the path, and
`flag_for` / `label_for` turn a path into what the user typed or saw.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Iterable, Mapping
from typing import Any

from engines import backends
from engines.inputs import parse_shape
from engines.options import OptionField
from engines.spec import RunSpec, SpecError, spec_fields

__all__ = ["SpecError", "build_spec", "spec_data", "flag_for", "label_for", "fields_by_path", "scenario_fields",
           "engine_fields", "form_field", "window_values", "WINDOW_DEFAULTS"]

# Where the window's run form starts differently from the spec (the command line keeps the spec's defaults): a
# run from the window measures until stable, since someone at the window wants a verdict, not a fixed duration.
WINDOW_DEFAULTS: dict[str, Any] = {"scenario_options.until_stable": True}


# ---- Public API
def fields_by_path() -> dict[str, OptionField]:
    return {fld.path: fld for fld in spec_fields()}


def spec_data(values: Mapping[str, Any]) -> dict[str, Any]:
    """The nested RunSpec dict for flat `values`; None values are left out (the spec's default applies).

    NAME=VALUE options may come as a mapping or as a list of "NAME=VALUE" texts (repeated flags).
    """
    fields = fields_by_path()
    data: dict[str, Any] = {}
    for path, value in values.items():
        if value is None:
            continue
        fld = fields.get(path)
        if fld is None:
            raise SpecError(path, f"unknown option; known options are {', '.join(sorted(fields))}")
        if fld.kind == "pairs":
            value = _pairs(fld, value)
        _place(data, path, value)
    return data


def build_spec(values: Mapping[str, Any]) -> RunSpec:
    """A validated RunSpec from flat values; SpecError names the first bad field's path."""
    return RunSpec.from_dict(spec_data(values)).validate()


def flag_for(path: str) -> str:
    """The command-line flag for a field path ("model_params.layers" → "--param layers")."""
    fld, rest = _field_of(path)
    if fld is None:
        return "--" + path.replace("_", "-")
    return f"{fld.flag} {rest}" if rest else fld.flag


def label_for(path: str) -> str:
    """The form label for a field path, for messages in the window."""
    fld, rest = _field_of(path)
    if fld is None:
        return path
    return f"{fld.label} ({rest})" if rest else fld.label


def scenario_fields(scenario: str) -> list[OptionField]:
    """The fields a scenario's form section shows: its options, then the other spec fields it names."""
    from engines import scenarios

    info = scenarios.info(scenario)
    fields = fields_by_path()
    own = [f for f in fields.values() if scenario in f.scenarios]
    return own + [fields[path] for path in info.extra_fields if path in fields]


def form_field(fld: OptionField) -> dict[str, Any]:
    """One option as the run form takes it (widgets.options_form's plain dict), with the window's default."""
    import dataclasses

    data = dataclasses.asdict(fld)
    if fld.path in WINDOW_DEFAULTS:
        data["default"] = WINDOW_DEFAULTS[fld.path]
    return data


def window_values(values: Mapping[str, Any]) -> dict[str, Any]:
    """The run form's values as a spec takes them: a run of an exact number of iterations cannot be extended, so
    the window's until-stable default (on) gives way when the form sets Iterations (`labconsole run` refuses
    the two together, since there they are both typed)."""
    found = dict(values)
    if found.get("iterations"):
        found.pop("scenario_options.until_stable", None)
        found.pop("scenario_options.max_duration_s", None)
    return found


def engine_fields(engine: str) -> list[OptionField]:
    """The fields of one backend's options, for its section of the run form."""
    backends.info(engine)  # KeyError for an unknown engine
    return [f for f in spec_fields() if f.path.startswith(engine + ".")]


# ---- Private API
def _field_of(path: str) -> tuple[OptionField | None, str]:
    fields = fields_by_path()
    if path in fields:
        return fields[path], ""
    head, _, rest = path.rpartition(".")
    while head:
        if head in fields:
            return fields[head], path[len(head) + 1:]
        head, _, _ = head.rpartition(".")
    return None, ""


def _place(data: dict[str, Any], path: str, value: Any) -> None:
    """Put a value at its place in the RunSpec dict; a backend's options live under engine_options."""
    head, _, rest = path.partition(".")
    if rest and head in backends.names():
        data.setdefault("engine_options", {}).setdefault(head, {})[rest] = value
    elif rest:
        data.setdefault(head, {})[rest] = value
    else:
        data[path] = value


def _pairs(fld: OptionField, value: Any) -> dict[str, Any]:
    if isinstance(value, Mapping):
        return dict(value)
    if isinstance(value, str) or not isinstance(value, Iterable):
        raise SpecError(fld.path, f"expected NAME=VALUE items, got {value!r}")
    found = {}
    for item in value:
        key, sep, text = str(item).partition("=")
        if not sep or not key:
            raise SpecError(fld.path, f"expected NAME=VALUE, got {item!r}")
        try:
            found[key] = _CONVERT[fld.pair_value](text)
        except ValueError as exc:
            raise SpecError(f"{fld.path}.{key}", str(exc)) from None
    return found


def _number(text: str, whole: bool = False) -> float | int:
    """A NAME=VALUE value: a whole number where one is needed, else any finite number (nan and inf, and
    1e400, which a float cannot hold, are refused here rather than fed to a model)."""
    try:
        return int(text)
    except ValueError:
        if whole:
            raise ValueError(f"{text!r} is not a whole number") from None
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"{text!r} is not a number") from None
    if not math.isfinite(value):
        raise ValueError(f"{text!r} is not a finite number: give one between -{sys.float_info.max:.4g} and "
                         f"{sys.float_info.max:.4g}") from None
    return value


_CONVERT = {"shape": parse_shape, "int": lambda text: _number(text, whole=True), "number": _number, "str": str}
