"""The report's storage section: each storage run's headline figures, its pass rule and page-cache state, how
the figures were obtained (the kind's own `method`), the kind's detail as a small table (feed: AU against
emulated accelerators; sweep: the knee; checkpoint: per format; cold start: per mode), and for two storage runs
their figures side by side. Plus the sentence a storage report opens with, and the command that repeats a run.

Why a section of its own: a storage run's latencies are its reads, and the generic "per call at the median"
wording would misname them; what the reader of a storage report asks is AU, MB/s, GB/s and seconds, with the
cache state that decides whether they are a storage measurement at all. Qt-free, plain blocks.
"""

from __future__ import annotations

import shlex
from typing import Any

from console.storage.figures import (
    compare_figures,
    comparison_blocks,
    figure_rows,
    format_value,
    method_of,
    pretty_name,
)
from console.storage.runs import storage_kind

__all__ = ["storage_blocks", "storage_finding", "storage_label", "storage_commands"]


# ---- Public API
def storage_label(run: dict[str, Any]) -> str | None:
    """'<label> · storage <kind>' for a storage run, None for any other."""
    kind = storage_kind(run)
    if kind is None:
        return None
    return " · ".join(part for part in (str(run.get("model") or "?"), f"storage {kind}", run.get("name") or "")
                      if part)


def storage_finding(report: Any) -> str | None:
    """The report's first sentence when every run in it is a storage run; None otherwise (the usual sentence)."""
    views = report.runs
    if not views or not all(storage_kind(view.run) for view in views):
        return None
    first = views[0]
    if len(views) == 1:
        return _run_sentence(first)
    b = views[1]
    compared = compare_figures(first.run, b.run)
    moved = [row for row in compared["rows"] if row["ratio"] is not None and row["better"]
             and abs(row["ratio"] - 1.0) >= 0.02]
    if not moved:
        figures = "no headline figure moved by 2% or more" if compared["rows"] else "neither stored figures"
    else:
        figures = "; ".join(f"{pretty_name(row['name'])} {format_value(row['a'])} → {format_value(row['b'])} "
                            f"({row['change'].split(' (')[0].replace('B ', '')})" for row in moved[:3])
    text = f"Run {b.letter} against run {first.letter} ({first.label} → {b.label}): {figures}."
    delta = report.deltas[0] if report.deltas else {}
    if delta.get("verdict"):
        text += f" Their timed reads: {delta['verdict']} — {delta.get('explanation')}"
    if compared["note"]:
        text += f" {compared['note']}."
    return text


def storage_blocks(report: Any, block: Any) -> list[Any]:
    """The section's blocks (`block` is the report's Block class), empty when no run is a storage run."""
    views = [view for view in report.runs if storage_kind(view.run)]
    if not views:
        return []
    out = [block("heading", "Storage")]
    for view in views:
        bench = view.summary.get("storage_bench") or {}
        out.append(block("paragraph", f"Run {view.letter} — {view.label}: {_state(view.run, bench)}"))
        rows = figure_rows(view.summary.get("figures") or bench.get("figures") or {})
        if rows:
            out.append(block("table", headers=["Figure", "Value"], rows=rows))
        detail = _detail(storage_kind(view.run) or "", bench)
        if detail is not None:
            out.append(block("table", headers=detail[0], rows=detail[1]))
        out.append(block("note", f"Method: {method_of(view.run)}"))
    return out + comparison_blocks(views, block, with_note=True)


def storage_commands(run: dict[str, Any]) -> str | None:
    """The command that runs a stored storage benchmark again, from its stored options (each option as its
    flag; a kind's flag may differ from its option name, so `labconsole storage KIND --help` is the check)."""
    kind = storage_kind(run)
    if kind is None:
        return None
    options = (run.get("spec") or {}).get("scenario_options") or {}
    args = ["labconsole", "storage", kind]
    for name, value in options.items():
        flag = "--" + str(name).replace("_", "-")
        if value is None or value is False:
            continue
        if value is True:
            args.append(flag)
        elif isinstance(value, list):
            args += [flag, ",".join(str(item) for item in value)]
        elif isinstance(value, dict):
            continue
        else:
            args += [flag, str(value)]
    return shlex.join(args) + "    # from the stored options; `labconsole storage " + kind + " --help` names the flags"


# ---- Private API
def _run_sentence(view: Any) -> str:
    run, summary = view.run, view.summary
    if run.get("status") != "completed":
        why = run.get("error") or summary.get("message") or "no cause stored"
        return f"This storage run ({view.label}) did not complete ({run.get('status')}): {why}."
    bench = summary.get("storage_bench") or {}
    figures = summary.get("figures") or {}
    shown = ", ".join(f"{pretty_name(name)} {format_value(value)}" for name, value in list(figures.items())[:4])
    return f"{view.label}: {shown or 'no figures stored'}. {_state(run, bench)}"


def _state(run: dict[str, Any], bench: dict[str, Any]) -> str:
    if run.get("status") != "completed":
        return f"{run.get('status')} — {run.get('error') or 'no cause stored'}"
    passed = bench.get("passed")
    verdict = {True: "passed", False: "did not pass", None: "no pass rule for this kind"}.get(passed, str(passed))
    reason = bench.get("status_reason") or ""
    cache = bench.get("cache_state") or "not stated"
    return f"{verdict}{f' ({reason})' if reason else ''}; page cache: {cache}."


def _detail(kind: str, bench: dict[str, Any]) -> tuple[list[str], list[list[str]]] | None:
    """The kind's own detail as one small table, from the keys each kind documents; None when absent."""
    if kind == "feed":
        from console.storage.charts import feed_chart

        chart = feed_chart(bench)
        threshold = chart["threshold"]
        if chart["series"]:
            return (["Emulated accelerators", "AU (%)", f"≥ threshold {format_value(threshold)}%"],
                    [[format_value(n), format_value(au), "yes" if isinstance(threshold, (int, float))
                      and au >= threshold else "no"] for n, au in chart["series"]])
    if kind == "checkpoint":
        formats = bench.get("formats") or {}
        if formats:
            return (["Format", "Save (s)", "Save (GB/s)", "Load (s)", "Load (GB/s)", "Ranks", "Spread (%)", "Cache"],
                    [[name, *(format_value((row or {}).get(key)) for key in
                              ("save_s", "save_gb_s", "load_s", "load_gb_s", "ranks", "spread_percent")),
                      str((row or {}).get("cache_state") or "—")] for name, row in formats.items()])
    if kind == "coldstart":
        stages = bench.get("stages") or []
        if stages:
            keys = ("read_s", "deserialize_s", "to_device_s", "first_inference_s")
            return (["Mode", "Read (s)", "Deserialize (s)", "To device (s)", "First inference (s)", "Total (s)"],
                    [[str(stage.get("mode")), *(format_value(stage.get(key)) for key in keys),
                      format_value(sum(stage.get(key) or 0.0 for key in keys))] for stage in stages])
    if kind == "sweep":
        knees = bench.get("knee") or {}
        if isinstance(knees, dict) and knees:
            return (["Reads / writes", "Knee"], [[str(key), str((knee or {}).get("text") or knee)
                                                 if isinstance(knee, dict) else str(knee)]
                                                for key, knee in knees.items()])
    return None
