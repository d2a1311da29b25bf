"""A run's stability verdict and the machine noise behind it, in words, for every surface that shows a summary
(the CLI, the summary card, Markdown). Qt-free.

The verdict comes from console.analysis.drift (stored under summary.validity.stability): "stable", "jittery
machine (noise 15%), no drift", "drift: latency rose 40% over the run" or "unsteady: …". When the machine's noise
floor is known it is stated beside the run's figures, because an interval computed from one run's iterations says
nothing about the window-to-window jitter of the machine it ran on.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["stability_of", "verdict_text", "noise_text", "stability_line", "age_text"]


def stability_of(summary: Mapping[str, Any] | None) -> Mapping[str, Any]:
    """summary.validity.stability, or {} for a summary without one (an older run, no iterations)."""
    validity = (summary or {}).get("validity")
    stability = validity.get("stability") if isinstance(validity, Mapping) else None
    return stability if isinstance(stability, Mapping) else {}


def verdict_text(summary: Mapping[str, Any] | None) -> str | None:
    """"jittery machine (noise 15%), no drift" — the drift module's one-line answer; None before it existed."""
    text = stability_of(summary).get("text")
    return str(text) if text else None


def noise_text(summary: Mapping[str, Any] | None) -> str | None:
    """"machine noise 15% between windows" — what to read beside any interval of the run; None when the noise
    floor was not measured."""
    noise = stability_of(summary).get("noise")
    if not isinstance(noise, (int, float)):
        return None
    return f"machine noise {noise:.0%} between windows"


def stability_line(summary: Mapping[str, Any] | None) -> str | None:
    """The whole stability answer for a text report: verdict · last windows' spread against what was allowed ·
    where the noise floor came from. None for a summary without a drift verdict."""
    stability = stability_of(summary)
    verdict = verdict_text(summary)
    if verdict is None:
        return None
    parts = [verdict]
    spread, allowance = stability.get("spread"), stability.get("allowance")
    typical, tolerance = stability.get("typical_spread"), stability.get("tolerance")
    k = stability.get("windows_compared")
    last = f"last {k} {spread:.0%}" if isinstance(spread, (int, float)) else None
    if stability.get("noise") is not None and isinstance(typical, (int, float)) and \
            isinstance(allowance, (int, float)):
        # with a noise floor the verdict is on the typical spread; the last k windows are one draw of it
        parts.append(f"{k} windows in a row typically {typical:.0%} apart (allowed {allowance:.0%})"
                     + (f", {last}" if last else ""))
    elif last and isinstance(allowance if allowance is not None else tolerance, (int, float)):
        # no noise floor (allowance = tolerance), or a run stored before the typical spread was: the last k rule
        allowed = allowance if allowance is not None else tolerance
        parts.append(f"last {k} windows {spread:.0%} apart (allowed {allowed:.0%})")
    floor = stability.get("noise_floor")
    if isinstance(floor, Mapping) and isinstance(floor.get("window_s"), (int, float)):
        source = floor.get("source") or ("quick measurement" if floor.get("quick") else "machine card")
        age = floor.get("age_s")
        if isinstance(age, (int, float)) and age >= 0:
            source += f", {age_text(age)} old"
        wander = stability.get("wander")
        moved = f"; its halves moved up to {wander:.0%}" if isinstance(wander, (int, float)) else ""
        parts.append(f"noise floor from {floor['window_s']:g}-s windows of a reference kernel ({source}{moved})")
    elif stability.get("noise") is None:
        parts.append("noise floor not measured (labconsole machine measures it)")
    return " · ".join(parts)


def age_text(seconds: float) -> str:
    """"40 s", "12 min", "3.0 h" or "5 days": a floor's age, stated beside it."""
    if seconds >= 2 * 86400:
        return f"{seconds / 86400:.0f} days"
    return _age(seconds)


def _age(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"
