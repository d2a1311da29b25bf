"""Measure until stable: after `duration_s`, keep adding windows until the last K agree (perf_analyzer's rule).

Why in the engine: only the scenario's measurement loop can decide to keep measuring, and a run that stops at a
fixed duration on a jittery machine is judged unstable when one more window would have settled it. Triton's
perf_analyzer keeps adding measurement windows until the last three agree, up to a cap; this is that rule.

Windows are equal-time slices `duration_s / windows_per_duration` wide, each iteration in the window its start
falls in — the cut console.analysis.validity makes — so the run ends on a window boundary with whole windows,
and the console's summary judges it on those same windows (it cuts the run into as many windows as it took).
K, the tolerance and the windows per duration are the validity rules in force, which the console writes into
the spec (`stable_windows`, `stability_tolerance`, `windows_per_duration`): what the engine aims for is what
the console judges. When the machine's noise floor is known the console also writes `stability_allowance`
(max(tolerance, 2 × the floor's typical spread), console.analysis.drift's allowance), and the engine stops as the
console's verdict would call the run valid: the last K windows within the tolerance ("stable"), or the typical
spread of K consecutive windows so far — the median over every run of K, with at least 2K windows — within the
allowance ("jittery machine"). Without it a jittery machine ran to the cap every time, then printed "not stable"
beside a VALID verdict. Standard library only; the clock is the caller's, so tests drive it with fake latencies.
"""

from __future__ import annotations

import math
import statistics
from array import array
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from engines.machine import noise
from engines.options import SpecError, is_number, option

if TYPE_CHECKING:
    from engines.spec import RunSpec

DEFAULT_CAP_FACTOR = 4.0  # --max-duration defaults to 4 × --duration
# A window's median is taken over at most about this many of its latencies (every k-th): the decision runs
# between iterations, and sorting 100,000 latencies there would take ~10 ms of the measured wall time. The
# console's verdict uses every latency.
MEDIAN_SAMPLE = 4096
# As console.analysis.validity.ValidityRules' defaults (stable_windows, stability_tolerance, windows)
DEFAULT_STABLE_WINDOWS, DEFAULT_TOLERANCE, DEFAULT_WINDOWS = 3, 0.10, 10
MAX_WINDOWS = 10_000


@dataclass
class StableOptions:
    """The until-stable options of a scenario that is judged on stability (not server: queueing under Poisson
    arrivals varies between windows at any load, so a server run is judged on its latency bound instead)."""

    until_stable: bool = option(
        False, flag="--until-stable", label="Measure until stable",
        help="after --duration, keep adding windows until the medians of the last 3 agree within 10%% (the "
             "validity rules in force) or, with the machine's noise floor known, until 3 windows in a row "
             "typically agree within twice it, at most --max-duration seconds in all (perf_analyzer's rule; not "
             "for the server scenario, which is judged on its latency bound)")
    max_duration_s: float | None = option(
        None, flag="--max-duration", metavar="S", maximum=24 * 3600, unit="s", label="Max duration (s)",
        help=f"with --until-stable: the most measured seconds (default {DEFAULT_CAP_FACTOR:g} × --duration)")
    # Not flags: the console writes the validity rules in force here when the run measures until stable
    # (None: the defaults above; None also lets another scenario's options drop them, as for any unset option).
    stable_windows: int | None = None
    stability_tolerance: float | None = None
    windows_per_duration: int | None = None
    stability_allowance: float | None = None  # max(tolerance, 2 × noise floor) when the floor is known, else None

    def check(self, spec: RunSpec) -> None:
        if self.max_duration_s is not None and not self.until_stable:
            raise SpecError("scenario_options.max_duration_s", "caps a measurement until stable; turn on "
                            "until_stable too (--until-stable), or raise --duration for a longer fixed run")
        for name, low, high in (("stable_windows", 2, 1000), ("windows_per_duration", 1, MAX_WINDOWS)):
            value = getattr(self, name)
            if value is None:
                continue
            if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
                raise SpecError(f"scenario_options.{name}", f"must be a whole number from {low} to {high}, "
                                                            f"got {value!r}")
        for name in ("stability_tolerance", "stability_allowance"):
            value = getattr(self, name)
            if value is not None and (not is_number(value) or not 0 <= value <= 10):
                raise SpecError(f"scenario_options.{name}", f"must be a fraction from 0 to 10 (0.1 = 10%), "
                                                            f"got {value!r}")
        if not self.until_stable:
            return
        if spec.iterations is not None:
            raise SpecError("scenario_options.until_stable", "extends a timed run window by window, and a run of "
                            f"exactly {spec.iterations} iterations cannot be extended: drop --iterations (measure "
                            "for --duration) or drop --until-stable")
        if self.max_duration_s is not None and self.max_duration_s < spec.duration_s:
            raise SpecError("scenario_options.max_duration_s", f"the cap ({self.max_duration_s:g} s) is shorter "
                            f"than --duration ({spec.duration_s:g} s); give at least {spec.duration_s:g} s")

    def cap_s(self, duration_s: float) -> float:
        """The most measured seconds: --max-duration, else DEFAULT_CAP_FACTOR × duration (at most 24 h)."""
        if self.max_duration_s is not None:
            return float(self.max_duration_s)
        return min(DEFAULT_CAP_FACTOR * duration_s, 24 * 3600.0)


class StabilityWindows:
    """The window medians of a measurement as it runs, and the decision at each deadline: stop, or one more.

    The loop measures to `deadline`, hands every (start, latency) of it to `add`, then calls `decide()`: True
    means stop here (stable, or the next window would pass the cap); False moves `deadline` one window on.
    Only the windows still open are kept in memory; a closed window is its median.
    """

    def __init__(self, begin_ns: int, duration_s: float, options: StableOptions):
        self.begin = int(begin_ns)
        self.base = int(options.windows_per_duration or DEFAULT_WINDOWS)
        self.width = max(1, int(duration_s * 1e9) // self.base)
        self.k = int(options.stable_windows or DEFAULT_STABLE_WINDOWS)
        tolerance = options.stability_tolerance
        self.tolerance = float(DEFAULT_TOLERANCE if tolerance is None else tolerance)
        allowance = options.stability_allowance
        self.allowance = None if allowance is None else max(float(allowance), self.tolerance)
        self.typical: float | None = None  # the typical spread of k consecutive windows so far (with an allowance)
        self.judged = ""  # "last" (the last k within the tolerance) or "typical" (typical spread within allowance)
        self.cap_s = options.cap_s(duration_s)
        self.cap_end = self.begin + int(self.cap_s * 1e9)
        self.deadline = self.begin + self.base * self.width
        self.medians_ms: list[float | None] = []
        self.spread: float | None = None
        self.stable = False
        self.ended = ""  # "stable", "cap", or "" while running (the scenario may end early: cancelled, max_queries)
        self._open: dict[int, array] = {}
        self._late = 0  # calls that arrived for a window already closed (in flight at its deadline)

    # ---- Public API
    def add(self, starts: Sequence[int], latencies: Sequence[int]) -> None:
        """Put iterations (their start and latency, ns) in their windows; a call for a closed window is counted
        as late and left out of the engine's medians (the console still has it)."""
        if not len(starts):
            return
        first, last = self._index(min(starts)), self._index(max(starts))
        if first == last:  # the common case: a shipment of ~100 ms inside one window
            if first < len(self.medians_ms):
                self._late += len(starts)
            else:
                self._bucket(first).extend(latencies)
        else:
            for start, latency in zip(starts, latencies, strict=True):
                index = self._index(start)
                if index < len(self.medians_ms):
                    self._late += 1
                else:
                    self._bucket(index).append(latency)
        # Windows two behind the newest are complete (one window of slack for calls still in flight): their
        # medians are taken now, spread over the run, rather than all at the first deadline
        self._close_to(min(self.deadline, self.begin + (first - 1) * self.width))

    def decide(self) -> bool:
        """At `deadline`, with every iteration that started before it added: True to stop, else one more window."""
        self._close_to(self.deadline)
        recent = self.medians_ms[-self.k:]
        self.spread = _spread(recent) if len(recent) == self.k and None not in recent else None
        if self.allowance is not None:
            self.typical = typical_spread(self.medians_ms, self.k) if self.windows >= 2 * self.k else None
        if self.spread is not None and self.spread <= self.tolerance:
            self.stable, self.ended, self.judged = True, "stable", "last"
            return True
        if self.typical is not None and self.typical <= self.allowance:
            self.stable, self.ended, self.judged = True, "stable", "typical"
            return True
        if self.deadline + self.width > self.cap_end:
            self.ended = "cap"
            return True
        self.deadline += self.width
        return False

    def catch_up(self, end_ns: int) -> None:
        """Decide at every deadline the measurement passed without a decision (its threads reached the cap
        before the deciding thread woke): the windows and spread are then those of the whole measurement."""
        while not self.ended and self.deadline <= end_ns:
            if self.decide():
                break

    @property
    def windows(self) -> int:
        """Whole windows measured so far (closed at a deadline)."""
        return len(self.medians_ms)

    def result_fields(self, ended: str | None = None) -> dict[str, Any]:
        """The `result` event's `until_stable` block: windows taken, the spread it ended with, why it ended.

        `ended`: why the scenario stopped when it was not this object's decision ("cancelled", "max_queries")."""
        return {"until_stable": {
            "windows": self.windows, "base_windows": self.base, "added_windows": max(0, self.windows - self.base),
            "window_s": self.width / 1e9, "stable": self.stable, "spread": self.spread,
            "tolerance": self.tolerance, "compared": self.k, "medians_ms": self.medians_ms[-self.k:],
            "cap_s": self.cap_s, "ended": self.ended or ended or "stopped", "late_calls": self._late,
            "typical_spread": self.typical, "allowance": self.allowance, "judged": self.judged or None}}

    def progress_fields(self) -> dict[str, Any]:
        """Extra `progress` fields once the run measures past --duration (the window shows it is stabilising)."""
        if self.windows < self.base:
            return {}
        return {"stabilising": {"windows": self.windows, "spread": self.spread, "cap_s": self.cap_s,
                                "typical_spread": self.typical, "allowance": self.allowance}}

    def fraction(self, now_ns: int) -> float:
        """Progress toward the current deadline (it moves on by a window each time the run is not yet stable)."""
        return (now_ns - self.begin) / max(1, self.deadline - self.begin)

    # ---- Private API
    def _index(self, start_ns: int) -> int:
        return max(0, (int(start_ns) - self.begin) // self.width)

    def _bucket(self, index: int) -> array:
        bucket = self._open.get(index)
        if bucket is None:
            bucket = self._open[index] = array("q")
        return bucket

    def _close_to(self, end_ns: int) -> None:
        whole = (end_ns - self.begin) // self.width
        while len(self.medians_ms) < whole:
            bucket = self._open.pop(len(self.medians_ms), None)
            if bucket and len(bucket) > 2 * MEDIAN_SAMPLE:
                bucket = bucket[::len(bucket) // MEDIAN_SAMPLE]
            self.medians_ms.append(statistics.median(bucket) / 1e6 if bucket else None)


def tracker(spec: RunSpec, begin_ns: int) -> StabilityWindows | None:
    """The windows of a run that measures until stable, None for a fixed run (or a scenario without the option)."""
    options = spec.scenario_options
    if not getattr(options, "until_stable", False):
        return None
    return StabilityWindows(begin_ns, spec.duration_s, options)


def typical_spread(medians: Sequence[float | None], k: int) -> float | None:
    """console.analysis.drift's typical spread, the noise floor's statistic (engines.machine.noise.spread_of)."""
    return noise.spread_of(medians, k)


def _spread(medians: list[float]) -> float | None:
    low, high = min(medians), max(medians)
    if low <= 0:
        return None if high <= 0 else math.inf
    return high / low - 1.0
