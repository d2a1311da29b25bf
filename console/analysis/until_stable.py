"""A run measured until stable, as the console reads it: the windows it is judged on, and what it says.

The engine (engines.scenarios._stability) adds windows of `duration / rules.windows` seconds past the duration
until the last `stable_windows` agree, or the cap; its `result` carries an `until_stable` block. The console
judges such a run on those same windows — all of them, not the usual `rules.windows` cut of the longer run —
so "stable after 14 windows" and the validity verdict speak of one thing. Qt-free, plain dicts.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from console.analysis.validity import ValidityRules


# ---- Public API
def block(result: dict[str, Any] | None) -> dict[str, Any] | None:
    """The `until_stable` block of a `result` event (None for a fixed-duration run or an unreadable block)."""
    found = (result or {}).get("until_stable")
    if not isinstance(found, dict) or not isinstance(found.get("windows"), int):
        return None
    return {**found, "text": text(found)}


def judging_rules(rules: ValidityRules, found: dict[str, Any] | None) -> ValidityRules:
    """The rules to cut the run by: for an until-stable run, as many windows as the engine measured (each the
    width the engine used), else the rules as they are."""
    windows = (found or {}).get("windows")
    if not isinstance(windows, int) or windows < max(2, rules.stable_windows) or windows == rules.windows:
        return rules
    try:
        return dataclasses.replace(rules, windows=windows).validate()
    except (TypeError, ValueError):
        return rules


def progress_text(stabilising: dict[str, Any]) -> str:
    """While a run measures past its duration: "until stable: 12 windows, spread 14%, at most 20 s"."""
    parts = [f"{stabilising.get('windows')} windows"]
    spread = stabilising.get("spread")
    if isinstance(spread, (int, float)) and spread != float("inf"):
        parts.append(f"spread {spread:.0%}")
    if isinstance(stabilising.get("cap_s"), (int, float)):
        parts.append(f"at most {stabilising['cap_s']:g} s")
    return "until stable: " + ", ".join(parts)


def text(found: dict[str, Any]) -> str:
    """"stable after 11 windows (0.5 s each), spread 6%" or "not stable after the 20 s cap, spread 18%"."""
    windows = found.get("windows")
    width = found.get("window_s")
    each = f" ({width:.3g} s each)" if isinstance(width, (int, float)) else ""
    spread = found.get("spread")
    spread_text = f"spread {spread:.0%}" if isinstance(spread, (int, float)) and spread != float("inf") else \
        "spread not available (a window without iterations)"
    tolerance = found.get("tolerance")
    within = f" (tolerance {tolerance:.0%})" if isinstance(tolerance, (int, float)) else ""
    if found.get("stable"):
        return f"stable after {windows} windows{each}, {spread_text}{within}"
    ended = found.get("ended")
    if ended == "cap":
        cap = found.get("cap_s")
        cap_text = f"the {cap:g} s cap" if isinstance(cap, (int, float)) else "the cap"
        return (f"not stable after {cap_text} ({windows} windows{each}), {spread_text} over the last "
                f"{found.get('compared', 3)}{within}")
    why = {"cancelled": "stopped before it was stable", "max_queries": "reached --max-queries before it was stable"}
    return f"{why.get(str(ended), 'ended before it was stable')} ({windows} windows{each}), {spread_text}{within}"
