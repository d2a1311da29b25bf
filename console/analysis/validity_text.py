"""Which validity rules judged a run, in words, so the texts that say VALID name the rules that applied. Qt-free.

A scenario declares its rules on its registration (engines.scenarios.base: ScenarioInfo.validity). One judged on
its latency bound (the server scenario) is judged as LoadGen judges a server run (console.analysis.validity): its
latency bound at the percentile with no query dropped, early stopping, duration and count; stability is reported
but never fails it. Every other scenario is judged on duration, count and stability. Both need enough samples
behind each reported percentile.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from engines import scenarios
from engines.scenarios.base import LATENCY_BOUND

__all__ = ["is_server", "latency_bound_rules", "rules_judged"]


def latency_bound_rules(scenario: str | None) -> bool:
    """The scenario named is judged on its latency bound, as its registration declares (the server scenario);
    False for any other, and for a name no scenario has."""
    found = scenarios.declared(scenario)
    return found is not None and found.validity == LATENCY_BOUND


def is_server(summary: Mapping[str, Any], scenario: str | None = None) -> bool:
    """The run was judged by the server rules: as its summary recorded (validity.stability.judged is False only
    for a run judged on its latency bound), else by `scenario` (the run's spec) for a summary that predates that
    record."""
    judged = _mapping(_mapping(summary.get("validity")).get("stability")).get("judged")
    if isinstance(judged, bool):
        return not judged
    return latency_bound_rules(scenario)


def rules_judged(summary: Mapping[str, Any], scenario: str | None = None) -> str:
    """The rules a run was judged on, as "<whose rules>: <rule>, <rule>, …" (e.g. "LoadGen-style rules: duration,
    count, stability, samples behind each percentile")."""
    backing = "samples behind each percentile"
    if not is_server(summary, scenario):
        return f"LoadGen-style rules: duration, count, stability, {backing}"
    bound = _mapping(_mapping(summary.get("validity")).get("latency_bound"))
    if not isinstance(bound.get("bound_ms"), (int, float)):
        return f"LoadGen's server rules, no latency bound given: duration, count, {backing}"
    return (f"LoadGen's server rules: {bound.get('percentile') or 'p99'} within the {bound['bound_ms']:g} ms latency "
            f"bound with no query dropped, early stopping, duration, count, {backing}")


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}
