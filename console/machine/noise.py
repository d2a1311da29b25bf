"""The machine's noise floor for a run: pooled from its recent measurements (engines.machine.noise).

A floor is one *draw* of the machine's noise: a few seconds of a reference kernel. On a shared VM one draw says
little — the same kernel read 35% and then 3% a minute apart, and a 2.5% draw made 16 of 20 steady runs
"unsteady" that jittered 10–50% minutes later. So the floor in force pools the draws of this host from the last
POOL_AGE_S (up to POOL_DRAWS of them, the machine card's among them): its spread is the median over every draw's
K-window groups, and its `wander` the largest change any draw showed between its halves (how far the machine alone
moved work that cannot drift; console.analysis.drift takes no smaller change for a drift).

Where the draws come from: the machine card of this host and target (1-s windows; console.machine.cards.stored_card is
the one card lookup) and quick draws kept next to the history (noise_floor.json, by host, newest last). When the
newest draw is older than MAX_AGE_S — or the pool holds fewer than POOL_MIN draws and the newest is a minute old —
`noise_floor_for` measures a quick one (10 windows of 0.4 s, in a spawned process so the console never competes
with it, ~5 s), keeps it and pools it with the rest: a series of runs pays 5 s for each of its first three runs a
minute apart and then every ten minutes, and the pool grows to the machine's real range. Without any recent draw,
`recent` falls back to the card's own floor whatever its age (stated), so a run that cannot measure is still
judged. Draws of another kernel version (engines.machine.noise.KERNEL_VERSION) are not pooled.

A quick draw's windows (0.4 s) are shorter than most runs' (a tenth of the duration): shorter windows average less,
so their spread is, if anything, larger, and judging a run against it errs towards calling jitter jitter; their
halves span 2 s, a run's more, so the wander errs towards finding drifts. Qt-free.
"""

from __future__ import annotations

import calendar
import json
import math
import os
import socket
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from console import paths
from console.analysis.stability_text import age_text
from engines.machine.noise import KERNEL_VERSION, STABLE_WINDOWS, group_spreads

MAX_AGE_S = 600.0  # a newer draw is measured when the newest is older than this
POOL_AGE_S = 3600.0  # draws younger than this are pooled
POOL_DRAWS = 6  # at most this many (the newest)
POOL_MIN, POOL_MIN_GAP_S = 3, 60.0  # until the pool holds this many, a run a minute after the last draw adds one
CACHE_NAME = "noise_floor.json"
QUICK_TIMEOUT_S = 60.0


# ---- Public API
def noise_floor_for(target: str = "cpu", db: str | os.PathLike | None = None, *, max_age_s: float = MAX_AGE_S,
                    measure: bool = True, on_progress: Callable[[str], None] | None = None,
                    now: float | None = None) -> dict[str, Any] | None:
    """The pooled floor (`recent`) when its newest draw is recent (and the pool full enough: module docstring),
    else — when `measure` — a quick draw measured now, kept and pooled with the recent ones. Without `measure`,
    `recent`'s answer (perhaps an old card's floor). When the quick measurement fails, the pool of the last
    POOL_AGE_S as it is, or the card's floor. None when there is no floor, or when the quick measurement failed
    and there is none: a run without a floor is judged by the plain tolerance, and its stability says the noise
    was not measured. `on_progress(text)` hears that a measurement starts."""
    floor = recent(target, db, max_age_s=max_age_s, now=now)
    if not measure or (floor is not None and floor["age_s"] <= max_age_s and
                       (floor.get("draws", 1) >= POOL_MIN or floor["age_s"] < POOL_MIN_GAP_S)):
        return floor
    if on_progress is not None:
        on_progress("measuring this machine's noise floor (about 5 s; kept for "
                    f"{max_age_s / 60:g} minutes)")
    try:
        draw = measure_quick()
    except Exception:  # noqa: BLE001 — a run must not fail because its noise floor could not be measured
        return recent(target, db, max_age_s=POOL_AGE_S, now=now)  # the pool as it is, its age stated
    if keep(draw, db) is None:  # a read-only folder: the draw serves this run alone
        return pooled([{**draw, "source": "quick measurement before the run"}], time.time() if now is None else now)
    return recent(target, db, max_age_s=max_age_s, now=now)


def measure_after_run(target: str, db: str | os.PathLike | None, before: dict[str, Any] | None
                      ) -> dict[str, Any] | None:
    """A quick draw right after a run the floor `before` made INVALID (console.run.session), pooled with the recent
    draws: the floor the run is judged again by (its noisiest draw and largest wander now include the machine as
    the run left it). None when it could not be measured (the run keeps its verdict); the draw alone, with
    `before`'s wander, when it cannot be kept (a read-only folder)."""
    try:
        draw = measure_quick()
    except Exception:  # noqa: BLE001 — the run keeps the verdict it had
        return None
    now = time.time()
    floor = recent(target, db, max_age_s=POOL_AGE_S, now=now) if keep(draw, db) is not None else None
    if floor is None or floor.get("draws", 1) < 2:
        wanders = [abs(x) for x in ((before or {}).get("wander"), draw.get("halves_change")) if _number(x)]
        floor = {**pooled([draw], now), "wander": max(wanders) if wanders else None}
    return {**floor, "source": f"{floor['source']}, the newest taken right after the run (the earlier floor called "
                               "it invalid)"}


def recent(target: str = "cpu", db: str | os.PathLike | None = None, *, max_age_s: float = MAX_AGE_S,
           now: float | None = None) -> dict[str, Any] | None:
    """This host's floor in force: the draws of this kernel from the last POOL_AGE_S pooled (`pooled`), when the
    newest of them is no older than `max_age_s`; else the machine card's own floor whatever its age (stated); None
    when there is neither (or no history yet). "source" and "age_s" (of the newest draw) are added."""
    now = time.time() if now is None else now
    card_floor = _card_floor(target, db)
    draws = [{**draw, "source": "quick measurement"} for draw in kept_draws(db)]
    if card_floor is not None:
        draws.append(card_floor)
    draws = [d for d in draws if _epoch(d) is not None and d.get("kernel_version") == KERNEL_VERSION
             and 0 <= now - _epoch(d) <= POOL_AGE_S]
    draws = sorted(draws, key=_epoch)[-POOL_DRAWS:]
    if draws and now - _epoch(draws[-1]) <= max_age_s:
        return pooled(draws, now)
    if card_floor is not None and _epoch(card_floor) is not None:
        return {**card_floor, "age_s": now - _epoch(card_floor), "draws": 1}
    return None


def pooled(draws: list[dict[str, Any]], now: float) -> dict[str, Any]:
    """One floor from several draws (oldest first): spread = the median over all draws' K-window groups, wander =
    the largest |halves change| of a draw, window medians kept per draw (console.analysis.drift.noise_of recomputes
    the spread for another K). The newest draw's time, window and kernel describe it."""
    newest = draws[-1]
    medians = [d["medians_us"] for d in draws if _medians(d)]
    groups = [g for m in medians for g in group_spreads(m, int(newest.get("k") or STABLE_WINDOWS))]
    spreads = [d["spread"] for d in draws if _number(d.get("spread"))]
    wanders = [abs(d["halves_change"]) for d in draws if _number(d.get("halves_change"))]
    sources = sorted({str(d.get("source") or "quick measurement") for d in draws})
    minutes = (now - _epoch(draws[0])) / 60
    return {**{k: v for k, v in newest.items() if k not in ("medians_us", "calls", "source")},
            "spread": statistics.median(groups) if groups else statistics.median(spreads) if spreads else None,
            "max_spread": max(groups) if groups else newest.get("max_spread"),
            "wander": max(wanders) if wanders else None, "pooled_medians_us": medians, "draws": len(draws),
            "source": (sources[0] if len(draws) == 1 else
                       f"{len(draws)} draws over the last {max(1, round(minutes)):d} min ({', '.join(sources)})"),
            "age_s": now - _epoch(newest)}


def usable(target: str = "cpu", db: str | os.PathLike | None = None) -> dict[str, Any] | None:
    """`recent`, never raising (an unreadable history or cache is no floor): what a run looks up when it starts,
    without measuring (the window and a sweep measure a quick one before, off the GUI thread)."""
    try:
        return recent(target, db)
    except Exception:  # noqa: BLE001 — no floor is judged by the plain tolerance, and says so
        return None


def measure_quick(timeout_s: float = QUICK_TIMEOUT_S) -> dict[str, Any]:
    """A quick noise floor (engines.machine.noise QUICK_WINDOWS × QUICK_WINDOW_S) in a spawned process."""
    from console.workers import call_in_worker
    from engines.machine.noise import QUICK_WINDOW_S, QUICK_WINDOWS

    floor = call_in_worker("engines.machine.noise:measure_noise", QUICK_WINDOWS, QUICK_WINDOW_S, timeout_s=timeout_s)
    return {**floor, "quick": True, "host": socket.gethostname()}


def keep(floor: dict[str, Any], db: str | os.PathLike | None = None) -> Path | None:
    """Add the draw `floor` to this host's kept draws next to the history (atomically; the newest POOL_DRAWS
    stay); None when it cannot be written (a read-only folder: the draw then serves this run only)."""
    path = cache_path(db)
    try:
        data = _read(path)
        draws = [*kept_draws(db), {k: v for k, v in floor.items() if k not in ("source", "age_s")}]
        data[socket.gethostname()] = draws[-POOL_DRAWS:]
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(prefix=".noise-", dir=path.parent)
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            json.dump(data, out)
        os.replace(temporary, path)
    except OSError:
        return None
    return path


def kept_floor(db: str | os.PathLike | None = None) -> dict[str, Any] | None:
    """This host's newest kept quick draw, whatever its age; None when there is none."""
    draws = kept_draws(db)
    return draws[-1] if draws else None


def kept_draws(db: str | os.PathLike | None = None) -> list[dict[str, Any]]:
    """This host's kept quick draws, oldest first, whatever their age (a file from before pooling kept one)."""
    kept = _read(cache_path(db)).get(socket.gethostname())
    draws = [kept] if isinstance(kept, dict) else kept if isinstance(kept, list) else []
    return [d for d in draws if isinstance(d, dict)]


def cache_path(db: str | os.PathLike | None = None) -> Path:
    """Where quick floors are kept: beside the history database (--db, LABCONSOLE_DB or the default)."""
    return paths.history_db(db).expanduser().parent / CACHE_NAME


def describe(floor: dict[str, Any] | None) -> str:
    """"noise floor 15% between 0.25-s windows (quick measurement before the run, 2 min ago)" or why there is none."""
    if not isinstance(floor, dict) or not isinstance(floor.get("spread"), (int, float)):
        return "noise floor not measured (labconsole machine measures it with the card)"
    age = floor.get("age_s")
    when = f", {age_text(age)} ago" if isinstance(age, (int, float)) else ""
    source = floor.get("source") or ("quick measurement" if floor.get("quick") else "machine card")
    wander = floor.get("wander")
    moved = f", halves moved up to {wander:.0%}" if _number(wander) else ""
    return (f"noise floor {floor['spread']:.0%} between {floor.get('window_s', 0):g}-s windows{moved} "
            f"({source}{when})")


# ---- Private API
def _card_floor(target: str, db: str | os.PathLike | None) -> dict[str, Any] | None:
    from console.history import HistoryError
    from console.machine.cards import stored_card

    try:
        card = stored_card(target, db)
    except (HistoryError, ValueError, OSError):
        return None
    floor = (card or {}).get("noise_floor")
    if not isinstance(floor, dict):
        return None
    return {**floor, "source": f"machine card {str(card.get('card_id') or '')[:8]}".rstrip()}


def _medians(draw: dict[str, Any]) -> bool:
    medians = draw.get("medians_us")
    return isinstance(medians, list) and len(medians) >= 2 and all(_number(m) and m > 0 for m in medians)


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _epoch(floor: dict[str, Any]) -> float | None:
    value = floor.get("measured_epoch_s")
    if isinstance(value, (int, float)):
        return float(value)
    text = floor.get("measured_at")
    try:
        return float(calendar.timegm(time.strptime(str(text), "%Y-%m-%dT%H:%M:%SZ")))
    except ValueError:
        return None


def _read(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


