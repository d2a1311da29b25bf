"""Versioned events from a worker to the console: plain dicts that survive a pipe, JSON or a Ray stream.

Event order: hello → phase(loading) → loaded → phase(warmup) → phase(measuring) →
latencies* / progress* → [phase(profiling) → profile] → result | error. Latencies travel in batches
(~every 100 ms), never one message per iteration, so a fast model cannot flood the console. The profiling phase
runs only when the spec asks for it (`profile_iterations`), after the timed measurement, so it never touches the
timed numbers.
"""

from __future__ import annotations

import json
from typing import Any

from engines import phases

PROTOCOL_VERSION = 1

PHASES = phases.NAMES  # the phase table (names, words, colours) is engines/phases.py
ERROR_KINDS = ("spec", "load", "runtime", "cancelled", "internal")

# Required fields per event type (besides "v" and "type").
FIELDS: dict[str, tuple[str, ...]] = {
    "hello": ("pid", "versions"),  # optional: sandbox (engines.sandbox state: active, summary, dir, abi)
    "phase": ("phase", "t_ns"),
    "loaded": ("load_s", "params", "model_bytes"),  # optional: hygiene (engines.hygiene), when taken by then
    "latencies": ("t_ns", "latency_ns"),
    "progress": ("phase", "fraction", "iterations", "elapsed_s"),
    # optional: hygiene, when it was not ready for `loaded` (engines.worker takes it beside the load)
    "result": ("iterations", "measured_s", "warmup_iterations", "first_inference_ms", "batch"),
    "error": ("kind", "message", "traceback"),
    # The engine's own profile (engines.profiling): op rows, the Chrome trace's path, counters or None, notes.
    "profile": ("engine", "iterations", "wall_s", "op_time_s", "ops", "trace_path", "counters", "notes"),
}


class ProtocolError(ValueError):
    """An event is malformed or from an incompatible protocol version."""


def make(event_type: str, **fields: Any) -> dict[str, Any]:
    """Build an event and check it has what its type requires, in plain built-in types only.

    Plain types matter: unpickling a library's object (torch's TorchVersion is a str subclass) would make
    the console import that library, the very thing the process boundary exists to prevent.
    """
    event = {"v": PROTOCOL_VERSION, "type": event_type, **fields}
    check(event)
    if event_type != "latencies":  # the hot path: array('q').tolist() is plain by construction
        _check_plain(event, event_type)
    return event


def check(event: Any) -> dict[str, Any]:
    """Return the event if it is well formed for this protocol version, else raise ProtocolError."""
    if not isinstance(event, dict):
        raise ProtocolError(f"event must be a dict, got {type(event).__name__}")
    if event.get("v") != PROTOCOL_VERSION:
        raise ProtocolError(f"protocol version {event.get('v')!r} from worker, console speaks {PROTOCOL_VERSION}")
    kind = event.get("type")
    if kind not in FIELDS:
        raise ProtocolError(f"unknown event type {kind!r}")
    missing = [name for name in FIELDS[kind] if name not in event]
    if missing:
        raise ProtocolError(f"{kind} event lacks {', '.join(missing)}")
    if kind == "phase" and event["phase"] not in PHASES:
        raise ProtocolError(f"unknown phase {event['phase']!r}")
    if kind == "latencies" and len(event["t_ns"]) != len(event["latency_ns"]):
        raise ProtocolError("latencies event has t_ns and latency_ns of different lengths")
    return event


_SCALARS = (str, int, float, bool, type(None))


def plain(value: Any) -> Any:
    """`value` in the built-in types an event may carry: dict keys as str, tuples as lists, int and float
    subclasses (numpy's, IntEnum) as int and float, numpy and torch scalars through `.item()`, anything else
    (paths, arrays, devices) as its str()."""
    if type(value) in _SCALARS:
        return value
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    item = getattr(value, "item", None)
    if callable(item):
        try:
            return plain(item())
        except (TypeError, ValueError, RuntimeError):  # an array of more than one element
            pass
    return str(value)


def _check_plain(value: Any, where: str) -> None:
    kind = type(value)
    if kind in _SCALARS:
        return
    if kind in (list, tuple):
        for item in value:
            _check_plain(item, where)
    elif kind is dict:
        for key, item in value.items():
            if type(key) is not str:
                raise ProtocolError(f"{where}: key {key!r} is not a plain str")
            _check_plain(item, f"{where}.{key}")
    else:
        raise ProtocolError(f"{where}: {kind.__module__}.{kind.__name__} is not a plain built-in type "
                            "(convert it with str()/int()/float() before sending)")


def dumps(event: dict[str, Any]) -> str:
    return json.dumps(check(event), separators=(",", ":"))


def loads(text: str) -> dict[str, Any]:
    return check(json.loads(text))
