"""The figures demo mode puts on the big screen, from plain session events and records. Qt-free.

Live figures are over a trailing window (the last second): a number that changes four times a second must be
steady enough to read from across the room, and the last second is what "current" means to the audience. When
the run ends, the tiles switch to the run's own summary (the same figures the history keeps), so the last
thing shown is never a live estimate.

Power is what the telemetry sources declare for energy (console/telemetry/metadata.py): per device group the best
method (measured before estimated), groups of the same best method summed, as the run's energy headline does.
An estimate is always said to be one; a machine without a power source says why.
"""

from __future__ import annotations

import math
import re
from collections import deque
from dataclasses import dataclass
from typing import Any

import numpy as np

from console.analysis.compare import compare
from console.analysis.validity_text import rules_judged
from console.telemetry import catalog

WINDOW_S = 1.0  # "current" = the last second
BLOCKS_PER_SIDE = 10  # consecutive blocks a race side is resampled by (spread over its rounds)
MIN_BLOCK = 5
_METHOD_RANK = {"measured": 0, "estimated": 1}


@dataclass(frozen=True)
class PowerReading:
    """Watts and how they were obtained: "measured" (a sensor), "counter"/"integrated" (a run's energy) or
    "estimated" (a model); `scope` names the device groups summed ("cpu", "gpu0+cpu")."""

    watts: float
    method: str
    scope: str
    joules_per_inference: float | None = None

    @property
    def estimated(self) -> bool:
        return self.method == "estimated"


class LiveRun:
    """One run's current figures: latency and throughput over the last second, power from the last samples."""

    # ---- Public API
    def __init__(self, batch: int = 1, window_s: float = WINDOW_S):
        self.batch = max(1, int(batch or 1))
        self.window_ns = int(window_s * 1e9)
        self.iterations = 0
        self._batches: deque[tuple[np.ndarray, np.ndarray]] = deque()
        self._power: dict[str, deque[tuple[int, float]]] = {}
        self._power_meta: dict[str, tuple[str, str, int]] = {}  # metric → (group, method, preference)
        self.sources: list[dict[str, Any]] = []

    def add_latencies(self, t_ns: Any, latency_ns: Any) -> None:
        t = np.asarray(t_ns, dtype=np.int64)
        lat = np.asarray(latency_ns, dtype=np.int64)
        if t.size == 0 or t.shape != lat.shape:
            return
        self.iterations += int(t.size)
        self._batches.append((t, lat))
        newest = int(t[-1])
        while len(self._batches) > 1 and int(self._batches[0][0][-1]) < newest - self.window_ns:
            self._batches.popleft()

    def add_samples(self, rows: Any) -> None:
        """Sample rows (t_ns, source, metric, value, unit, method); only power metrics are kept, briefly."""
        known = catalog.current()
        newest = 0
        for t_ns, _source, metric, value, unit, method in rows:
            meta = self._power_meta.get(metric)
            if meta is None:
                meta = _power_meta(known, metric, unit, method)
                if meta is None:
                    continue
                self._power_meta[metric] = meta
            if not _finite(value):
                continue
            self._power.setdefault(metric, deque()).append((int(t_ns), float(value)))
            newest = max(newest, int(t_ns))
        for series in self._power.values():
            while len(series) > 1 and series[0][0] < newest - self.window_ns:
                series.popleft()

    def recent(self) -> tuple[np.ndarray, np.ndarray]:
        """(t_ns, latency_ns) of the iterations in the trailing window."""
        if not self._batches:
            return np.empty(0, np.int64), np.empty(0, np.int64)
        t = np.concatenate([b[0] for b in self._batches])
        lat = np.concatenate([b[1] for b in self._batches])
        keep = t >= int(t[-1]) - self.window_ns
        return t[keep], lat[keep]

    def latency_ms(self) -> float | None:
        """Median latency of the last second's iterations (ms)."""
        _, lat = self.recent()
        return float(np.median(lat)) / 1e6 if lat.size else None

    def throughput(self) -> float | None:
        """Samples per second over the last second: iterations × batch ÷ the span they cover (start of the first
        to the end of the last); None until two iterations are in."""
        t, lat = self.recent()
        if t.size < 2:
            return None
        span_ns = int(t[-1] + lat[-1] - t[0])
        return t.size * self.batch / (span_ns / 1e9) if span_ns > 0 else None

    def power(self) -> PowerReading | None:
        """Mean power over the last second, best method per device group; None without power samples."""
        groups: dict[str, list[tuple[tuple[int, int], str, float]]] = {}
        for metric, series in self._power.items():
            if not series:
                continue
            group, method, preference = self._power_meta[metric]
            mean = sum(v for _, v in series) / len(series)
            groups.setdefault(group, []).append(((_METHOD_RANK.get(method, 9), preference), method, mean))
        if not groups:
            return None
        chosen = {}
        for group, entries in groups.items():
            best = min(rank for rank, _, _ in entries)
            chosen[group] = (best, entries[[rank for rank, _, _ in entries].index(best)][1],
                             sum(w for rank, _, w in entries if rank == best))
        top = min(rank[0] for rank, _, _ in chosen.values())
        used = sorted(g for g, (rank, _, _) in chosen.items() if rank[0] == top)
        method = chosen[used[0]][1]
        return PowerReading(sum(chosen[g][2] for g in used), method, "+".join(used))

    def power_missing(self, detailed: bool = False) -> str | None:
        """Why there is no power figure, from the sources the run's telemetry reported; None when one may come."""
        return power_missing(self.sources, detailed)

    def clear(self) -> None:
        self.iterations = 0
        self._batches.clear()
        self._power.clear()


def power_missing(sources: list[dict[str, Any]], detailed: bool = False) -> str | None:
    """Why no power is shown, or None when a source that gives power is available (or nothing is known yet).

    Short: "no power source on this machine (nvml, rapl, amdsmi, estimated)" — what a tile says; `detailed`:
    each source's reason in brief ("nvml: NVML library not found · rapl: no /sys/class/powercap …")."""
    if not sources:
        return None
    feeding = set(catalog.current().plot_sources("power"))
    relevant = [s for s in sources if s.get("name") in feeding]
    if any(s.get("available") for s in relevant):
        return None
    if not relevant:
        return "no power source is registered"
    if not detailed:
        return f"no power source on this machine ({', '.join(str(s['name']) for s in relevant)})"
    return " · ".join(f"{s['name']}: {_short(s.get('reason') or 'not available')}" for s in relevant)


def final_power(summary: dict[str, Any]) -> PowerReading | None:
    """Mean power over the measurement from the run's energy (joules ÷ window), with its method."""
    energy = (summary or {}).get("energy") or {}
    joules, seconds = energy.get("joules"), (energy.get("window") or {}).get("seconds")
    if not _finite(joules) or not _finite(seconds) or seconds <= 0:
        return None
    return PowerReading(joules / seconds, str(energy.get("method") or ""), str(energy.get("scope") or ""),
                        energy.get("joules_per_inference"))


def final_power_reason(summary: dict[str, Any]) -> str | None:
    energy = (summary or {}).get("energy") or {}
    return energy.get("reason") or None


def validity_line(summary: dict[str, Any], scenario: str | None = None) -> tuple[bool, str]:
    """(valid, one line): "VALID" with the rules that judged it (the server scenario's are LoadGen's latency
    bound and early stopping, not stability), or the first rule the run failed, in the summary's own words."""
    if summary.get("valid"):
        return True, f"VALID measurement ({rules_judged(summary, scenario)})"
    reasons = summary.get("invalid_reasons") or []
    first = reasons[0]["detail"] if reasons else "no iteration was measured"
    more = f" (+{len(reasons) - 1} more)" if len(reasons) > 1 else ""
    return False, f"NOT VALID: {first}{more}"


# ---- Races
@dataclass
class Round:
    """One completed round of one side: its latencies (ns, measurement order) and summary."""

    latency_ns: np.ndarray
    summary: dict[str, Any]


def side_figures(rounds: list[Round], batch: int) -> dict[str, Any]:
    """A side's figures over its completed rounds: median latency (ms) of all their iterations, throughput
    (samples over measured seconds), mean power when every round has one."""
    if not rounds:
        return {"latency_ms": None, "throughput": None, "power": None, "rounds": 0}
    latency = np.concatenate([r.latency_ns for r in rounds])
    samples = sum(r.summary.get("iterations") or 0 for r in rounds) * max(1, batch)
    seconds = sum(r.summary.get("duration_s") or 0.0 for r in rounds)
    throughputs = [r.summary.get("throughput_per_s") for r in rounds]
    if all(_finite(t) for t in throughputs) and seconds > 0:
        # the scenario's own count where it has one (offline, multi-stream), weighted by measured time
        throughput = sum(t * (r.summary.get("duration_s") or 0.0) for t, r in zip(throughputs, rounds,
                                                                                  strict=True)) / seconds
    else:
        throughput = samples / seconds if seconds > 0 else None
    powers = [final_power(r.summary) for r in rounds]
    power = None
    if powers and all(p is not None for p in powers) and len({p.method for p in powers}) == 1:
        per_inf = [p.joules_per_inference for p in powers]
        power = PowerReading(sum(p.watts for p in powers) / len(powers), powers[0].method, powers[0].scope,
                             sum(per_inf) / len(per_inf) if all(_finite(x) for x in per_inf) else None)
    return {"latency_ms": float(np.median(latency)) / 1e6 if latency.size else None, "throughput": throughput,
            "power": power, "rounds": len(rounds)}


def race_verdict(a: list[Round], b: list[Round], batch_a: int, batch_b: int, label_a: str, label_b: str,
                 noise: float = 0.02) -> dict[str, Any]:
    """The verdict of an A-vs-B race: console.analysis.compare over both sides' rounds.

    Each side is given as its rounds, each cut into consecutive blocks (BLOCKS_PER_SIDE spread over the
    rounds): the interval resamples blocks, so drift within a round widens it, and because the rounds
    alternated, a change of the machine's state falls on both sides alike. When the batches differ the time per
    sample (latency ÷ batch) is compared, so batch 1 vs 8 is judged by the work done, not the call's length.

    Returns headline, lines (interval, test, rounds), tone ("good" | "neutral" | "bad"), winner ("A" | "B" |
    None), factor and its interval (how many times faster the winner is), per_sample, and `compare`'s result.
    """
    per_sample = max(1, batch_a) != max(1, batch_b)
    groups_a = _blocks([r.latency_ns / max(1, batch_a) for r in a])
    groups_b = _blocks([r.latency_ns / max(1, batch_b) for r in b])
    result = compare([g / 1e6 for g in groups_a], [g / 1e6 for g in groups_b], noise=noise)
    ratio, (low, high) = result["ratio"], result["ci95"]
    what = "per sample" if per_sample else ""
    p_text = (f"{result['p_label']} < 0.001" if result["p_value"] < 0.001
              else f"{result['p_label']} = {result['p_value']:.2g}")
    rounds = f"{len(a)} round{'s' if len(a) != 1 else ''} each, alternating" if len(a) == len(b) else \
        f"{len(a)} rounds of A, {len(b)} of B"
    if result["verdict"] == "faster":  # B's median is below A's
        winner, loser, factor, interval = label_b, label_a, 1 / ratio, (1 / high, 1 / low)
    elif result["verdict"] == "slower":
        winner, loser, factor, interval = label_a, label_b, ratio, (low, high)
    else:
        winner = None
    median_a, median_b = result["median_a"], result["median_b"]
    unit = "ms per sample" if per_sample else "ms"
    medians = f"median {_fmt(median_a)} {unit} (A) vs {_fmt(median_b)} {unit} (B)"
    if winner is not None:
        headline = f"{winner} is {_times(factor)} faster than {loser}" + (f" {what}" if what else "")
        lines = [f"95% CI {_times(interval[0], False)}–{_times(interval[1])} · {p_text} · {rounds}", medians]
        tone = "good"
    else:
        # equally fast only when the whole interval lies inside the band; otherwise what was resolved
        said = result["headline"].split(":")[0]  # "could not tell apart" / "not shown slower" / "not shown beyond …"
        headline = (f"Equally fast within ±{noise:.0%}" if result["verdict"] == "equivalent"
                    else said[0].upper() + said[1:])
        lines = [f"B takes {_times(ratio)} A's time{(' ' + what) if what else ''} (95% CI "
                 f"{_times(low, False)}–{_times(high)}; noise band ±{noise:.0%}) · {p_text} · {rounds}",
                 f"{result['resolved']}; {result['mde_text']}", medians]
        tone, factor, interval = "neutral", None, None
    invalid = sum(1 for r in [*a, *b] if not r.summary.get("valid"))
    if invalid:
        lines.append(f"{invalid} of {len(a) + len(b)} runs not VALID by LoadGen-style rules "
                     "(e.g. too short): read the figures as indicative")
    return {"headline": headline, "lines": lines, "tone": tone,
            "winner": None if winner is None else ("B" if winner == label_b else "A"),
            "factor": factor, "interval": interval, "per_sample": per_sample, "compare": result}


def no_verdict(reason: str) -> dict[str, Any]:
    return {"headline": "No verdict", "lines": [reason], "tone": "bad", "winner": None, "factor": None,
            "interval": None, "per_sample": False, "compare": None}


# ---- Private API
def _blocks(rounds: list[np.ndarray]) -> list[np.ndarray]:
    per_round = max(1, BLOCKS_PER_SIDE // max(1, len(rounds)))
    groups: list[np.ndarray] = []
    for values in rounds:
        values = np.asarray(values, dtype=np.float64)
        count = min(per_round, values.size // MIN_BLOCK)
        groups += np.array_split(values, count) if count >= 2 else [values]
    return [g for g in groups if g.size]


def _power_meta(known: catalog.Catalog, metric: str, unit: str, method: str) -> tuple[str, str, int] | None:
    resolved = known.resolve(metric)
    if resolved is None or resolved.energy_group is None:
        return None
    spec = resolved.spec
    if spec.unit != "W" or unit != "W" or method != spec.method:
        return None  # energy counters (J) and rows that do not match their declaration never count
    return resolved.energy_group, method, spec.energy.preference


_PARENS = re.compile(r"\s*\([^)]*\)")


def _short(reason: str) -> str:
    """The gist of a source's reason: parentheses dropped, up to the first colon or semicolon."""
    text = _PARENS.sub("", str(reason))
    text = re.split(r"[:;]", text, maxsplit=1)[0].strip()
    return text[:70] or "not available"


def _finite(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _fmt(value: float) -> str:
    return f"{value:.3g}"


def _times(value: float, unit: bool = True) -> str:
    text = f"{value:.2f}" if value < 10 else f"{value:.3g}"
    return text + ("×" if unit else "")
