"""`labconsole storage sweep`: the I/O sweep's flags, their validation, and its human summary (the engine side is
engines/storage/iosweep.py). Qt-free; F's console/cli/storage_cmd.py adds --json, --db and --tag.
"""

from __future__ import annotations

import argparse
import re
from typing import Any

from engines.storage.errors import StorageError

_UNITS = {"": 1, "b": 1, "k": 1024, "kb": 1024, "kib": 1024, "m": 1024 ** 2, "mb": 1024 ** 2, "mib": 1024 ** 2,
          "g": 1024 ** 3, "gb": 1024 ** 3, "gib": 1024 ** 3}


# ---- Public API
def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--dir", required=True, metavar="DIR", help="directory to measure (a test file is written "
                        "there and removed afterwards)")
    parser.add_argument("--block-sizes", default="4k,64k,1m", metavar="LIST", help="block sizes (default 4k,64k,1m)")
    parser.add_argument("--queue-depths", default="1,4,16", metavar="LIST",
                        help="outstanding requests per reader (default 1,4,16)")
    parser.add_argument("--readers", default="1,2", metavar="LIST", help="reader processes (default 1,2)")
    parser.add_argument("--rw", default="both", choices=("read", "write", "both"))
    parser.add_argument("--pattern", default="both", choices=("seq", "rand", "both"))
    parser.add_argument("--direct", default="auto", choices=("auto", "on", "off"),
                        help="O_DIRECT: auto uses it where the file system allows (default auto)")
    parser.add_argument("--point-seconds", type=float, default=1.0, metavar="S", help="seconds per point (default 1)")
    parser.add_argument("--file-size", default="256m", metavar="SIZE", help="test file size (default 256m)")
    parser.add_argument("--engine", default="auto", choices=("auto", "built-in", "fio", "both"),
                        help="auto: fio when installed, else the built-in reader; both: each point on both")


def options_from(args: argparse.Namespace) -> dict[str, Any]:
    """The sweep's options from parsed flags, validated (engines.storage.iosweep.validate); StorageError on bad
    input, naming the flag and the fix."""
    from engines.storage.iosweep import validate

    options = {"dir": args.dir, "block_sizes": parse_list(args.block_sizes, "--block-sizes", sizes=True),
               "queue_depths": parse_list(args.queue_depths, "--queue-depths"),
               "readers": parse_list(args.readers, "--readers"), "rw": args.rw, "pattern": args.pattern,
               "direct": args.direct, "point_seconds": args.point_seconds,
               "file_size": parse_size(args.file_size, "--file-size"), "engine": args.engine}
    return validate(options)


def text_lines(result: dict[str, Any]) -> list[str]:
    """The sweep as the CLI prints it: one table per (rw, pattern), the knee, fio agreement, how it was measured."""
    lines = [result.get("label", "I/O sweep"), ""]
    points = result.get("points") or []
    primary = [p for p in points if p["engine"] == ("built-in" if result.get("engine") == "both"
                                                     else result.get("engine"))]
    for key, entry in (result.get("heatmap") or {}).items():
        lines.append(f"{key} (MB/s; best over readers) — queue depth across, block size down")
        lines.append(f"{'':>8} " + " ".join(f"{'QD ' + str(x):>10}" for x in entry["x"]))
        for y, row in zip(entry["y"], entry["mb_s"], strict=False):
            cells = " ".join(f"{'—' if v is None else f'{v:,.1f}':>10}" for v in row)
            lines.append(f"{_size(y):>8} {cells}")
        knee = (result.get("knee") or {}).get(key)
        if knee:
            lines.append(f"  knee: {knee['text']}")
            point = knee["point"]
            lines.append(f"  at the knee: {point['iops']:,.0f} IOPS, latency p50 {_us(point['p50_us'])}, "
                         f"p99 {_us(point['p99_us'])}")
        lines.append("")
    warm = sorted({p["cache_note"] for p in primary if p["cache"] not in ("cold", "n/a")})
    if warm:
        lines.append("reads not cold: " + "; ".join(warm))
    agreement = result.get("agreement")
    if agreement and agreement.get("median") is not None:
        judged = sum(1 for r in agreement["ratios"] if r.get("comparable", True))
        verdict = "within ±10% at every point" if agreement["within_10_percent"] else "NOT within ±10% everywhere"
        lines.append(f"built-in ÷ fio: median {agreement['median']:.2f} (range {agreement['min']:.2f}–"
                     f"{agreement['max']:.2f}) over {judged} comparable points, {verdict} (one short run per "
                     "point: the bench judges agreement with repeats and an interval)")
    direct = result.get("direct") or {}
    if not direct.get("used") and direct.get("why"):
        lines.append(f"O_DIRECT not used: {direct['why']}")
    lines.append(f"engine: {result.get('engine')}" + (f" ({result['fio_version']})" if result.get("fio_version")
                                                       else ""))
    lines.append(f"method: {result.get('method', '')}")
    return lines


def parse_size(text: str, flag: str) -> int:
    """"64k" → 65536, "1m" → 1048576, "4096" → 4096 (binary units); StorageError naming `flag` otherwise."""
    match = re.fullmatch(r"\s*(\d+)\s*([a-zA-Z]*)\s*", str(text))
    unit = match.group(2).lower() if match else None
    if match is None or unit not in _UNITS:
        raise StorageError(f"{flag} {text!r} is not a size", f"write sizes like 4k, 64k, 1m or 4096 for {flag}")
    return int(match.group(1)) * _UNITS[unit]


def parse_list(text: str, flag: str, sizes: bool = False) -> list[int]:
    """"1,4,16" → [1, 4, 16]; with sizes, "4k,1m" → [4096, 1048576]."""
    items = [item for item in str(text).split(",") if item.strip()]
    if not items:
        raise StorageError(f"{flag} is empty", f"give a comma-separated list, e.g. {flag} "
                           f"{'4k,64k,1m' if sizes else '1,4,16'}")
    if sizes:
        return [parse_size(item, flag) for item in items]
    try:
        return [int(item) for item in items]
    except ValueError as exc:
        raise StorageError(f"{flag} {text!r} is not a list of whole numbers",
                           f"give a comma-separated list, e.g. {flag} 1,4,16") from exc


# ---- Private API
def _size(size: int) -> str:
    from engines.storage.knee import size_text

    return size_text(size)


def _us(value: float | None) -> str:
    if value is None:
        return "—"
    return f"{value / 1000:.3g} ms" if value >= 1000 else f"{value:.3g} µs"
