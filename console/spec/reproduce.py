"""Run a stored run again: its exact spec as a file for `labconsole run --spec`, and the same spec as flags.

Why both: the spec file is exact by construction (the stored RunSpec, read back by RunSpec.from_dict); the flags
are what a person reads and edits, built from the options that differ from their defaults, and checked here to
rebuild the very same spec (`exact`), so a flag the command line cannot express is named, never dropped silently.
"""

from __future__ import annotations

import json
import os
import shlex
from collections.abc import Mapping
from typing import Any

from engines.spec import RunSpec, SpecError, spec_fields

__all__ = ["SpecFileError", "load_spec", "spec_of", "reproduce_command", "flag_values"]

ALWAYS_SHOWN = ("model", "engine", "target")  # shown even at their defaults: a command that names what it runs
# A spec file may be a whole exported run (latencies, telemetry): generous, but a bound, so /dev/zero is refused.
MAX_SPEC_FILE_BYTES = 512 << 20


class SpecFileError(ValueError):
    """A --spec file cannot be used; the message names the file, the problem and the fix."""


# ---- Public API
def load_spec(path: str | os.PathLike) -> RunSpec:
    """The validated RunSpec held by a JSON file: a RunSpec dict, an exported run (`labconsole export --format
    json`, one run) or a stored run row (its `spec`)."""
    from console.files.small_file import SmallFileError, read_small_file

    where = os.fspath(path)
    try:  # a regular file of bounded size: a FIFO is refused, not waited on; /dev/zero is not read without end
        data = json.loads(read_small_file(where, MAX_SPEC_FILE_BYTES).decode("utf-8"))
    except SmallFileError as exc:
        if exc.missing:
            raise SpecFileError(f"{where}: cannot read it (no such file); check the path") from None
        raise SpecFileError(f"{where}: {exc.reason}; give a JSON file holding a run spec") from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise SpecFileError(f"{where}: not JSON ({exc}); give a JSON file holding a run spec, e.g. one written "
                            "by `labconsole export RUN --format json --out FILE`") from exc
    except RecursionError:
        raise SpecFileError(f"{where}: nested too deeply to be a run spec; give a JSON file holding a run "
                            "spec") from None
    try:
        spec = spec_of(data)
    except SpecFileError as exc:
        raise SpecFileError(f"{where}: {exc}") from None
    try:
        return RunSpec.from_dict(spec).validate()
    except SpecError as exc:
        raise SpecFileError(f"{where}: spec field {exc.field}: {exc.detail}; correct it in the file") from exc
    except (TypeError, ValueError) as exc:  # a nested option class refused a value before validation
        raise SpecFileError(f"{where}: the spec does not hold together ({exc}); correct it in the file") from exc


def spec_of(data: Any) -> dict[str, Any]:
    """The RunSpec dict inside what a --spec file holds (see load_spec for the three shapes)."""
    if not isinstance(data, dict):
        raise SpecFileError(f"expected a JSON object holding a run spec, got a JSON {type(data).__name__}")
    if isinstance(data.get("runs"), list):  # an export: exactly one run, or we would have to guess
        runs = data["runs"]
        if len(runs) != 1:
            raise SpecFileError(f"it holds {len(runs)} exported runs; export the one to run again "
                                "(`labconsole export RUN --format json --out FILE`)")
        data = runs[0]
    if isinstance(data, dict) and "run_id" in data and "spec" in data:
        data = data["spec"]
    if not isinstance(data, dict):
        raise SpecFileError("the run in it carries no spec object; export the run again")
    return data


def reproduce_command(run: Mapping[str, Any]) -> dict[str, Any]:
    """How to run a stored run again: {spec, spec_file, export_command, spec_command, flags_command, exact,
    not_expressible}. `exact`: the flags rebuild the stored spec field for field; where they cannot,
    `not_expressible` names the options (the spec file is then the way)."""
    run_id = str(run.get("run_id") or "")
    spec_file = f"run-{run_id[:8] or 'spec'}.json"
    found: dict[str, Any] = {
        "spec": run.get("spec"), "spec_file": spec_file,
        "export_command": shlex.join(["labconsole", "export", run_id, "--format", "json", "--out", spec_file]),
        "spec_command": shlex.join(["labconsole", "run", "--spec", spec_file]),
        "flags_command": None, "exact": False, "not_expressible": [],
    }
    try:
        values, missing = flag_values(run.get("spec") or {})
    except (SpecError, TypeError, ValueError) as exc:
        found["not_expressible"] = [f"the stored spec is not one this build reads ({exc})"]
        return found
    found["flags_command"] = shlex.join(["labconsole", "run", *_arguments(values)])
    found["not_expressible"] = missing
    found["exact"] = not missing and _rebuilds(values, run.get("spec") or {})
    return found


def flag_values(spec: Mapping[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """The flat option values (console.spec.build paths) that rebuild `spec` from the defaults, and the paths no
    flag can set (an option whose default is on, or a value the flag cannot take back to None)."""
    stored = RunSpec.from_dict(dict(spec)).to_dict()  # an older spec version read the way runs read it
    default = RunSpec().to_dict()  # the flags' defaults; a scenario's options default per scenario
    default["scenario_options"] = RunSpec(scenario=stored["scenario"]).to_dict()["scenario_options"]
    values: dict[str, Any] = {}
    missing: list[str] = []
    for fld in spec_fields():
        present, value = _at(stored, fld.path)
        if not present:
            continue  # a scenario option of another scenario
        _, base = _at(default, fld.path)
        if value == base and fld.path not in ALWAYS_SHOWN:
            continue
        if value is None or (fld.kind == "bool" and not value):
            missing.append(fld.path)
        elif fld.kind == "pairs":
            values[fld.path] = [f"{key}={_pair_text(item)}" for key, item in value.items()]
        else:
            values[fld.path] = value
    return values, missing


# ---- Private API
def _arguments(values: Mapping[str, Any]) -> list[str]:
    fields = {fld.path: fld for fld in spec_fields()}
    argv: list[str] = []
    for path, value in values.items():
        flag = fields[path].flag
        if fields[path].kind == "bool":
            argv.append(flag)
        elif isinstance(value, list):
            for item in value:
                argv += [flag, item]
        else:
            argv += [flag, str(value)]
    return argv


def _rebuilds(values: Mapping[str, Any], spec: Mapping[str, Any]) -> bool:
    from console.spec.build import spec_data

    try:
        return RunSpec.from_dict(spec_data(values)).to_dict() == RunSpec.from_dict(dict(spec)).to_dict()
    except (SpecError, TypeError, ValueError):
        return False


def _at(data: Mapping[str, Any], path: str) -> tuple[bool, Any]:
    """(present, value) at a spec path; a backend's options live under engine_options."""
    from engines import backends

    head, _, rest = path.partition(".")
    node: Any = data.get("engine_options", {}) if rest and head in backends.names() else data
    for key in path.split("."):
        if not isinstance(node, Mapping) or key not in node:
            return False, None
        node = node[key]
    return True, node


def _pair_text(value: Any) -> str:
    if isinstance(value, (list, tuple)):
        return "x".join(str(item) for item in value)  # a shape, as --input takes it
    return str(value)
