"""The report's collectives section: each collectives run's headline figures (peak busbw, small-size latency per
op), its per-size table as nccl-tests prints it (size, time, algbw, busbw), how the figures were obtained, and the
command that repeats it; for two collectives runs, their figures side by side.

Why a section of its own: a collectives run has no per-call latencies (each size has its own time), so the
generic latency tables are empty for it; what its reader asks is busbw against size and the latency at small
sizes. Qt-free, plain blocks.
"""

from __future__ import annotations

import shlex
from typing import Any

from console.collectives.runs import is_collectives_run
from console.storage.figures import compare_figures, comparison_blocks, figure_rows, format_value, pretty_name

__all__ = ["collectives_blocks", "collectives_commands", "collectives_label", "collectives_finding"]


# ---- Public API
def collectives_label(run: dict[str, Any]) -> str | None:
    """'<label> · collectives' for a collectives run, None for any other."""
    if not is_collectives_run(run):
        return None
    return " · ".join(part for part in (str(run.get("model") or "?"), "collectives", run.get("name") or "") if part)


def collectives_finding(report: Any) -> str | None:
    """The report's first sentence when every run in it is a collectives run; None otherwise."""
    views = report.runs
    if not views or not all(is_collectives_run(view.run) for view in views):
        return None
    first = views[0]
    if first.run.get("status") != "completed":
        return (f"This collectives run ({first.label}) did not complete ({first.run.get('status')}): "
                f"{first.run.get('error') or 'no cause stored'}.")
    figures = first.summary.get("figures") or {}
    peak, small = figures.get("all_reduce_peak_busbw_gbs"), figures.get("all_reduce_small_latency_us")
    text = f"{first.label}: " + (f"all-reduce peak busbw {format_value(peak)} GB/s, latency {format_value(small)} µs "
                                 "at the smallest size." if peak is not None else
                                 ", ".join(f"{pretty_name(k)} {format_value(v)}" for k, v in list(figures.items())[:4]))
    if len(views) >= 2:
        b = views[1]
        rows = [row for row in compare_figures(first.run, b.run)["rows"] if row["name"] == "all_reduce_peak_busbw_gbs"]
        if rows and rows[0]["ratio"] is not None:
            text += f" Run {b.letter}: {rows[0]['change']}."
    return text


def collectives_blocks(report: Any, block: Any) -> list[Any]:
    """The section's blocks (`block` is the report's Block class), empty when no run is a collectives run."""
    views = [view for view in report.runs if is_collectives_run(view.run)]
    if not views:
        return []
    out = [block("heading", "Collectives")]
    for view in views:
        result = view.summary.get("collectives") or {}
        if view.run.get("status") != "completed":
            out.append(block("paragraph", f"Run {view.letter} — {view.label}: {view.run.get('status')} — "
                                          f"{view.run.get('error') or 'no cause stored'}"))
            continue
        out.append(block("paragraph", f"Run {view.letter} — {view.label}: {result.get('ranks')} ranks, "
                                      f"{result.get('backend')}, placed {result.get('placement')}."))
        rows = figure_rows(view.summary.get("figures") or {})
        if rows:
            out.append(block("table", headers=["Figure", "Value"], rows=rows))
        for op, sizes in (result.get("ops") or {}).items():
            factor = (result.get("busbw_factor") or {}).get(op, "?")
            out.append(block("paragraph", f"{op} (busbw = algbw × {factor}):"))
            out.append(block("table", headers=["Size (B)", "Count", "Time (µs)", "algbw (GB/s)", "busbw (GB/s)"],
                             rows=[[str(r["size_bytes"]), str(r["count"]), f"{r['time_us']:.2f}",
                                    f"{r['algbw_gbs']:.3f}", f"{r['busbw_gbs']:.3f}"] for r in sizes]))
        out.append(block("note", f"Method: {result.get('method') or 'not stated'}"))
    return out + comparison_blocks(views, block)


def collectives_commands(run: dict[str, Any]) -> str | None:
    """The command that runs a stored collectives benchmark again, from its stored options."""
    if not is_collectives_run(run):
        return None
    options = (run.get("spec") or {}).get("scenario_options") or {}
    args = ["labconsole", "collectives"]
    flags = {"ranks": "--ranks", "backend": "--backend", "ops": "--ops", "sizes": "--sizes", "iters": "--iters",
             "warmup": "--warmup", "trials": "--trials", "rank_time": "--rank-time", "cluster": "--cluster"}
    for name, flag in flags.items():
        value = options.get(name)
        if value is None or value == "":
            continue
        args += [flag, ",".join(map(str, value)) if isinstance(value, list) else str(value)]
    return shlex.join(args)
