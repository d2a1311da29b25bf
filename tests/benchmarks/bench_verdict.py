"""One rule for every benchmark's verdict, so that a noisy machine can make a benchmark undecided but never failed.

- pass: the whole 95% interval of the figure lies inside the goal;
- fail: the whole interval lies outside the goal (a real miss: no amount of noise explains it);
- undecided: the interval reaches both inside and outside the goal (or could not be measured); reported with
  the reason, never failed.

Pure logic (no Qt, no numpy): unit-tested in tests/unit/test_bench_verdict.py.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

PASS, FAIL, UNDECIDED = "pass", "fail", "undecided"


# ---- Public API
@dataclass(frozen=True)
class Goal:
    """Where a figure must lie: low ≤ value ≤ high (None: that side is open), in `unit`."""

    low: float | None = None
    high: float | None = None
    unit: str = "×"

    def __post_init__(self):
        if self.low is None and self.high is None:
            raise ValueError("a goal needs at least one bound (low, high or both)")
        if self.low is not None and self.high is not None and self.low > self.high:
            raise ValueError(f"goal bounds are reversed: low {self.low} > high {self.high}")

    @classmethod
    def at_most(cls, high: float, unit: str = "×") -> Goal:
        return cls(None, high, unit)

    @classmethod
    def at_least(cls, low: float, unit: str = "×") -> Goal:
        return cls(low, None, unit)

    @classmethod
    def within(cls, centre: float, tolerance: float, unit: str = "×") -> Goal:
        """centre ± tolerance, e.g. within(1, 0.03) for a ratio within ±3%."""
        return cls(centre - tolerance, centre + tolerance, unit)

    def contains(self, x: float) -> bool:
        return (self.low is None or x >= self.low) and (self.high is None or x <= self.high)

    def text(self) -> str:
        if self.low is None:
            return f"≤ {fmt(self.high)}{_unit(self.unit)}"
        if self.high is None:
            return f"≥ {fmt(self.low)}{_unit(self.unit)}"
        return f"{fmt(self.low)}–{fmt(self.high)}{_unit(self.unit)}"

    def to_json(self) -> dict[str, Any]:
        return {"low": self.low, "high": self.high, "unit": self.unit, "text": self.text()}


@dataclass(frozen=True)
class Result:
    """One benchmark figure and its verdict, as bench-results.json and the table show it."""

    name: str
    value: float | None
    interval: tuple[float, float] | None
    goal: Goal
    verdict: str
    reason: str
    samples: int | None = None
    details: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        low, high = self.interval or (None, None)
        return {"name": self.name, "value": _finite(self.value), "unit": self.goal.unit,
                "interval_95": None if self.interval is None else [_finite(low), _finite(high)],
                "goal": self.goal.to_json(), "verdict": self.verdict, "reason": self.reason,
                "samples": self.samples, "details": self.details}


def decide(interval: tuple[float, float], goal: Goal) -> tuple[str, str]:
    """(verdict, reason) from where the 95% interval lies against the goal."""
    low, high = interval
    if math.isnan(low) or math.isnan(high) or low > high:
        raise ValueError(f"not an interval: {interval}")
    shown = f"95% interval {fmt(low)}–{fmt(high)}{_unit(goal.unit)}"
    if goal.contains(low) and goal.contains(high):
        return PASS, f"{shown} lies inside the goal {goal.text()}"
    if (goal.high is not None and low > goal.high) or (goal.low is not None and high < goal.low):
        return FAIL, f"{shown} lies wholly outside the goal {goal.text()}"
    if math.isinf(low) or math.isinf(high):
        return UNDECIDED, (f"{shown}: too few samples to bound it on both sides, so it cannot be held against the "
                           f"goal {goal.text()}; rerun with more rounds")
    return UNDECIDED, (f"{shown} straddles the goal {goal.text()}: machine too noisy to decide; rerun on a quiet "
                       "machine")


def judge(name: str, value: float, interval: tuple[float, float], goal: Goal, samples: int | None = None,
          **details: Any) -> Result:
    """The Result of a measured figure: its verdict comes from `decide`, never from the point value alone."""
    verdict, reason = decide(interval, goal)
    return Result(name, value, tuple(interval), goal, verdict, reason, samples, details)


def undecided(name: str, goal: Goal, reason: str, value: float | None = None, samples: int | None = None,
              **details: Any) -> Result:
    """A figure that could not be measured well enough to hold against its goal (e.g. the machine was too busy)."""
    return Result(name, value, None, goal, UNDECIDED, reason, samples, details)


def fmt(x: float | None) -> str:
    """A figure with four significant digits (enough for a ±3% goal), ∞ for an unbounded side."""
    if x is None:
        return "—"
    if math.isinf(x):
        return "∞" if x > 0 else "−∞"
    return f"{x:.4g}"


# ---- Private API
def _unit(unit: str) -> str:
    """Units that are symbols (×, %) stick to the number; words get a space."""
    return unit if unit.startswith(("×", "%")) or not unit else f" {unit}"


def _finite(x: float | None) -> float | None:
    """JSON has no infinity: an unbounded side is null."""
    return None if x is None or math.isinf(x) or math.isnan(x) else x
