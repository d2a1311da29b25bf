"""A demo playlist: runs and A-vs-B races that demo mode plays unattended, as a JSON file.

    {"title": "Inference on this machine", "loop": true, "hold_s": 8,
     "defaults": {"model": "mlp", "duration_s": 10, "warmup_s": 2},
     "items": [
       {"name": "MLP on PyTorch", "run": {"engine": "torch", "batch": 8}},
       {"name": "PyTorch vs ONNX Runtime",
        "race": {"a": {"engine": "torch"}, "b": {"engine": "onnxruntime"}, "rounds": 3}},
       {"race": {"both": {"model": "resnet18"}, "a": {"precision": "fp32"}, "b": {"precision": "int8"}}},
       {"name": "A stored setup", "run": {"spec": {"model": "mlp", "engine": "onnxruntime", "batch": 4}}}]}

A configuration (`run`, a race's `a` and `b`) is either flat option values keyed by the option paths of
`labconsole run` (`batch`, `duration_s`, `torch.compile`, `scenario_options.qps`, `model_params` …) — the
playlist's `defaults` and a race's `both` go under them — or `{"spec": {...}}`, a RunSpec dict run as it is.

A playlist is a small regular file, so `load` checks that before reading a byte (console.files.small_file, the rule
every input file the user names follows): what the path names after symlinks (a device such as /dev/zero, a FIFO
or a directory is refused: reading them never ends or means nothing), its size (at most MAX_BYTES, 1 MiB: a
500-item playlist is a few hundred KiB) and how deeply its
brackets nest (at most MAX_DEPTH, counted by a scan of the text before the JSON parser, which recurses, sees it).
Each refusal is a PlaylistError naming the file, the problem and the fix, so `labconsole demo` exits 2.

Two kinds of problem, two outcomes, because an unattended playlist must survive a bad item but not a bad file:
- the file's shape (JSON syntax, unknown keys, a race without `b`, `rounds: 0`) is checked by `load`; a
  PlaylistError names the item, the field and the fix, and nothing is played;
- each item's spec is built when its turn comes, with the one spec builder (`console.spec.build.build_spec`), so a
  model file that is missing at that moment or a bad option value fails that item only (ItemProblem), and the
  playlist goes on. `check_specs` builds every spec up front, for `labconsole demo --check` and the warnings
  the command prints before the lights go down.
"""

from __future__ import annotations

import difflib
import json
import math
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from console.spec.build import SpecError, build_spec, fields_by_path, flag_for
from engines import backends
from engines.spec import RunSpec

__all__ = ["PlaylistError", "ItemProblem", "Config", "RunItem", "RaceItem", "Playlist", "load", "parse",
           "check_specs", "side_labels", "DEFAULT_HOLD_S", "DEFAULT_ROUNDS", "MAX_ROUNDS"]

DEFAULT_HOLD_S = 8.0  # seconds a finished item (its figures, a race's verdict) stays up before the next
MAX_HOLD_S = 3600.0
DEFAULT_ROUNDS = 3  # per side; rounds alternate which side goes first (A B, B A, …)
MAX_ROUNDS = 20
MAX_ITEMS = 500
MAX_BYTES = 1 << 20  # a playlist file's size: 500 items of a few hundred bytes each fit many times over
# Brackets nested this deep at most: a playlist needs about 8 (items > race > a > spec > engine_options > …);
# json.loads recurses per level, and 100,000 levels were a RecursionError instead of a message.
MAX_DEPTH = 32
_TOP_KEYS = ("title", "loop", "hold_s", "defaults", "items")
_ITEM_KEYS = ("name", "run", "race")
_RACE_KEYS = ("a", "b", "both", "rounds")
_FORMAT_HINT = "see README.md, Demo mode, for the playlist format"


class PlaylistError(ValueError):
    """The playlist file cannot be played: `where` (the file, an item, a field), the problem and the fix."""

    def __init__(self, where: str, problem: str, fix: str):
        super().__init__(f"{where}: {problem}. Fix: {fix}")
        self.where, self.problem, self.fix = where, problem, fix


class ItemProblem(ValueError):
    """One item's spec cannot be built now (a bad option value, a missing model file): that item fails, the
    playlist goes on."""

    def __init__(self, where: str, problem: str, fix: str):
        super().__init__(f"{where}: {problem}. Fix: {fix}")
        self.where, self.problem, self.fix = where, problem, fix


@dataclass(frozen=True)
class Config:
    """One configuration: flat option values (`values`), or a RunSpec dict run as it is (`spec`)."""

    values: Mapping[str, Any] | None = None
    spec: Mapping[str, Any] | None = None

    def build(self, where: str, defaults: Mapping[str, Any]) -> RunSpec:
        """A validated RunSpec; ItemProblem naming the field and the fix when it cannot be built."""
        if self.spec is not None:
            try:
                return RunSpec.from_dict(json.loads(json.dumps(self.spec))).validate()
            except SpecError as exc:
                raise ItemProblem(f"{where}.spec.{exc.field}", exc.detail, _spec_fix(exc.field)) from None
            except (TypeError, ValueError) as exc:
                raise ItemProblem(f"{where}.spec", str(exc), "give a RunSpec dict as `labconsole export "
                                                             "--format json` writes one") from None
        values = {**defaults, **(self.values or {})}
        known = fields_by_path()
        for key in values:
            if key not in known:
                raise ItemProblem(f"{where}.{key}", f"unknown option {key!r}{_did_you_mean(key, known)}",
                                  "use an option path as `labconsole run --help` lists it (batch, duration_s, "
                                  "warmup_s, engine, precision, torch.compile, scenario_options.qps …)")
        try:
            return build_spec(values)
        except SpecError as exc:
            raise ItemProblem(f"{where}.{exc.field}", exc.detail, _spec_fix(exc.field)) from None


@dataclass(frozen=True)
class _Item:
    """What every playlist item has: its place and name, which every message about it names."""

    number: int  # 1-based position in the playlist
    name: str

    @property
    def where(self) -> str:
        return _where(self.number, self.name)


@dataclass(frozen=True)
class RunItem(_Item):
    config: Config
    kind: str = field(default="run", init=False)


@dataclass(frozen=True)
class RaceItem(_Item):
    a: Config
    b: Config
    both: Mapping[str, Any]
    rounds: int = DEFAULT_ROUNDS
    kind: str = field(default="race", init=False)


@dataclass(frozen=True)
class Playlist:
    items: tuple[RunItem | RaceItem, ...]
    loop: bool = True
    hold_s: float = DEFAULT_HOLD_S
    defaults: Mapping[str, Any] = field(default_factory=dict)
    title: str = ""
    source: str = "playlist"  # the file it came from, for messages

    def build_run(self, item: RunItem) -> tuple[str, RunSpec]:
        """(title, spec) of a run item; the item's name becomes the run's name when the spec has none."""
        spec = item.config.build(f"{item.where}, run", self.defaults)
        if item.name and not spec.name:
            spec.name = item.name
        return item.name or spec.label(), spec

    def build_race(self, item: RaceItem) -> tuple[str, tuple[str, RunSpec], tuple[str, RunSpec]]:
        """(title, (label A, spec A), (label B, spec B)); each side's run is named after the race and the side."""
        defaults = {**self.defaults, **item.both}
        spec_a = item.a.build(f"{item.where}, race.a", defaults)
        spec_b = item.b.build(f"{item.where}, race.b", defaults)
        label_a, label_b = side_labels(spec_a, spec_b)
        title = item.name or f"{label_a} vs {label_b}"
        for letter, label, spec in (("A", label_a, spec_a), ("B", label_b, spec_b)):
            if not spec.name:
                spec.name = f"{title} · {letter}: {label}"
        return title, (label_a, spec_a), (label_b, spec_b)

    def with_loop(self, loop: bool) -> Playlist:
        return Playlist(self.items, loop, self.hold_s, self.defaults, self.title, self.source)


# ---- Public API
def load(path: str | os.PathLike) -> Playlist:
    """Read and check a playlist file; PlaylistError names the problem and the fix."""
    source = str(path)
    text = _read_text(path, source)
    _check_depth(text, source)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise PlaylistError(f"{source} line {exc.lineno} column {exc.colno}", f"not valid JSON ({exc.msg})",
                            "write plain JSON: no comments, no trailing commas, strings in double quotes") from None
    except ValueError as exc:  # a number of over 4,300 digits: Python's int conversion limit
        raise PlaylistError(source, f"not a usable JSON document ({exc})".split(";")[0] + ")",
                            "write numbers as a playlist needs them (seconds, counts): a few digits") from None
    return parse(data, source)


def parse(data: Any, source: str = "playlist") -> Playlist:
    """Check the shape of a playlist document (a dict as in the module docstring)."""
    if not isinstance(data, dict):
        raise PlaylistError(source, f"the playlist must be a JSON object, got {_kind(data)}",
                            '{"items": [{"run": {"model": "mlp"}}]} is the smallest playlist; ' + _FORMAT_HINT)
    _known_keys(data, _TOP_KEYS, source)
    title = data.get("title", "")
    if not isinstance(title, str):
        raise PlaylistError(f"{source}, title", f"must be text, got {_kind(title)}", 'write e.g. "title": "Lab demo"')
    loop = data.get("loop", True)
    if not isinstance(loop, bool):
        raise PlaylistError(f"{source}, loop", f"must be true or false, got {loop!r}",
                            'write "loop": true to play the items again and again, false to play them once')
    hold_s = data.get("hold_s", DEFAULT_HOLD_S)
    if not _is_number(hold_s) or not 0 <= hold_s <= MAX_HOLD_S:
        raise PlaylistError(f"{source}, hold_s", f"must be a number of seconds from 0 to {MAX_HOLD_S:g}, got "
                                                 f"{hold_s!r}", f'write e.g. "hold_s": {DEFAULT_HOLD_S:g}')
    defaults = _flat_values(data.get("defaults", {}), f"{source}, defaults")
    items = data.get("items")
    if not isinstance(items, list) or not items:
        raise PlaylistError(f"{source}, items", "missing or empty" if not items else
                            f"must be a list, got {_kind(items)}",
                            'add "items": [ … ] with at least one {"run": {…}} or {"race": {…}}; ' + _FORMAT_HINT)
    if len(items) > MAX_ITEMS:
        raise PlaylistError(f"{source}, items", f"{len(items)} items, at most {MAX_ITEMS} are played",
                            "split the playlist into several files")
    parsed = tuple(_item(raw, number, source) for number, raw in enumerate(items, start=1))
    return Playlist(parsed, loop, float(hold_s), defaults, title, source)


def check_specs(playlist: Playlist) -> list[ItemProblem]:
    """Every item's spec built now: the problems an operator should see before the audience does."""
    problems = []
    for item in playlist.items:
        try:
            if item.kind == "run":
                playlist.build_run(item)
            else:
                playlist.build_race(item)
        except ItemProblem as exc:
            problems.append(exc)
    return problems


def side_labels(a: RunSpec, b: RunSpec) -> tuple[str, str]:
    """What tells the two sides apart, in words: "PyTorch" / "ONNX Runtime", "fp32" / "int8", "batch 1" /
    "batch 8"; a side with a run name is called by it. Same configuration: each side's short label."""
    differing = [key for key, _ in _LABELS if _value(a, key) != _value(b, key)]
    for key, implied in (("engine", "engine_options"), ("scenario", "scenario_options")):
        if key in differing and implied in differing:  # another engine or scenario has other options anyway
            differing.remove(implied)
    labels = []
    for spec in (a, b):
        if spec.name:
            labels.append(spec.name)
        elif differing:
            labels.append(" · ".join(dict(_LABELS)[key](_value(spec, key)) for key in differing[:3]))
        else:
            labels.append(spec.label())
    if labels[0] == labels[1]:  # differ only in options the labels do not name
        labels = [f"{labels[0]} (A)", f"{labels[1]} (B)"]
    return labels[0], labels[1]


# ---- Private API
def _read_text(path: str | os.PathLike, source: str) -> str:
    """The file's text, if it is a regular file (symlinks resolved) of at most MAX_BYTES: console.files.small_file's
    rule (a FIFO refused, never waited on; a device never read), with the playlist's fix in the message."""
    from console.files.small_file import SmallFileError, read_small_file

    try:
        data = read_small_file(path, MAX_BYTES)
    except SmallFileError as exc:
        if exc.missing:
            raise PlaylistError(source, "no such file", "give the path of a playlist JSON file") from None
        reason = exc.reason
        if reason.startswith("is ") and "not a regular file" in reason and os.path.islink(path):
            reason = reason.replace(", not a regular file", f" ({os.path.realpath(path)}), not a regular file")
        fix = (f"give a playlist of at most {MAX_BYTES // 1024:,} KiB (split a long one into several files)"
               if "larger than" in reason else "give the path of a playlist JSON file (a regular file)")
        raise PlaylistError(source, reason, fix) from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise PlaylistError(source, f"not UTF-8 text (byte {exc.start:,} is 0x{data[exc.start]:02x})",
                            "give a readable UTF-8 JSON file") from None


_SPECIAL = re.compile(r'[\[\]{}"\\]')  # what the depth scan looks at: brackets, and quotes and escapes of strings


def _check_depth(text: str, source: str) -> None:
    """Refuse brackets nested deeper than MAX_DEPTH, found by one linear scan (brackets inside strings do not
    count), before json.loads, which recurses once per level, sees the text."""
    depth, in_string, escaped_until = 0, False, -1
    for match in _SPECIAL.finditer(text):
        where, char = match.start(), match.group()
        if in_string:
            if where < escaped_until:  # the character after a backslash
                continue
            if char == "\\":
                escaped_until = where + 2
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            if depth > MAX_DEPTH:
                line = text.count("\n", 0, where) + 1
                column = where - text.rfind("\n", 0, where)
                raise PlaylistError(f"{source} line {line} column {column}",
                                    f"brackets nested more than {MAX_DEPTH} deep, the most a playlist may have",
                                    f"nest objects and lists at most {MAX_DEPTH} levels (a playlist needs about 8)")
        elif char in "]}":
            depth = max(depth - 1, 0)  # an unbalanced close is json.loads's to report, with its position


def _engine_label(name: Any) -> str:
    try:
        return backends.info(str(name)).label
    except KeyError:
        return str(name)


def _model_label(model: Any) -> str:
    return os.path.basename(str(model)) or str(model)


_LABELS: tuple[tuple[str, Any], ...] = (
    ("engine", _engine_label),
    ("precision", str),
    ("batch", lambda v: f"batch {v}"),
    ("threads", lambda v: "default threads" if v is None else f"{v} thread{'s' if v != 1 else ''}"),
    ("model", _model_label),
    ("target", str),
    ("scenario", str),
    ("mode", str),
    ("model_params", lambda v: ", ".join(f"{k} {val}" for k, val in sorted(v.items())) or "default size"),
    ("engine_options", lambda v: "engine options " + json.dumps(v, sort_keys=True, default=str)[:40]),
    ("scenario_options", lambda v: "scenario options " + json.dumps(v, sort_keys=True, default=str)[:40]),
)


def _value(spec: RunSpec, key: str) -> Any:
    value = getattr(spec, key)
    if key == "engine_options":
        return {name: _plain(options) for name, options in value.items() if name == spec.engine}
    if key == "scenario_options":
        return _plain(value)
    return value


def _plain(options: Any) -> Any:
    import dataclasses

    return dataclasses.asdict(options) if dataclasses.is_dataclass(options) else options


def _item(raw: Any, number: int, source: str) -> RunItem | RaceItem:
    where = _where(number, raw.get("name") if isinstance(raw, dict) and isinstance(raw.get("name"), str) else "")
    if not isinstance(raw, dict):
        raise PlaylistError(where, f"must be a JSON object, got {_kind(raw)}",
                            'write {"run": {…}} or {"race": {"a": {…}, "b": {…}}}')
    _known_keys(raw, _ITEM_KEYS, where)
    name = raw.get("name", "")
    if not isinstance(name, str):
        raise PlaylistError(f"{where}, name", f"must be text, got {_kind(name)}", 'write e.g. "name": "MLP, batch 8"')
    kinds = [key for key in ("run", "race") if key in raw]
    if len(kinds) != 1:
        raise PlaylistError(where, "has both run and race" if kinds else "has neither run nor race",
                            'give exactly one: {"run": {…option values…}} or {"race": {"a": {…}, "b": {…}}}')
    if kinds[0] == "run":
        return RunItem(number, name.strip(), _config(raw["run"], f"{where}, run"))
    race = raw["race"]
    if not isinstance(race, dict):
        raise PlaylistError(f"{where}, race", f"must be a JSON object, got {_kind(race)}",
                            'write "race": {"a": {…}, "b": {…}, "rounds": 3}')
    _known_keys(race, _RACE_KEYS, f"{where}, race")
    for side in ("a", "b"):
        if side not in race:
            raise PlaylistError(f"{where}, race", f"has no {side!r} side",
                                f'add "{side}": {{…option values…}}, e.g. {{"engine": "onnxruntime"}}')
    rounds = race.get("rounds", DEFAULT_ROUNDS)
    if not isinstance(rounds, int) or isinstance(rounds, bool) or not 1 <= rounds <= MAX_ROUNDS:
        raise PlaylistError(f"{where}, race.rounds", f"must be a whole number from 1 to {MAX_ROUNDS}, got {rounds!r}",
                            f"write e.g. \"rounds\": {DEFAULT_ROUNDS} (rounds per side; more rounds give a "
                            "narrower interval)")
    both = _flat_values(race.get("both", {}), f"{where}, race.both")
    a, b = (_config(race[side], f"{where}, race.{side}") for side in ("a", "b"))
    for side, config in (("a", a), ("b", b)):
        if config.spec is not None and both:
            raise PlaylistError(f"{where}, race.{side}", "a side given as a RunSpec dict is run as it is, so "
                                "\"both\" cannot apply to it", f"move the \"both\" values into race.{side}.spec, "
                                                               "or give the side as option values")
    return RaceItem(number, name.strip(), a, b, both, rounds)


def _config(raw: Any, where: str) -> Config:
    if not isinstance(raw, dict):
        raise PlaylistError(where, f"must be a JSON object of option values, got {_kind(raw)}",
                            'write e.g. {"engine": "onnxruntime", "batch": 8}')
    if "spec" in raw:
        if len(raw) != 1:
            others = ", ".join(sorted(k for k in raw if k != "spec"))
            raise PlaylistError(where, f"has a RunSpec (\"spec\") and option values ({others})",
                                'give either {"spec": {…RunSpec…}} alone, or option values without "spec"')
        if not isinstance(raw["spec"], dict):
            raise PlaylistError(f"{where}.spec", f"must be a RunSpec JSON object, got {_kind(raw['spec'])}",
                                "give a RunSpec dict as `labconsole export --format json` writes one")
        return Config(spec=raw["spec"])
    return Config(values=_flat_values(raw, where))


def _flat_values(raw: Any, where: str) -> dict[str, Any]:
    if not isinstance(raw, dict):
        raise PlaylistError(where, f"must be a JSON object of option values, got {_kind(raw)}",
                            'write e.g. {"duration_s": 10, "warmup_s": 2}')
    for key in raw:
        if key.startswith("-"):
            path = next((f.path for f in fields_by_path().values() if f.flag == key), None)
            raise PlaylistError(f"{where}.{key}", "option values are keyed by option path, not by flag",
                                f"write {path!r}" if path else "drop the leading dashes")
    return dict(raw)


def _known_keys(data: dict, allowed: tuple[str, ...], where: str) -> None:
    for key in data:
        if key not in allowed:
            raise PlaylistError(f"{where}, {key}", f"unknown key {key!r}{_did_you_mean(key, allowed)}",
                                f"use only {', '.join(allowed)}")


def _did_you_mean(key: str, known: Any) -> str:
    close = difflib.get_close_matches(str(key), list(known), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _spec_fix(path: str) -> str:
    if path == "model":
        return ("give a catalog model (`labconsole models`) or the path of an existing .onnx, .pt2, .pt or .jit "
                "file")
    return f"correct \"{path}\" in the playlist (the option `labconsole run {flag_for(path)}` sets)"


def _where(number: int, name: str) -> str:
    return f"item {number}" + (f' ("{name}")' if name else "")


def _is_number(value: Any) -> bool:
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return False
    try:
        return math.isfinite(value)
    except OverflowError:  # an int of hundreds of digits: no float holds it
        return False


def _kind(value: Any) -> str:
    return {dict: "an object", list: "a list", str: "text", bool: "true/false", type(None): "null"}.get(
        type(value), "a number" if _is_number(value) else type(value).__name__)
