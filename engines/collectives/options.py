"""A collectives run's options, checked and filled in before anything starts: the console checks them (so a typo
costs nothing), the worker checks them again (it may be called directly). Pure Python: no torch.

Sizes are written as nccl-tests takes them: "8B..64MiB" doubles from the first to the last (its -b/-e/-f 2), a
comma list names each one. Suffixes: B; K, M, G and KiB, MiB, GiB (1024, as nccl-tests reads K/M/G); KB, MB, GB
(1000).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from engines.collectives.errors import CollectivesError
from engines.collectives.formulas import OPS

BACKENDS = ("gloo", "nccl")
RANK_TIMES = ("max", "avg")  # how one trial's per-rank times become one time (nccl-tests -a 3 / -a 1)
UNITS = {"": 1, "b": 1, "k": 1024, "kib": 1024, "m": 1024**2, "mib": 1024**2, "g": 1024**3, "gib": 1024**3,
         "kb": 1000, "mb": 1000**2, "gb": 1000**3}
MAX_SIZE = 16 * 1024**3
MAX_SIZES = 64
DEFAULTS: dict[str, Any] = {"ranks": 2, "backend": "gloo", "ops": list(OPS), "sizes": "8B..64MiB", "iters": 20,
                            "warmup": 5, "trials": 5, "cluster": None, "rank_time": "max", "stall_timeout_s": 300.0,
                            "place_timeout_s": 60.0, "dtype": "float32"}
ELEMENT_SIZE = 4  # float32: the only type timed (nccl-tests' default too)

__all__ = ["normalize", "parse_size", "parse_sizes", "format_size", "DEFAULTS", "BACKENDS"]


# ---- Public API
def normalize(options: Mapping[str, Any] | None) -> dict[str, Any]:
    """The options with defaults filled in and every value checked; CollectivesError naming the bad one and the fix."""
    given = dict(options or {})
    unknown = sorted(set(given) - set(DEFAULTS) - {"sizes_bytes", "placement"})
    if unknown:
        raise CollectivesError(f"unknown collectives option(s) {', '.join(unknown)}",
                               f"use only {', '.join(sorted(DEFAULTS))}")
    given.pop("placement", None)  # derived from cluster below
    out = {**DEFAULTS, **{k: v for k, v in given.items() if v is not None or k == "cluster"}}
    out["ranks"] = _whole(out["ranks"], "--ranks", 2, 1024, "a collective needs 2 or more ranks (e.g. --ranks 2)")
    out["iters"] = _whole(out["iters"], "--iters", 1, 100000, "time 1 to 100000 operations per trial (e.g. 20)")
    out["warmup"] = _whole(out["warmup"], "--warmup", 0, 100000, "give 0 or more warm-up operations (e.g. 5)")
    out["trials"] = _whole(out["trials"], "--trials", 1, 1000, "give 1 or more trials per size (e.g. 5)")
    if out["backend"] not in BACKENDS:
        raise CollectivesError(f"unknown backend {out['backend']!r}",
                               "choose gloo (CPU processes) or nccl (one rank per NVIDIA GPU)")
    if out["rank_time"] not in RANK_TIMES:
        raise CollectivesError(f"rank_time {out['rank_time']!r} is neither max nor avg", "choose max or avg")
    if out["dtype"] != "float32":
        raise CollectivesError(f"dtype {out['dtype']!r} is not timed", "use float32")
    out["ops"] = _ops(out["ops"])
    out["sizes_bytes"] = parse_sizes(out["sizes"])
    if isinstance(out["sizes"], list):
        out["sizes"] = ",".join(format_size(s) for s in out["sizes_bytes"])
    stall = out["stall_timeout_s"]
    if isinstance(stall, bool) or not isinstance(stall, (int, float)) or not 1 <= stall <= 86400:
        raise CollectivesError(f"stall_timeout_s {stall!r} is not a number of seconds from 1 to 86400",
                               "give how long a silent rank may take before the run is ended (e.g. 300)")
    out["stall_timeout_s"] = float(stall)
    place = out["place_timeout_s"]
    if isinstance(place, bool) or not isinstance(place, (int, float)) or not 1 <= place <= 3600:
        raise CollectivesError(f"place_timeout_s {place!r} is not a number of seconds from 1 to 3600",
                               "give how long Ray may take to place every rank (e.g. 60)")
    out["place_timeout_s"] = float(place)
    cluster = out["cluster"]
    if cluster is not None and (not isinstance(cluster, str) or not cluster.strip()):
        raise CollectivesError(f"--cluster {cluster!r} is not an address", "give the head's HOST:PORT, or auto")
    out["placement"] = "ray" if cluster else "local"
    return out


def parse_size(text: Any) -> int:
    """'8B', '64MiB', '1G', '4096' → bytes; CollectivesError otherwise."""
    if isinstance(text, int) and not isinstance(text, bool):
        value = text
    else:
        match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([A-Za-z]*)\s*", str(text))
        unit = match.group(2).lower() if match else None
        if match is None or unit not in UNITS:
            raise CollectivesError(f"{text!r} is not a size",
                                   "write a number with B, K/KiB, M/MiB, G/GiB (1024) or KB/MB/GB (1000), e.g. 64MiB")
        value = float(match.group(1)) * UNITS[unit]
        if value != int(value):
            raise CollectivesError(f"{text!r} is not a whole number of bytes", "write e.g. 1536B or 1.5KiB")
        value = int(value)
    if not ELEMENT_SIZE <= value <= MAX_SIZE:
        raise CollectivesError(f"size {text!r} ({value} B) is outside {ELEMENT_SIZE} B to {format_size(MAX_SIZE)}",
                               f"give sizes of at least one float32 ({ELEMENT_SIZE} B) and at most 16GiB")
    return value


def parse_sizes(spec: Any) -> list[int]:
    """'8B..64MiB' (doubling, both ends included when the last is reached) or '1KiB,1MiB' or a list → bytes,
    ascending, without duplicates."""
    if isinstance(spec, (list, tuple)):
        sizes = [parse_size(s) for s in spec]
    elif isinstance(spec, str) and ".." in spec:
        first_text, _, last_text = spec.partition("..")
        first, last = parse_size(first_text), parse_size(last_text)
        if first > last:
            raise CollectivesError(f"sizes {spec!r} run downwards", f"write the smaller first: {last_text}..{first_text}")
        sizes = []
        size = first
        while size <= last:
            sizes.append(size)
            size *= 2
    elif isinstance(spec, str) and spec.strip():
        sizes = [parse_size(s) for s in spec.split(",") if s.strip()]
    else:
        raise CollectivesError(f"sizes {spec!r} name no size", "write e.g. 8B..64MiB or 1KiB,1MiB")
    sizes = sorted(set(sizes))
    if not sizes or len(sizes) > MAX_SIZES:
        raise CollectivesError(f"sizes {spec!r} give {len(sizes)} sizes", f"give 1 to {MAX_SIZES} sizes")
    return sizes


def format_size(size: int) -> str:
    """Bytes as nccl-tests users write them: 8B, 64KiB, 1GiB (a size that is not a whole unit stays in B)."""
    for unit, scale in (("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if size >= scale and size % scale == 0:
            return f"{size // scale}{unit}"
    return f"{size}B"


# ---- Private API
def _whole(value: Any, flag: str, low: int, high: int, fix: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
        raise CollectivesError(f"{flag} {value!r} is not a whole number from {low} to {high}", fix)
    return value


def _ops(value: Any) -> list[str]:
    names = value
    if isinstance(names, str):
        names = list(OPS) if names.strip() == "all" else [n.strip() for n in names.split(",") if n.strip()]
    if not isinstance(names, (list, tuple)) or not names:
        raise CollectivesError(f"ops {value!r} name no collective", f"choose from {','.join(OPS)} or all")
    unknown = [n for n in names if n not in OPS]
    if unknown:
        raise CollectivesError(f"unknown collective(s) {', '.join(map(str, unknown))}",
                               f"choose from {','.join(OPS)} (comma-separated) or all")
    return [op for op in OPS if op in names]  # nccl-tests' order, duplicates dropped
