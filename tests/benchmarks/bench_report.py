"""What `make bench` leaves behind: bench-results.json (figures, intervals, goals, verdicts and the machine they
were measured on) and the table printed at the end. Qt-free and engine-free: it reads versions from package
metadata, never by importing torch or onnxruntime.
"""

from __future__ import annotations

import json
import os
import platform
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path
from typing import Any

from bench_verdict import FAIL, PASS, UNDECIDED, Result, fmt

SCHEMA = 1


# ---- Public API
def machine_facts() -> dict[str, Any]:
    """The facts that make two runs of `make bench` comparable (or explain why they are not)."""
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return {
        "cpu_model": cpu_model(),
        "cores": os.cpu_count(),
        "usable_cores": usable,
        "load_average": load_average(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "torch": _version("torch"),
        "onnxruntime": _version("onnxruntime", "onnxruntime-gpu"),
        "pyside6": _version("PySide6_Essentials", "PySide6"),
        "date": datetime.now(timezone.utc).replace(microsecond=0).isoformat(),
    }


def cpu_model() -> str:
    """The CPU's marketing name (/proc/cpuinfo on Linux; platform.processor() elsewhere)."""
    try:
        with open("/proc/cpuinfo") as handle:
            for line in handle:
                if line.lower().startswith(("model name", "hardware", "cpu model")):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown"


def load_average() -> list[float] | None:
    """1-, 5- and 15-minute load averages: a busy machine is the usual reason for an undecided verdict."""
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except (AttributeError, OSError):
        return None


def document(results: list[dict[str, Any]], skipped: list[dict[str, str]], machine_start: dict[str, Any],
             wall_s: float) -> dict[str, Any]:
    """The content of bench-results.json; `results` are Result.to_json() dicts with their test id added."""
    counts = {v: sum(r["verdict"] == v for r in results) for v in (PASS, FAIL, UNDECIDED)}
    return {"schema": SCHEMA, "machine": machine_start, "load_average_at_end": load_average(),
            "wall_s": round(wall_s, 1), "summary": {**counts, "skipped": len(skipped)},
            "benchmarks": results, "skipped": skipped}


def write(path: Path, doc: dict[str, Any]) -> None:
    """Write atomically: a reader never sees half a file, and an old file survives a crash while writing."""
    partial = path.with_name(path.name + ".partial")
    partial.write_text(json.dumps(doc, indent=2, ensure_ascii=False) + "\n")
    os.replace(partial, path)


def table(results: list[Result], skipped: list[dict[str, str]], machine: dict[str, Any]) -> list[str]:
    """A readable table: one line per figure, then the reason for each verdict that is not a plain pass."""
    rows = [("benchmark", "value", "95% interval", "goal", "verdict")]
    for r in results:
        interval = "—" if r.interval is None else f"{fmt(r.interval[0])}–{fmt(r.interval[1])}"
        rows.append((r.name, fmt(r.value), interval, r.goal.text(), r.verdict.upper()))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    notes = [f"  {r.name}: {r.verdict} — {r.reason}" for r in results if r.verdict != PASS]
    notes += [f"  {s['test']}: skipped — {s['reason']}" for s in skipped]
    if notes:
        lines += ["", "why:"] + notes
    load = machine.get("load_average")
    lines += ["", f"machine: {machine['cpu_model']}, {machine['usable_cores']} usable of {machine['cores']} cores, "
                  f"load average {load} at the start; python {machine['python']}, torch {machine['torch']}, "
                  f"onnxruntime {machine['onnxruntime']}; {machine['date']}"]
    return lines


# ---- Private API
def _version(*names: str) -> str | None:
    for name in names:
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return None
