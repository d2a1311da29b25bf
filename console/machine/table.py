"""A machine card as rows of ceilings with units, spread and method: what `labconsole machine` prints and the
Machine page shows. Qt-free, so the command line and the window say the same thing in the same words.
"""

from __future__ import annotations

from typing import Any

MISSING = "—"
# (dotted key into the card, label, unit kind); precisions not listed here are added after fp32.
ROWS: tuple[tuple[str, str, str], ...] = (
    ("peak_flops.fp32", "Peak FLOP/s fp32", "flops"),
    ("peak_flops.fp16", "Peak FLOP/s fp16", "flops"),
    ("peak_flops.bf16", "Peak FLOP/s bf16", "flops"),
    ("memory_bandwidth_gbs", "Memory bandwidth", "gbs"),
    ("device_memory_bandwidth_gbs", "Device memory bandwidth", "gbs"),
    ("compute_thread_gain", "Gain from 2nd thread, GEMM", "ratio"),
    ("stream_thread_gain", "Gain from 2nd thread, memory", "ratio"),
    ("h2d_gbs.pinned", "Host→device, pinned", "gbs"),
    ("h2d_gbs.pageable", "Host→device, pageable", "gbs"),
    ("call_floor_us.torch", "Per-call floor, torch", "us"),
    ("call_floor_us.onnxruntime", "Per-call floor, onnxruntime", "us"),
    ("storage_read_gbs", "Storage sequential read", "gbs"),
    ("caches.l1d", "L1d cache (per core)", "bytes"),
    ("caches.l2", "L2 cache", "bytes"),
    ("caches.l3", "L3 cache (per instance)", "bytes"),
    ("llc_bytes", "Last-level cache, total", "bytes"),
    ("noise_floor.spread", "Noise floor (window jitter)", "fraction"),
)
_METHOD_OF = {"caches": "caches", "llc_bytes": "caches", "noise_floor": "noise_floor"}
_NO_NOISE_FLOOR = "this card predates the noise floor: measure a new one (labconsole machine --refresh)"
_NO_THREAD_GAIN = ("this card predates the thread gains (rate at 2 threads ÷ at 1): measure a new one "
                   "(labconsole machine --refresh)")


# ---- Public API
def row_keys(cards: list[dict[str, Any]]) -> list[tuple[str, str, str]]:
    """The rows to show for these cards: the fixed ones, plus any other precision a card measured."""
    known = {key for key, _, _ in ROWS}
    extra = sorted({f"peak_flops.{p}" for card in cards for p in (card.get("peak_flops") or {})} - known)
    rows = list(ROWS)
    for key in reversed(extra):
        rows.insert(1, (key, f"Peak FLOP/s {key.split('.', 1)[1]}", "flops"))
    return rows


def ceiling_rows(card: dict[str, Any], keys: list[tuple[str, str, str]] | None = None) -> list[dict[str, Any]]:
    """One row per ceiling: key, label, value, text (with unit), spread (text), method, reason (why it is missing;
    "" for a figure the target does not have, such as fp16 on a CPU)."""
    rows = []
    for key, label, kind in keys or row_keys([card]):
        value = lookup(card, key)
        spread = (card.get("spread") or {}).get(key)
        reason = _reason(card, key) if value is None else ""
        text = format_value(value, kind) if value is not None else "not available"
        if key == "storage_read_gbs" and value is not None and card.get("storage"):
            text += f" ({card['storage'].get('state', '?')})"
            reason = "; ".join(filter(None, (card["storage"].get("reason", ""), repeatability_text(spread))))
        if key == "noise_floor.spread":
            text, reason = _noise_floor(card, text, reason)
        if key.endswith("_thread_gain") and key not in card:
            reason = _NO_THREAD_GAIN
        rows.append({"key": key, "label": label, "value": value, "text": text,
                     "spread": format_spread(spread, kind), "method": _method(card, key), "reason": reason,
                     "noise": ((spread or {}).get("note") or "") if value is not None else ""})
        if key == "storage_read_gbs" and rows[-1]["noise"]:
            rows[-1]["noise_label"] = _storage_noise_label(card, spread)
    return rows


def repeatability_text(spread: dict[str, Any] | None) -> str:
    """The storage read's repeatability in one line (issue 21 item 7): "repeatable: 95% interval ±6.1% (goal
    ±10%) after 9 reads" — or "" when it was not (the noise note then says why) or was not repeated."""
    if not spread or not spread.get("within_goal") or spread.get("half_width") is None:
        return ""
    return (f"repeatable: 95% interval ±{spread['half_width'] * 100:.1f}% (goal ±{spread['goal'] * 100:g}%) after "
            f"{spread['n']} reads")


def lookup(card: dict[str, Any], key: str) -> Any:
    """The card's value at a dotted key ("peak_flops.fp32"), None when absent."""
    value: Any = card
    for part in key.split("."):
        if not isinstance(value, dict):
            return None
        value = value.get(part)
    return value


def format_value(value: float | int | None, kind: str) -> str:
    """A ceiling with its unit at a readable scale: 41.2 GFLOP/s, 5.31 GB/s, 21.9 µs, 8 MiB, ×1.93 (a ratio)."""
    if value is None:
        return MISSING
    if kind == "flops":
        return _scaled(value, "FLOP/s", ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")))
    if kind == "gbs":
        return _scaled(value * 1e9, "B/s", ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")))
    if kind == "fraction":
        return f"{value * 100:.1f}%"
    if kind == "ratio":
        return f"×{_three(value)}"
    if kind == "us":
        return f"{_three(value)} µs"
    if kind == "bytes":
        for size, unit in ((1024 ** 3, "GiB"), (1024 ** 2, "MiB"), (1024, "KiB")):
            if value >= size:
                return f"{_three(value / size)} {unit}"
        return f"{int(value)} B"
    return _three(value)


def format_spread(spread: dict[str, Any] | None, kind: str) -> str:
    """"37.3–41.8 GFLOP/s, cv 5.7%, n=5" (both ends on one scale) — or "" for a figure that is not repeated.
    A figure repeated until precise (engines/machine/repeat.py) shows its median's 95% interval instead of min–max:
    "39.6–40.3 GFLOP/s (95% CI, ±0.9%), cv 2.1%, n=23"."""
    if not spread:
        return ""
    cv = spread.get("cv")
    cv_text = "cv —" if cv is None else f"cv {cv * 100:.1f}%"
    interval = spread.get("interval")
    ends = interval if interval and len(interval) == 2 else (spread["min"], spread["max"])
    low, high = format_value(ends[0], kind), format_value(ends[1], kind)
    low_number, _, low_unit = low.partition(" ")
    if low_unit and high.endswith(f" {low_unit}"):
        low = low_number
    if interval and spread.get("half_width") is not None:
        level = spread.get("level") or 0.95
        return f"{low}–{high} ({level * 100:.0f}% CI, ±{spread['half_width'] * 100:.1f}%), {cv_text}, n={spread['n']}"
    return f"{low}–{high}, {cv_text}, n={spread['n']}"


def repeats_text(card: dict[str, Any]) -> str:
    """How the card's figures were repeated: "5" for a card of fixed repeats; "≥ 5, until ±5% (≤ 10 s each)" for
    one repeated until precise."""
    precision = card.get("precision")
    if not precision:
        return str(card.get("repeats", "?"))
    return (f"≥ {card.get('repeats', '?')}, until ±{precision.get('goal', 0) * 100:g}% "
            f"(≤ {precision.get('cap_s', 0):g} s each)")


def link_rows(card: dict[str, Any]) -> list[dict[str, Any]]:
    """The card's bandwidth matrix (card["links"], engines/topology/bandwidth.py) as rows: id, kind, label, value,
    text, spread, theoretical (text: "of 31.5 GB/s, 77%" or why there is no rate), method, reason (why the path
    was not measured), noise (why its interval stayed wide)."""
    links = card.get("links")
    if not isinstance(links, dict):
        return []
    rows = []
    for entry in links.get("entries") or []:
        value = entry.get("median_gbs")
        spread = entry.get("spread") or None
        if spread:
            spread = {"min": spread.get("min"), "max": spread.get("max"), "cv": spread.get("cv"),
                      "n": spread.get("repeats"), "interval": spread.get("interval_95"),
                      "half_width": spread.get("half_width"), "level": 0.95}
        theoretical = entry.get("theoretical_gbs")
        if theoretical is None:
            theory = f"theoretical rate: not available ({entry.get('theoretical_not_available') or 'not known'})"
        elif entry.get("efficiency") is not None:
            theory = f"of {format_value(theoretical, 'gbs')} theoretical, {entry['efficiency'] * 100:.0f}%"
        else:
            theory = f"theoretical {format_value(theoretical, 'gbs')}"
        rows.append({"id": entry.get("id"), "kind": entry.get("kind"), "label": entry.get("label") or entry.get("id"),
                     "value": value, "text": format_value(value, "gbs") if value is not None else "not available",
                     "spread": format_spread(spread, "gbs") if value is not None else "", "theoretical": theory,
                     "links": ", ".join(entry.get("link_ids") or []), "method": entry.get("method") or "",
                     "reason": entry.get("not_available") or "",
                     "noise": ((entry.get("spread") or {}).get("note") or "") if value is not None else ""})
    return rows


def link_lines(card: dict[str, Any]) -> list[str]:
    """The bandwidth matrix as text lines for `labconsole machine`: each path's figure, spread, theoretical rate,
    links crossed and method; then the paths and facts that are not available and why."""
    links = card.get("links")
    if not isinstance(links, dict):
        reason = (card.get("not_available") or {}).get("links")
        return ["", f"links: not available ({reason})"] if reason else []
    lines = ["", f"{'link (bandwidth matrix)':44} {'GB/s':12} spread (median's 95% interval, cv, n)"]
    missing = [f"  {what}: {why}" for what, why in (links.get("not_available") or {}).items()]
    for row in link_rows(card):
        if row["value"] is None:
            missing.append(f"  {row['label']}: {row['reason']}")
            continue
        lines.append(f"{row['label'][:44]:44} {row['text']:12} {row['spread']}")
        lines.append(f"{'':45}{row['theoretical']}" + (f"; crosses {row['links']}" if row["links"] else ""))
        if row["method"]:
            lines.append(f"{'':45}{row['method']}")
        if row["noise"]:
            lines.append(f"{'':45}noise: {row['noise']}")
    if missing:
        lines += ["links not available:", *missing]
    return lines


def card_title(card: dict[str, Any]) -> str:
    """"vm · cpu" — a card's host and target, the column heading when several are compared."""
    return f"{card.get('host') or '?'} · {card.get('target') or '?'}"


# ---- Private API
def _noise_floor(card: dict[str, Any], text: str, reason: str) -> tuple[str, str]:
    """The noise floor's row: "7.1% (worst 12%) between 1-s windows", or why a card has none."""
    floor = card.get("noise_floor")
    if not isinstance(floor, dict):
        return text, reason or _NO_NOISE_FLOOR
    worst = floor.get("max_spread")
    worst_text = f", worst {worst * 100:.0f}%" if isinstance(worst, (int, float)) else ""
    return f"{text} over {floor.get('k', 3)} × {floor.get('window_s', 0):g}-s windows{worst_text}", reason


def _storage_noise_label(card: dict[str, Any], spread: dict[str, Any] | None) -> str:
    """The short flag under a storage figure whose interval stayed wide: the device's own variation when the card
    measured it beyond the goal, else the plain "wider than the goal" flag."""
    variation = (card.get("storage") or {}).get("device_variation") or {}
    goal = (spread or {}).get("goal") or 0.0
    if isinstance(variation.get("cv"), (int, float)) and variation["cv"] > goal:
        return f"interval wider than ±{goal * 100:g}%: the device itself varied {variation['cv'] * 100:.0f}%"
    return f"interval wider than ±{goal * 100:g}%: varied between reads"


def _reason(card: dict[str, Any], key: str) -> str:
    missing = card.get("not_available") or {}
    head = key.split(".", 1)[0]
    return missing.get(key) or missing.get(head) or missing.get(_METHOD_OF.get(key, ""), "")


def _method(card: dict[str, Any], key: str) -> str:
    methods = card.get("method") or {}
    return methods.get(key) or methods.get(_METHOD_OF.get(key.split(".", 1)[0], ""), "")


def _scaled(value: float, unit: str, prefixes: tuple[tuple[float, str], ...]) -> str:
    for size, prefix in prefixes:
        if abs(value) >= size:
            return f"{_three(value / size)} {prefix}{unit}"
    return f"{_three(value)} {unit}"


def _three(x: float) -> str:
    """Three significant digits, no exponent (a figure with its spread says no more)."""
    if x == 0:
        return "0"
    if abs(x) >= 100:
        return f"{x:,.0f}"
    return f"{x:.3g}"


def view_columns(cards: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[tuple[str, str]]]:
    """Cards as the Machine page's columns (title, header, cells by key) and the (key, label) rows they share."""
    keys = row_keys(cards)
    columns = []
    for card in cards:
        quick = " (quick sizes: not ceilings)" if card.get("quick") else ""
        measured = str(card.get("measured_at") or "?").replace("T", " ").removesuffix("Z")
        columns.append({"title": card_title(card),
                        "header": {"device": card.get("device_name") or "?", "measured_at": measured,
                                   "repeats": f"{repeats_text(card)}{quick}"},
                        "cells": {row["key"]: row for row in ceiling_rows(card, keys)}})
    return columns, [(key, label) for key, label, _ in keys]
