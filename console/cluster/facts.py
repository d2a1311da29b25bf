"""A node's hardware facts as Ray node labels, derived from the node's own target discovery.

Labels are what `--on KEY=VALUE` selects on, so they follow Ray's (Kubernetes') label syntax: values of at most
63 characters of [A-Za-z0-9_.-], starting and ending alphanumeric; Ray's selectors test equality (and `in`, `!`),
not membership, so each target and each engine is a label of its own (`target.cuda-0=yes`, `engine.torch=yes`).
Discovery imports torch, so it runs in a spawned worker (console.machine.targets), never in the console.
"""

from __future__ import annotations

import re
from typing import Any

from console.cluster import LABEL_PREFIX

YES = "yes"
# The CPU ISA tiers that matter for AI throughput, best first: the `isa` label names the best one present.
_ISA_TIERS = ("amx_int8", "amx_bf16", "avx512_bf16", "avx512_vnni", "avx512f", "avx_vnni", "avx2", "sve2", "sve",
              "i8mm", "asimd")


# ---- Public API
def label_value(text: Any) -> str:
    """Any text as a valid label value: other characters become '-', runs collapse, at most 63 characters."""
    value = re.sub(r"[^A-Za-z0-9_.-]+", "-", str(text)).strip("-_.")
    value = re.sub(r"-{2,}", "-", value)[:63].rstrip("-_.")
    return value or "unknown"


def target_label(target_id: str) -> str:
    """The label key saying a node has a target: `cuda:0` → `labconsole/target.cuda-0`."""
    return f"{LABEL_PREFIX}target.{label_value(target_id)}"


def engine_label(engine: str) -> str:
    return f"{LABEL_PREFIX}engine.{label_value(engine)}"


def labels_from(targets: list[dict[str, Any]], host: dict[str, Any], console_version: str) -> dict[str, str]:
    """The node labels of a machine: CPU model and ISA, accelerator model and count, memory, engines, targets,
    console version, host. Pure: the caller gathers `targets` (engines.targets.discover) and `host`
    (console.history.host.describe)."""
    cpu = next((t for t in targets if t.get("id") == "cpu"), {})
    gpus = [t for t in targets if t.get("kind") == "gpu" and t.get("available")]
    isa = [f for f in _ISA_TIERS if f in (cpu.get("isa") or [])]
    memory = cpu.get("memory_bytes")
    labels = {
        "cpu": label_value(cpu.get("name") or host.get("cpu") or "unknown"),
        "arch": label_value(cpu.get("arch") or host.get("machine") or "unknown"),
        "isa": isa[0] if isa else "baseline",
        "accel": label_value(gpus[0]["name"]).lower() if gpus else "cpu",
        "gpus": str(len(gpus)),
        "memory-gib": str(round(memory / 2**30)) if isinstance(memory, (int, float)) else "unknown",
        "console": label_value(console_version),
        "host": label_value(host.get("hostname") or "unknown"),
        "host-id": label_value(host.get("host_id") or "unknown"),
    }
    out = {LABEL_PREFIX + key: value for key, value in labels.items()}
    for target in targets:
        if target.get("available"):
            out[target_label(target["id"])] = YES
            for engine in target.get("engines") or []:
                out[engine_label(engine)] = YES
    return out


def local_labels(refresh: bool = False) -> dict[str, str]:
    """This machine's labels (target discovery in a worker, cached per host by console.machine.targets)."""
    from console import __version__
    from console.history import host
    from console.machine.targets import discover_targets

    return labels_from(discover_targets(refresh=refresh), host.describe(), __version__)


def selector_for(spec: dict[str, Any], on: dict[str, str] | None) -> dict[str, str]:
    """The Ray label selector of a run: the user's `--on` pairs, and always the run's target and engine, so a
    node that lacks them is never chosen."""
    from console.cluster import label_key

    selector = {label_key(key): value for key, value in (on or {}).items()}
    selector.setdefault(target_label(str(spec.get("target") or "cpu")), YES)
    selector.setdefault(engine_label(str(spec.get("engine") or "torch")), YES)
    return selector


def matches(labels: dict[str, str], selector: dict[str, str]) -> bool:
    """Whether a node's labels satisfy a selector (equality, `!value`, `in(a, b)`, `!in(a, b)`), as Ray does."""
    for key, wanted in selector.items():
        negate = wanted.startswith("!")
        body = wanted[1:] if negate else wanted
        values = [v.strip() for v in body[3:-1].split(",")] if body.startswith("in(") and body.endswith(")") \
            else [body]
        if (labels.get(key) in values) == negate:
            return False
    return True
