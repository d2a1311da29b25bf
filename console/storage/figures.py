"""A stored storage run's headline figures, and two runs' figures side by side, for `compare` and the report.

Why beside the latency comparison: a storage run's latencies are its reads (or steps), and their ratio says
whether the reads got slower; the figures say what the storage architect asked (AU, MB/s, GB/s, seconds). Each
figure's direction comes from its unit in its name (the contract: "au_percent", "read_mb_s", "p99_read_ms",
"save_gb_s" …): throughput, IOPS, percentages and counts are better higher; durations and latencies better
lower; anything else is shown without a better side. A ratio is only given where both figures are numbers and
A's is not zero. Qt-free, plain dicts.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from console.storage.runs import storage_kind

HIGHER = ("mb_s", "gb_s", "_gbs", "gib_s", "mib_s", "iops", "percent", "per_s", "samples_s", "accelerators",
          "max_passing", "hit_rate")
LOWER = ("_ms", "_s", "_us", "_ns", "seconds")

__all__ = ["direction", "figures_of", "compare_figures", "figure_rows", "method_of", "comparison_blocks"]


def direction(name: str) -> str | None:
    """"higher" or "lower" (which is better) from the figure's name and unit; None when the name does not say."""
    low = name.lower()
    if "spread" in low or "lost" in low or "overhead" in low:
        return "lower"
    if any(key in low for key in HIGHER):
        return "higher"
    if low.endswith(LOWER) or "latency" in low:
        return "lower"
    return None


def figures_of(run: Mapping[str, Any]) -> dict[str, Any]:
    """The figures a stored storage run keeps ({} for any other run)."""
    summary = run.get("summary") or {}
    figures = summary.get("figures") or (summary.get("storage_bench") or {}).get("figures") or {}
    return dict(figures) if isinstance(figures, dict) else {}


def method_of(run: Mapping[str, Any]) -> str:
    bench = (run.get("summary") or {}).get("storage_bench") or {}
    return str(bench.get("method") or "not stated")


def compare_figures(run_a: Mapping[str, Any], run_b: Mapping[str, Any]) -> dict[str, Any]:
    """B's figures against A's: {kinds [a, b], same_kind, rows [{name, a, b, ratio, better, change}], note}.
    `change` says it in words ("B 12% better"), or why there is no ratio."""
    a, b = figures_of(run_a), figures_of(run_b)
    kinds = [storage_kind(run_a), storage_kind(run_b)]
    rows = []
    for name in list(dict.fromkeys([*a, *b])):
        va, vb = a.get(name), b.get(name)
        better = direction(name)
        ratio = vb / va if _number(va) and _number(vb) and va != 0 else None
        rows.append({"name": name, "a": va, "b": vb, "ratio": ratio, "better": better,
                     "change": _change(name, va, vb, ratio, better)})
    note = "" if kinds[0] == kinds[1] else (f"A is a {kinds[0] or 'non-storage'} run and B a "
                                           f"{kinds[1] or 'non-storage'} run: only figures of the same name "
                                           "are set side by side")
    return {"kinds": kinds, "same_kind": kinds[0] == kinds[1], "rows": rows, "note": note,
            "cache_state": [(run_a.get("summary") or {}).get("cache_state"),
                            (run_b.get("summary") or {}).get("cache_state")]}


def figure_rows(figures: Mapping[str, Any]) -> list[list[str]]:
    """[[name, value]] as people read them: the unit spelled out from the name, 'not available' for None."""
    return [[pretty_name(name), format_value(value)] for name, value in figures.items()]


def pretty_name(name: str) -> str:
    text = str(name)
    for suffix, unit in (("_mb_s", " (MB/s)"), ("_gb_s", " (GB/s)"), ("_gbs", " (GB/s)"), ("_ms", " (ms)"),
                         ("_us", " (µs)"),
                         ("_percent", " (%)"), ("_min", " (min)"), ("_s", " (s)"), ("_bytes", " (bytes)"),
                         ("_iops", " (IOPS)"), ("_gb", " (GB)"), ("_mb", " (MB)")):
        if text.endswith(suffix):
            return text[: -len(suffix)].replace("_", " ") + unit
    return text.replace("_", " ")


def format_value(value: Any) -> str:
    if value is None:
        return "not available"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:,.4g}" if math.isfinite(value) else "not available"
    return str(value)


# ---- Private API
def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _change(name: str, va: Any, vb: Any, ratio: float | None, better: str | None) -> str:
    if va is None or vb is None:
        side = "A" if va is None else "B"
        return f"not available in {side}" if (va is None) != (vb is None) else "not available in either"
    if ratio is None:
        return "no ratio (A is 0 or not a number)"
    if abs(ratio - 1.0) < 1e-9:
        return "the same"
    if better is None:
        return f"B is {ratio:.3g}× A"
    improved = ratio > 1.0 if better == "higher" else ratio < 1.0
    size = abs(ratio - 1.0) if better == "higher" else abs(1.0 - ratio)
    return f"B {size:.0%} {'better' if improved else 'worse'} ({ratio:.3g}× A, {better} is better)"


def comparison_lines(compared: Mapping[str, Any]) -> list[str]:
    """`compare`'s text for two storage runs' figures: one line a figure, and the note when kinds differ."""
    lines = ["storage figures (B against A):"]
    if compared.get("note"):
        lines.append(f"  {compared['note']}")
    cache = compared.get("cache_state") or [None, None]
    if cache[0] != cache[1]:
        lines.append(f"  the page cache differed: A {cache[0] or '?'}, B {cache[1] or '?'} (a warm read is not a "
                     "storage measurement)")
    for row in compared.get("rows") or []:
        lines.append(f"  {pretty_name(row['name'])}: {format_value(row['a'])} → {format_value(row['b'])}  "
                     f"({row['change']})")
    return lines


def comparison_blocks(views: list[Any], block: Any, with_note: bool = False) -> list[Any]:
    """A report section's closing blocks: each later run against the first, figure by figure (a paragraph and a
    table per pair with figures in common; `with_note` puts compare_figures' note in the paragraph)."""
    out: list[Any] = []
    first = views[0] if views else None
    for view in views[1:]:
        compared = compare_figures(first.run, view.run)
        rows = [[pretty_name(row["name"]), format_value(row["a"]), format_value(row["b"]), row["change"]]
                for row in compared["rows"]]
        if rows:
            note = f" ({compared['note']})" if with_note and compared["note"] else ""
            out.append(block("paragraph", f"Run {view.letter} against run {first.letter}, figure by figure{note}:"))
            out.append(block("table", headers=["Figure", first.letter, view.letter, "Change"], rows=rows))
    return out
