"""Options that describe themselves: a dataclass field carries its flag, help, label, choices and bounds.

Why: a plug-in (backend, scenario) owns its options in one dataclass, and every surface — the command line,
the run form, validation, sweep checks — is derived from that one description, so adding an option is one
field, not edits in six files. Plain data, torch-free and Qt-free: the console reads it without importing an
engine, and widgets get it as `OptionField`s.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any

# How a value is typed on the command line or in a form.
KINDS = ("bool", "int", "float", "str", "choice", "pairs")
PAIR_VALUES = ("shape", "int", "number", "str")  # what the VALUE of a NAME=VALUE pair is


class SpecError(ValueError):
    """A RunSpec field is invalid; the message names the field, the value and what is allowed."""

    def __init__(self, field_name: str, message: str):
        super().__init__(f"{field_name}: {message}")
        self.field = field_name
        self.detail = message


@dataclass(frozen=True)
class OptionField:
    """One option as every surface sees it. `path` is where it lives in a RunSpec dict ("batch",
    "torch.compile", "scenario_options.qps"); `scenarios` lists the scenarios that take a scenario option."""

    path: str
    flag: str
    kind: str
    default: Any
    help: str = ""
    label: str = ""
    choices: tuple[str, ...] = ()
    minimum: float | None = None
    maximum: float | None = None
    metavar: str | None = None
    pair_value: str = "str"
    optional: bool = False  # None is allowed and means "the engine's / scenario's default"
    scenarios: tuple[str, ...] = ()
    unit: str = ""

    @property
    def name(self) -> str:
        return self.path.rsplit(".", 1)[-1]


def option(default: Any = None, *, flag: str, help: str = "", label: str = "",  # noqa: A002 — argparse's word
           choices: tuple[str, ...] = (), minimum: float | None = None, maximum: float | None = None,
           metavar: str | None = None, kind: str | None = None, pair_value: str = "str", unit: str = "",
           default_factory: Any = dataclasses.MISSING) -> Any:
    """A dataclass field that describes itself (see OptionField). `kind` is inferred from the default when
    omitted; `minimum`/`maximum` bound numbers (a minimum of 1 on an int means a whole number ≥ 1)."""
    metadata = {"option": {"flag": flag, "help": help, "label": label, "choices": tuple(choices),
                           "minimum": minimum, "maximum": maximum, "metavar": metavar, "kind": kind,
                           "pair_value": pair_value, "unit": unit}}
    if default_factory is not dataclasses.MISSING:
        return dataclasses.field(default_factory=default_factory, metadata=metadata)
    return dataclasses.field(default=default, metadata=metadata)


def fields_of(cls: type, prefix: str = "") -> list[OptionField]:
    """The OptionFields of a dataclass (only fields declared with `option`), paths prefixed by `prefix`."""
    found = []
    for f in dataclasses.fields(cls):
        meta = f.metadata.get("option")
        if meta is None:
            continue
        default = f.default if f.default is not dataclasses.MISSING else (
            f.default_factory() if f.default_factory is not dataclasses.MISSING else None)
        kind = meta["kind"] or _infer_kind(f.type, default, meta["choices"])
        found.append(OptionField(
            path=prefix + f.name, flag=meta["flag"], kind=kind, default=default, help=meta["help"],
            label=meta["label"] or f.name.replace("_", " ").capitalize(), choices=meta["choices"],
            minimum=meta["minimum"], maximum=meta["maximum"], metavar=meta["metavar"],
            pair_value=meta["pair_value"], optional=default is None or "None" in str(f.type), unit=meta["unit"]))
    return found


def check_fields(instance: Any, prefix: str = "") -> None:
    """Validate every described field of `instance` against its kind, choices and bounds (SpecError)."""
    for fld in fields_of(type(instance)):
        check_value(fld, getattr(instance, fld.name), prefix + fld.name)


def check_value(fld: OptionField, value: Any, path: str | None = None) -> None:
    path = path or fld.path
    if value is None and fld.optional:
        return
    if fld.kind == "bool":
        if not isinstance(value, bool):
            raise SpecError(path, f"must be true or false, got {value!r}")
    elif fld.kind == "choice":
        if value not in fld.choices:
            raise SpecError(path, f"unknown value {value!r}; allowed: {', '.join(fld.choices)}")
    elif fld.kind == "int":
        low, high = int_bounds(fld)
        if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
            raise SpecError(path, f"must be a whole number from {low} to {high}, got {_shown(value)}")
    elif fld.kind == "float":
        if not is_number(value) or not _in_bounds(fld, value):
            raise SpecError(path, _bounds_text(fld, value))
    elif fld.kind == "str":
        if not isinstance(value, str):
            raise SpecError(path, f"must be text, got {value!r}")
    elif fld.kind == "pairs" and not isinstance(value, dict):
        raise SpecError(path, f"must be a mapping of NAME to value, got {value!r}")


def is_number(value: Any) -> bool:
    """A real, finite number: nan and ±inf are refused everywhere (they poison every sum and comparison)."""
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return False
    try:
        return math.isfinite(value)
    except OverflowError:  # an int beyond a float's range is finite, just large
        return True


def int_bounds(fld: OptionField) -> tuple[int, int]:
    """(lowest, highest) whole number an int option takes: ≥ 1 and ≤ 10**9 unless the field says otherwise."""
    low = int(fld.minimum if fld.minimum is not None else 1)
    return low, int(fld.maximum) if fld.maximum is not None else 10**9


# ---- Private API
def _infer_kind(annotation: Any, default: Any, choices: tuple[str, ...]) -> str:
    if choices:
        return "choice"
    text = str(annotation)
    if isinstance(default, bool) or text.startswith("bool"):
        return "bool"
    if text.startswith("int") or (isinstance(default, int) and not isinstance(default, bool)):
        return "int"
    if text.startswith("float") or isinstance(default, float):
        return "float"
    if text.startswith("dict") or isinstance(default, dict):
        return "pairs"
    return "str"


def _in_bounds(fld: OptionField, value: float) -> bool:
    if fld.maximum is not None and value > fld.maximum:
        return False
    return value > 0 if fld.minimum is None else value >= fld.minimum


def _bounds_text(fld: OptionField, value: Any) -> str:
    rule = "> 0" if fld.minimum is None else f"≥ {_show(fld.minimum)}"
    upper = f" and ≤ {_show(fld.maximum)}" if fld.maximum is not None else ""
    return f"must be a number {rule}{upper}{' ' + fld.unit if fld.unit else ''}, got {_shown(value)}"


def _shown(value: Any) -> str:
    """The refused value as the user typed it: a text stays quoted, a number is not repr'd as a float('inf')."""
    return repr(value) if isinstance(value, str) or not isinstance(value, (int, float)) else str(value)


def _show(number: float) -> str:
    return f"{int(number):,}" if float(number).is_integer() else f"{number:g}"
