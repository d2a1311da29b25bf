"""Regressions in the history: change points of each configuration's series, named by the runs around them.

A series is the completed, valid runs of one fingerprint, oldest first (console.analysis.fingerprint); each
run contributes its median latency (summary latency p50, ms). A regression is a change point
(console.analysis.changepoints) where the median went up by at least the threshold; one that went down is an
improvement, reported only when asked for. Qt-free; reads the history, never writes it.
"""

from __future__ import annotations

from typing import Any

from console.analysis import changepoints


def run_median_ms(run: dict[str, Any]) -> float | None:
    """The figure a series follows: the run's median latency in ms (None when it has none)."""
    value = run.get("p50_ms")
    if value is None:
        value = ((run.get("summary") or {}).get("latency_ms") or {}).get("p50")
    return float(value) if isinstance(value, (int, float)) and value > 0 else None


def change_points(runs: list[dict[str, Any]], min_effect: float = changepoints.MIN_EFFECT,
                  alpha: float = changepoints.ALPHA) -> list[dict[str, Any]]:
    """Change points of a series (runs oldest first), each with the runs on either side:
    {index, first_bad_run, last_good_run, first_bad_at, before, after, ratio, ci95, p_value, direction}."""
    measured = [(run, median) for run in runs if (median := run_median_ms(run)) is not None]
    if len(measured) < 2 * changepoints.MIN_SIZE:
        return []
    points = changepoints.detect([median for _, median in measured], min_effect=min_effect, alpha=alpha)
    named = []
    for point in points:
        bad, good = measured[point["index"]][0], measured[point["index"] - 1][0]
        named.append({**point, "first_bad_run": bad["run_id"], "last_good_run": good["run_id"],
                      "first_bad_at": bad.get("started_at"),
                      "direction": "slower" if point["direction"] == "up" else "faster"})
    return named


def find(store: Any, since: str | None = None, threshold: float = changepoints.MIN_EFFECT,
         alpha: float = changepoints.ALPHA, include_improvements: bool = False) -> list[dict[str, Any]]:
    """Every configuration's regressions (and improvements when asked), newest first:
    {configuration, fingerprint, before, after, ratio, ci95, p_value, first_bad_run, last_good_run, first_bad_at,
    direction, runs}. `since`: only steps whose first bad run started on or after this ISO date."""
    found = []
    for config in store.configurations():
        series = [run for run in store.series(config["fingerprint"]) if run.get("valid")]
        for point in change_points(series, threshold, alpha):
            if point["direction"] == "faster" and not include_improvements:
                continue
            if since and (point["first_bad_at"] or "") < since:
                continue
            found.append({"configuration": config["configuration"], "fingerprint": config["fingerprint"],
                          "runs": len(series), **{key: point[key] for key in (
                              "before", "after", "ratio", "ci95", "p_value", "first_bad_run", "last_good_run",
                              "first_bad_at", "direction")}})
    return sorted(found, key=lambda item: item["first_bad_at"] or "", reverse=True)
