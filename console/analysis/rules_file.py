"""The validity rules in force: the defaults, then the lab's rules file in the data folder, then `--rules FILE`.

Why: what makes a run valid is the lab's choice (LoadGen reads its user.conf the same way): a lab whose
machines jitter more, or that wants p99.9, writes `rules.toml` in the data folder once and every run, sweep and
analysis is judged by it; `--rules FILE` overrides it for one command. Each run stores the rules it was judged by
and where each came from (`RulesInForce.to_dict`), so a summary recomputed later (recovery of an interrupted
run) uses the same rules, not whatever the file says that day.

The file holds ValidityRules fields at its top level (or under a [validity] table):

    stability_tolerance = 0.15     # the last windows' medians may differ by 15%
    min_duration_s = 5
    percentiles = [50, 90, 99]

An unknown key or a bad value is a RulesError naming the file, the key and what is allowed. Qt-free; tomllib.
"""

from __future__ import annotations

import dataclasses
import difflib
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from console import paths
from console.analysis import drift
from console.analysis.validity import ValidityRules

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10: the same parser as the tomli package, when installed
    try:
        import tomli as tomllib  # type: ignore[no-redef]
    except ModuleNotFoundError:
        tomllib = None  # type: ignore[assignment]

DEFAULT = "default"
DATA_FILE = "data folder"
OPTION = "--rules"
MAX_BYTES = 1 << 20  # a rules file is a few lines of TOML; anything bigger is the wrong file

# (lowest, highest, whole number?) of each field; a field added to ValidityRules later is checked by its type
# and ValidityRules.validate() until it gets a line here.
BOUNDS: dict[str, tuple[float, float, bool]] = {
    "min_duration_s": (0, 86_400, False),
    "min_count": (0, 10**9, True),
    "percentile_confidence": (0.5, 0.999999, False),
    "percentile_tolerance": (0, 0.5, False),
    "windows": (2, 10_000, True),
    "min_window_count": (1, 10**6, True),
    "stable_windows": (2, 1000, True),
    "stability_tolerance": (0, 10, False),
    "warmup_windows": (2, 1000, True),
    "warmup_tolerance": (0, 10, False),
    "max_warmup_s": (0, 3600, False),
    "server_latency_percentile": (1, 99.999, False),
}
PERCENTILE_BOUNDS = (0, 100)  # each of `percentiles`, exclusive


class RulesError(ValueError):
    """A rules file that cannot be used; the message names the file, the key and what is allowed."""

    def __init__(self, source: str, message: str, key: str | None = None):
        super().__init__(f"{source}: {message}")
        self.source, self.key, self.detail = source, key, message


@dataclass(frozen=True)
class RulesInForce:
    """The rules a run is judged by, where each field came from, and the files read (in order)."""

    rules: ValidityRules = field(default_factory=ValidityRules)
    sources: dict[str, str] = field(default_factory=dict)  # field → "default" | "data folder" | "--rules"
    files: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """What a run stores (environment.validity_rules) and `rules show --json` prints."""
        rules = {key: list(value) if isinstance(value, tuple) else value
                 for key, value in dataclasses.asdict(self.rules).items()}
        return {"rules": rules, "sources": dict(self.sources),
                "files": list(self.files)}


# ---- Public API
def data_file() -> Path:
    """The lab's rules file: rules.toml in the data folder (beside the default history)."""
    return paths.data_dir() / "rules.toml"


def in_force(explicit: str | Path | None = None, lab_file: Path | None = None) -> RulesInForce:
    """Defaults, overridden by the data folder's rules.toml when it exists, then by `explicit` (--rules FILE).

    RulesError when a file that is there cannot be read or holds a bad key or value; a missing --rules FILE is
    an error too (a missing data-folder file is not: most labs keep the defaults)."""
    lab_file = data_file() if lab_file is None else lab_file
    values: dict[str, Any] = {}
    sources = {f.name: DEFAULT for f in dataclasses.fields(ValidityRules)}
    files: list[str] = []
    layers = [(lab_file, DATA_FILE, False)]
    if explicit is not None:
        layers.append((Path(explicit).expanduser(), OPTION, True))
    for path, origin, required in layers:
        if not required and not path.is_file():
            continue
        given = parse(load_file(path), str(path))
        values.update(given)
        sources.update({key: origin for key in given})
        files.append(str(path))
    try:
        rules = dataclasses.replace(ValidityRules(), **values).validate()
    except ValueError as exc:  # fields valid alone but not together (stable_windows > windows)
        raise RulesError(files[-1] if files else "rules", str(exc)) from None
    return RulesInForce(rules, sources, tuple(files))


def load_file(path: str | Path) -> dict[str, Any]:
    """The TOML document of a rules file (its [validity] table when it has one); RulesError when unreadable."""
    from console.files.small_file import SmallFileError, read_small_file

    path = Path(path)
    try:
        text = read_small_file(path, MAX_BYTES)  # a FIFO is refused, not waited on; /dev/zero is not read
    except SmallFileError as exc:
        if exc.missing:
            raise RulesError(str(path), "no such rules file; give an existing file, or `labconsole rules show` "
                                        f"to see the rules in force (the lab's file is {data_file()})") from None
        raise RulesError(str(path), f"{exc.reason}; a rules file is a small TOML text file") from None
    if tomllib is None:
        raise RulesError(str(path), "reading a rules file needs Python 3.11 or later (tomllib), or the tomli "
                                    "package on Python 3.10 (pip install tomli)")
    try:
        data = tomllib.loads(text.decode("utf-8"))
    except UnicodeDecodeError:
        raise RulesError(str(path), "is not UTF-8 text; a rules file is TOML (key = value lines)") from None
    except tomllib.TOMLDecodeError as exc:
        raise RulesError(str(path), f"is not valid TOML ({exc}); write key = value lines, e.g. "
                                    "stability_tolerance = 0.15") from None
    if set(data) == {"validity"} and isinstance(data["validity"], dict):
        return data["validity"]
    return data


def parse(data: dict[str, Any], source: str = "rules") -> dict[str, Any]:
    """The ValidityRules values in `data`, checked: unknown keys and bad values are RulesErrors naming the key
    and the allowed range."""
    known = {f.name: f for f in dataclasses.fields(ValidityRules)}
    values: dict[str, Any] = {}
    for key, value in data.items():
        if key not in known:
            close = difflib.get_close_matches(str(key), known, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise RulesError(source, f"unknown key {key!r}{hint}; known keys are {', '.join(sorted(known))}", key)
        values[key] = _checked(key, value, known[key].default, source)
    return values


def from_stored(block: Any) -> ValidityRules | None:
    """The rules a run stored (its environment's validity_rules, or a bare rules dict); None when it stored none
    or they cannot be read back. Keys this version does not know are left out (an older or newer console)."""
    if not isinstance(block, dict):
        return None
    rules = block.get("rules") if isinstance(block.get("rules"), dict) else block
    known = {f.name for f in dataclasses.fields(ValidityRules)}
    values = {key: value for key, value in rules.items() if key in known}
    if isinstance(values.get("percentiles"), list):
        values["percentiles"] = tuple(values["percentiles"])
    try:
        return dataclasses.replace(ValidityRules(), **values).validate()
    except (TypeError, ValueError):
        return None


def allowed(key: str) -> str:
    """What `key` accepts, in words (for `rules show` and the errors)."""
    if key == "percentiles":
        return f"a list of numbers strictly between {PERCENTILE_BOUNDS[0]} and {PERCENTILE_BOUNDS[1]}"
    if key in BOUNDS:
        low, high, whole = BOUNDS[key]
        return f"{'a whole number' if whole else 'a number'} from {low:g} to {high:g}"
    return "a value of the default's type"


def describe(block: Any) -> str:
    """Which rules judged a run, in words, from what it stored (environment.validity_rules): "the default rules",
    or the files and the keys each set ("the defaults, with stability_tolerance from the data folder's
    rules.toml and min_count from --rules strict.toml")."""
    if not isinstance(block, dict) or not isinstance(block.get("sources"), dict):
        return "the rules in force when it ran (not stored with runs this old)"
    sources = block["sources"]
    files = list(block.get("files") or [])
    parts = []
    for origin, name in ((DATA_FILE, "the data folder's rules.toml"), (OPTION, "--rules")):
        keys = [key for key, source in sources.items() if source == origin]
        if keys:
            where = f"{name} {Path(files[-1]).name}" if origin == OPTION and files else name
            parts.append(f"{', '.join(keys)} from {where}")
    return "the default rules" if not parts else "the defaults, with " + " and ".join(parts)


def aim(spec: Any, rules: ValidityRules, noise_floor: dict[str, Any] | None = None) -> None:
    """A run that measures until stable aims for the rules it will be judged by: the engine stops adding windows
    when the last `stable_windows` agree within `stability_tolerance`, windows being duration / `windows` wide —
    or, given the machine's noise floor, when the typical spread of `stable_windows` consecutive windows is within
    the allowance console.analysis.drift judges it against (max(tolerance, 2 × noise)). Without the allowance a
    jittery machine ran every run to the cap and then printed "not stable" beside a VALID "jittery machine"."""
    options = getattr(spec, "scenario_options", None)
    if not getattr(options, "until_stable", False):
        return
    options.stable_windows = min(int(rules.stable_windows), 1000)
    options.stability_tolerance = min(float(rules.stability_tolerance), 10.0)
    options.windows_per_duration = min(int(rules.windows), 10_000)
    allowance = drift.allowance_for(noise_floor, options.stable_windows, options.stability_tolerance)
    options.stability_allowance = None if allowance is None else min(allowance, 10.0)


# ---- Private API
def _checked(key: str, value: Any, default: Any, source: str) -> Any:
    def bad(why: str) -> RulesError:
        return RulesError(source, f"{key} = {value!r}: {why}; allowed: {allowed(key)}", key)

    if key == "percentiles":
        if not isinstance(value, list) or not value:
            raise bad("expected a list")
        for q in value:
            if not _is_number(q) or not PERCENTILE_BOUNDS[0] < q < PERCENTILE_BOUNDS[1]:
                raise bad(f"{q!r} is not a percentile")
        return tuple(float(q) for q in value)
    if key in BOUNDS:
        low, high, whole = BOUNDS[key]
        if not _is_number(value) or (whole and not isinstance(value, int)):
            raise bad("expected a whole number" if whole else "expected a number")
        if not low <= value <= high:
            raise bad("out of range")
        return int(value) if whole else float(value)
    if isinstance(default, bool):
        if not isinstance(value, bool):
            raise bad("expected true or false")
    elif isinstance(default, (int, float)):
        if not _is_number(value) or (isinstance(default, int) and not isinstance(value, int)):
            raise bad("expected a whole number" if isinstance(default, int) else "expected a number")
        return type(default)(value)
    elif isinstance(default, tuple):
        if not isinstance(value, list):
            raise bad("expected a list")
        return tuple(value)
    elif not isinstance(value, type(default)):
        raise bad(f"expected {type(default).__name__}")
    return value


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)

