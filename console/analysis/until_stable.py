"""A run measured until stable, as the console reads it: the windows it is judged on, and what it says.

The engine (engines.scenarios._stability) adds windows of `duration / rules.windows` seconds past the duration
until the last `stable_windows` agree within the tolerance — or, with the machine's noise floor known, until their
typical spread is within the allowance the verdict uses (rules_file.aim) — or the cap; its `result` carries an
`until_stable` block. The console
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


def extended_from(found: dict[str, Any] | None) -> int | None:
    """The windows of one duration of an until-stable run the engine extended past it (validity's
    `base_windows`: warm-up that settled during the extension is a note, not a drift); None otherwise."""
    base, added = (found or {}).get("base_windows"), (found or {}).get("added_windows")
    if isinstance(base, int) and isinstance(added, int) and base >= 2 and added > 0:
        return base
    return None


def progress_text(stabilising: dict[str, Any]) -> str:
    """While a run measures past its duration: "until stable: 12 windows, spread 14%, at most 20 s"."""
    parts = [f"{stabilising.get('windows')} windows"]
    spread, typical = stabilising.get("spread"), stabilising.get("typical_spread")
    if isinstance(typical, (int, float)) and isinstance(stabilising.get("allowance"), (int, float)):
        parts.append(f"typical spread {typical:.0%} (allowed {stabilising['allowance']:.0%})")
    elif isinstance(spread, (int, float)) and spread != float("inf"):
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
    tolerance, allowance, typical = found.get("tolerance"), found.get("allowance"), found.get("typical_spread")
    within = f" (tolerance {tolerance:.0%})" if isinstance(tolerance, (int, float)) else ""
    compared = found.get("compared", 3)
    if isinstance(allowance, (int, float)) and isinstance(typical, (int, float)):
        # the machine's noise floor was known: judged (as the console's verdict) on the typical spread first
        spread_text = (f"typical spread of {compared} windows in a row {typical:.0%} (allowed {allowance:.0%}: the "
                       f"largest of the tolerance, twice the noise floor and its noisiest draw), last {compared}: " +
                       (f"{spread:.0%}" if isinstance(spread, (int, float)) and spread != float("inf") else "n/a"))
        within = ""
    if found.get("stable"):
        return f"stable after {windows} windows{each}, {spread_text}{within}"
    ended = found.get("ended")
    if ended == "cap":
        cap = found.get("cap_s")
        cap_text = f"the {cap:g} s cap" if isinstance(cap, (int, float)) else "the cap"
        over = "" if isinstance(allowance, (int, float)) and isinstance(typical, (int, float)) else \
            f" over the last {compared}"
        return f"not stable after {cap_text} ({windows} windows{each}), {spread_text}{over}{within}"
    why = {"cancelled": "stopped before it was stable", "max_queries": "reached --max-queries before it was stable"}
    return f"{why.get(str(ended), 'ended before it was stable')} ({windows} windows{each}), {spread_text}{within}"
