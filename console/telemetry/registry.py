"""Which telemetry sources exist. Adding one = one module + one line in :data:`SOURCES`.

Sources are named by ``"module:Class"`` strings and imported lazily, so a source whose library is missing
(e.g. NVML on a machine without NVIDIA drivers) costs nothing until asked for, and a failing import is
reported as "unavailable, because ..." instead of breaking the console.
"""

from __future__ import annotations

import importlib
from typing import Any

from .base import Source

# name -> "package.module:ClassName". One line per source.
SOURCES: dict[str, Any] = {
    "psutil": "console.telemetry.psutil_source:PsutilSource",
    "nvml": "console.telemetry.nvml_source:NvmlSource",
    "rapl": "console.telemetry.rapl_source:RaplSource",
    "amdsmi": "console.telemetry.amdsmi_source:AmdSmiSource",
    "estimated": "console.telemetry.estimated_source:EstimatedPowerSource",
    "storage": "console.telemetry.diskstats:StorageSource",
}


def source_names() -> list[str]:
    return list(SOURCES)


def check_names(names: list[str] | None) -> list[str]:
    """The names to use (all registered when None); ValueError naming the known ones otherwise."""
    if names is None:
        return list(SOURCES)
    if isinstance(names, str):
        names = [names]
    unknown = [n for n in names if n not in SOURCES]
    if unknown:
        raise ValueError(f"unknown telemetry source(s) {unknown}; known: {sorted(SOURCES)}")
    return list(names)


def load_source_class(name: str) -> type[Source]:
    target = SOURCES[name]
    if not isinstance(target, str):  # a class registered directly (tests, plug-ins built at runtime)
        return target
    module_name, _, attr = target.partition(":")
    return getattr(importlib.import_module(module_name), attr)


def create_sources(names: list[str] | None = None) -> list[Source]:
    """Instantiate (not open) the named sources, all registered ones when ``names`` is None."""
    return [load_source_class(n)() for n in check_names(names)]


def describe(source: Source, *, error: str | None = None) -> dict[str, Any]:
    """Plain-data description of an opened source: what it measures, what it lacks and why.

    ``error`` overrides availability (used when ``open()`` or ``sample()`` raised).
    """
    if error is not None:
        ok, reason = False, error
    else:
        try:
            ok, reason = source.available()
        except Exception as exc:  # a broken plug-in must not take the description down
            ok, reason = False, f"available() failed: {exc!r}"
    metrics: list[dict[str, str]] = []
    unavailable: dict[str, str] = {}
    try:
        if ok:
            metrics = [m.to_dict() for m in source.metrics()]
        unavailable = dict(source.unavailable_metrics())
    except Exception as exc:
        ok, reason = False, f"describing failed: {exc!r}"
    return {
        "name": source.name,
        "available": bool(ok),
        "reason": reason,
        "metrics": metrics,
        "unavailable_metrics": unavailable,
        "period_s": getattr(source, "period_s", None),
    }


def open_source(source: Source) -> tuple[bool, dict[str, Any]]:
    """Open a source and describe it; (usable, description). Never raises."""
    try:
        source.open()
    except Exception as exc:
        return False, describe(source, error=f"open() failed: {exc!r}")
    desc = describe(source)
    return desc["available"], desc


def describe_sources(names: list[str] | None = None) -> list[dict[str, Any]]:
    """Open, describe and close each source (for ``labconsole telemetry --json``).

    A source whose module cannot be imported is described as unavailable with the import error.
    """
    out = []
    for name in check_names(names):
        source, desc = load_and_open(name)
        if source is not None:
            try:
                source.close()
            except Exception:
                pass
        out.append(desc)
    return out


def load_and_open(name: str, tick_ns: int | None = None) -> tuple[Source | None, dict[str, Any]]:
    """Load the named source, give it the sampler's tick, open and describe it: (source, description). The
    source is None, and the description says why, when its module cannot be imported or its class not built.
    Never raises; a source that loaded is the caller's to close, usable or not."""
    try:
        source = load_source_class(name)()
    except Exception as exc:
        return None, {"name": name, "available": False, "reason": f"cannot load: {exc!r}",
                      "metrics": [], "unavailable_metrics": {}}
    if tick_ns is not None:
        source.tick_ns = tick_ns
    return source, open_source(source)[1]
