"""Which runs measure the same thing: a run's configuration, its fingerprint, and what differs between two runs.

Runs with one fingerprint form a series, the unit of regression tracking. The configuration holds what the
engineer chose to measure — the model (a model file by its content hash, so a renamed copy is the same model and
an edited one is not), its parameters and input shapes, the engine and its options, target, precision, batch,
threads, mode, scenario and its options (and the spec sections its registration reads: generate's prompt and
output tokens), how many cores the worker was confined to (a run with a core partition: a window run, or the CLI's
--console-cores; runs without one keep the key out, so older series go on), and the host. It leaves out how long
the run measured (duration, iterations, warm-up, limits, name, measuring until stable), which change the
confidence, not the quantity.

Engine, driver and OS versions and the device name are left out on purpose: a series must span a framework or
driver upgrade, because that is where regressions come from. They are the *environment*, and `differences` lists
them as what changed between two runs of one series. Qt-free, plain dicts.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from engines import scenarios
from engines.cores import format_cpus

SPEC_FIELDS = ("model", "model_params", "inputs", "input_values", "engine", "target", "precision", "batch",
               "threads", "mode", "scenario", "scenario_options")
# Scenario options that say how long to measure (until stable, its cap and aim), not what is measured
LENGTH_OPTIONS = ("until_stable", "max_duration_s", "stable_windows", "stability_tolerance", "windows_per_duration",
                  "stability_allowance")


# ---- Public API
def configuration(spec: dict[str, Any], environment: dict[str, Any] | None = None,
                  hostname: str | None = None, host_id: str | None = None) -> dict[str, Any]:
    """The fields that define "the same measurement" (see the module docstring), JSON-shaped. The host is its
    stable id where known (labs reuse hostnames), with the hostname beside it for people."""
    spec = spec or {}
    config: dict[str, Any] = {name: spec.get(name) for name in SPEC_FIELDS}
    if isinstance(config["scenario_options"], dict):
        config["scenario_options"] = {k: v for k, v in config["scenario_options"].items() if k not in LENGTH_OPTIONS}
        if config["scenario_options"].get("kv_offload") is None:  # generate without a KV cache on storage: the
            # kv_* options (engines.kvcache.options) mean nothing, so its runs stay the series they were before them
            config["scenario_options"] = {k: v for k, v in config["scenario_options"].items()
                                          if not k.startswith("kv_")}
    engine = str(spec.get("engine") or "")
    config["engine_options"] = (spec.get("engine_options") or {}).get(engine)
    for section in _scenario_sections(spec.get("scenario")):  # e.g. generate's prompt and output tokens
        config[section] = spec.get(section)
    digest = model_file_sha256(environment)
    if digest:
        config["model"] = f"sha256:{digest}"
    worker_cpus = _confined_worker_cpus(environment)
    if worker_cpus is not None:  # the cores the worker had: "auto" threads follow them, and so does the latency
        config["worker_cpus"] = worker_cpus
    config["host"] = hostname
    if host_id:
        config["host_id"] = host_id
    return config


def _scenario_sections(name: Any) -> list[str]:
    """The spec sections beyond its own options that the scenario `name` reads (its registration's extra_fields,
    e.g. "generation" for generate): they are part of what it measures."""
    found = scenarios.declared(name) if isinstance(name, str) else None
    return sorted({path.split(".")[0] for path in found.extra_fields}) if found is not None else []


def fingerprint(config: dict[str, Any]) -> str:
    """16 hex digits of the SHA-256 of the configuration's canonical JSON (key order does not matter)."""
    text = json.dumps(config, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def differences(run_a: dict[str, Any], run_b: dict[str, Any]) -> list[dict[str, Any]]:
    """What differs from run A to run B: [{field, a, b, kind}], kind "configuration" (they measure different
    things) or "environment" (what changed around the same measurement: versions, driver, device, CPU, OS)."""
    found = [{"field": key, "a": a, "b": b, "kind": "configuration"}
             for key, a, b in _changed(_config_of(run_a), _config_of(run_b))]
    found += [{"field": key, "a": a, "b": b, "kind": "environment"}
              for key, a, b in _changed(environment_facts(run_a), environment_facts(run_b))]
    return found


def environment_facts(run: dict[str, Any]) -> dict[str, Any]:
    """The flat environment facts of a stored run worth comparing (versions, device, driver, CPU, OS)."""
    env = run.get("environment") or {}
    facts: dict[str, Any] = {}
    for scope in ("worker", "engine"):
        versions = (env.get(scope) or {}).get("versions") if scope == "engine" else env.get(scope)
        for name, version in (versions or {}).items():
            if isinstance(version, (str, int, float)):
                facts[f"version.{name}"] = version
    engine = env.get("engine") or {}
    for key in ("device_name", "device", "driver", "driver_version", "providers_used", "threads", "dtype"):
        if isinstance(engine.get(key), (str, int, float, list)):
            facts[f"engine.{key}"] = engine[key]
    governors = ((env.get("hygiene") or {}).get("cpu_frequency") or {}).get("governors")
    if governors:
        facts["host.cpu_governor"] = governors
    partition = env.get("partition")  # console.run.partition: the console on its own cores, or sharing the worker's
    if isinstance(partition, dict):
        facts["host.core_partition"] = (f"worker CPUs {format_cpus(partition.get('worker_cpus') or [])}, console "
                                        f"CPUs {format_cpus(partition.get('console_cpus') or [])}"
                                        if partition.get("confined") else
                                        "not confined (the console shared the worker's cores)")
    return facts


def model_file_sha256(environment: dict[str, Any] | None) -> str | None:
    """The content hash the worker computed for a model file (None for catalog models or before loading)."""
    engine = (environment or {}).get("engine") or {}
    for key in ("model_file", "file"):  # onnxruntime's and torch's load details
        digest = (engine.get(key) or {}).get("sha256")
        if digest:
            return str(digest)
    return None


# ---- Private helpers
def _config_of(run: dict[str, Any]) -> dict[str, Any]:
    stored = run.get("configuration")
    if isinstance(stored, dict):
        return stored
    return configuration(run.get("spec") or {}, run.get("environment"), run.get("hostname"), run.get("host_id"))


def _changed(a: dict[str, Any], b: dict[str, Any]) -> list[tuple[str, Any, Any]]:
    return [(key, a.get(key), b.get(key)) for key in sorted(set(a) | set(b), key=str) if a.get(key) != b.get(key)]


def _confined_worker_cpus(environment: dict[str, Any] | None) -> int | None:
    """How many CPUs a partitioned run's worker had (environment.partition), None when it was not confined."""
    placed = (environment or {}).get("partition")
    if not isinstance(placed, dict) or not placed.get("confined"):
        return None
    cpus = placed.get("worker_cpus")
    return len(cpus) if isinstance(cpus, list) and cpus else None
