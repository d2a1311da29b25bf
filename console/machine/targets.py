"""Target discovery, run in a short-lived worker process (the console itself never imports torch),
and cached per host so the window and `labconsole targets` answer at once; `--refresh` rediscovers.

The cache is keyed by host, interpreter and the versions of the engines, so installing a CUDA build of
PyTorch or onnxruntime-gpu invalidates it by itself.
"""

from __future__ import annotations

import json
import os
import platform
import sys
import time
from importlib import metadata
from pathlib import Path
from typing import Any

from console import paths
from console.workers import call_in_worker
from engines import backends

CACHE_VERSION = 1


# ---- Public API
def discover_targets(refresh: bool = False, timeout_s: float = 120.0) -> list[dict[str, Any]]:
    """The targets of this host: from the cache when it is still valid, else from a spawned worker."""
    key = _cache_key()
    if not refresh:
        cached = _read_cache(key)
        if cached is not None:
            return cached
    try:
        targets = _discover_in_worker(timeout_s)
    except Exception as exc:  # noqa: BLE001 — the caller still needs a usable list
        return [{"id": "cpu", "name": "CPU", "kind": "cpu", "available": True, "engines": [],
                 "engine_details": {}, "reason": "",
                 "note": f"target discovery failed ({type(exc).__name__}: {exc}); engines unknown — "
                         "run `labconsole targets --refresh`"}]
    _write_cache(key, targets)
    return targets


def cache_path() -> Path:
    return paths.data_dir() / f"targets-{_safe(platform.node())}.json"


# ---- Private API
def _discover_in_worker(timeout_s: float) -> list[dict[str, Any]]:
    return call_in_worker("engines.targets:discover", timeout_s=timeout_s)


def _cache_key() -> dict[str, Any]:
    versions = {}
    for dist in (*(d for info in backends.infos() for d in info.distributions), "nvidia-ml-py"):
        try:
            versions[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            versions[dist] = None
    return {"cache_version": CACHE_VERSION, "host": platform.node(), "python": sys.executable, **versions,
            "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES")}


def _read_cache(key: dict[str, Any]) -> list[dict[str, Any]] | None:
    try:
        data = json.loads(cache_path().read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("key") != key or not isinstance(data.get("targets"), list):
        return None
    for target in data["targets"]:
        target["cached_at"] = data.get("written_at")
    return data["targets"]


def _write_cache(key: dict[str, Any], targets: list[dict[str, Any]]) -> None:
    path = cache_path()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary = path.with_suffix(".tmp")
        temporary.write_text(json.dumps({"key": key, "written_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                                         "targets": targets}, indent=1))
        os.replace(temporary, path)
    except OSError:
        pass  # a cache that cannot be written only costs the next start a rediscovery


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name) or "host"
