"""What a backend's probe hands target discovery: the targets it can use and, for the others, why not.

Each backend names its probe on its registration (`BackendInfo.probe`, "module:function"; by default the
`probe` function of its implementation module). Discovery (engines.targets) calls every registered probe
with the machine's engine-free facts and merges the answers, so it never names an engine itself. A probe
imports its engine, so it runs in a worker, as discovery does.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from importlib import metadata
from typing import Any

from engines import backends

ANY = "*"  # a `Probe.entries` key that answers for every target the probe says nothing else about


@dataclass(frozen=True)
class Machine:
    """Engine-free facts discovery gathers once and hands every probe."""

    cpu_flags: frozenset[str] = frozenset()
    system: str = ""  # platform.system()
    boards: tuple[dict[str, Any], ...] = ()  # NVML's boards, in index order (name, memory_bytes …)


@dataclass
class Probe:
    """One backend's answer.

    entries: target id ("cuda:1"), family ("cuda" answers for every cuda:N) or ANY → the engine's entry for that
        target, usable or not (`usable()` / `unusable()`).
    devices: target id → facts of a device this engine sees (name, kind, memory_bytes, compute_capability …);
        discovery lists each one as a target.
    absent: target id → why this engine finds no such device; discovery lists the id as an unusable target when
        no backend sees a device of its family (so a CPU-only machine still shows "cuda:0" with the reason).
    """

    entries: dict[str, dict[str, Any]] = field(default_factory=dict)
    devices: dict[str, dict[str, Any]] = field(default_factory=dict)
    absent: dict[str, str] = field(default_factory=dict)

    def entry(self, target_id: str) -> dict[str, Any] | None:
        return self.entries.get(target_id) or self.entries.get(family(target_id)) or self.entries.get(ANY)


# ---- Public API
def usable(precisions: list[str], version: str | None = None, notes: dict[str, str] | None = None,
           **extra: Any) -> dict[str, Any]:
    return entry(True, precisions=precisions, notes=notes, version=version, **extra)


def unusable(reason: str, version: str | None = None, **extra: Any) -> dict[str, Any]:
    return entry(False, reason, version=version, **extra)


def entry(available: bool, reason: str = "", precisions: list[str] | None = None,
          notes: dict[str, str] | None = None, version: str | None = None, **extra: Any) -> dict[str, Any]:
    """The shape of one engine on one target, as `labconsole targets --json` shows it."""
    return {"available": available, "reason": reason, "precisions": precisions or [], "notes": notes or {},
            "version": version, **extra}


def offered(backend: str, kind: str) -> list[str]:
    """The precisions a backend declares for a kind of target (its BackendInfo); its probe narrows them."""
    return list(backends.info(backend).precisions.get(kind, ()))


def family(target_id: str) -> str:
    """"cuda:1" → "cuda"; "mps" → "mps"."""
    return target_id.partition(":")[0]


def run_probe(info: backends.BackendInfo, machine: Machine) -> Probe:
    """Call a backend's probe; one that fails to import or raises makes the engine unusable everywhere, saying why."""
    where = info.probe or f"{info.module}:probe"
    module_name, _, function = where.partition(":")
    try:
        found = getattr(importlib.import_module(module_name), function or "probe")(machine)
    except Exception as exc:  # noqa: BLE001 — a broken engine is a reason, not a crash of discovery
        return Probe(entries={ANY: unusable(f"{info.label}'s probe failed: {exc}"
                                            + (f" ({info.install})" if info.install else ""))})
    return found if isinstance(found, Probe) else Probe(entries={ANY: unusable(
        f"{info.label}'s probe returned {type(found).__name__}, not a Probe")})


def installed_versions() -> dict[str, str | None]:
    """Backend name → the version of its first installed distribution (None: not installed), without importing it."""
    found: dict[str, str | None] = {}
    for info in backends.infos():
        found[info.name] = None
        for dist in info.distributions:
            try:
                found[info.name] = metadata.version(dist)
                break
            except metadata.PackageNotFoundError:
                continue
    return found
