"""The machine's noise floor for a run: a recent stored one, or a quick one measured now (engines.machine.noise).

Where it comes from, the newest usable one: the machine card of this host and target (its 1-s windows, measured
with the card; console.machine.stored_card is the one card lookup), whatever its age, which is stated; or the quick
floor kept next to the history (noise_floor.json, by host) if younger than MAX_AGE_S. Otherwise `noise_floor_for`
measures a quick one (10 windows of 0.25 s, in a spawned process so the console never competes with it, ~3 s) and
keeps it. Why the card's floor stands: it is the machine's noise measured with care (1-s windows, the card's own
session), and the card is what a lab measures once per machine; with an age limit on it the window and sweeps almost
never had a floor. Why the quick floor expires: it is a 3-s glimpse of the machine *now* — the programs beside the
run, its temperature — so it says little about a run an hour later; ten minutes keeps a series of runs from paying
3 s each.

A quick floor's windows (0.25 s) are shorter than a run's (a tenth of its duration): shorter windows average less,
so their spread is, if anything, larger, and judging a run against it errs towards calling jitter jitter, never
towards hiding a drift (the drift test does not depend on the floor's size beyond its threshold). Qt-free.
"""

from __future__ import annotations

import calendar
import json
import os
import socket
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from console import paths

MAX_AGE_S = 600.0
CACHE_NAME = "noise_floor.json"
QUICK_TIMEOUT_S = 60.0


# ---- Public API
def noise_floor_for(target: str = "cpu", db: str | os.PathLike | None = None, *, max_age_s: float = MAX_AGE_S,
                    measure: bool = True, on_progress: Callable[[str], None] | None = None,
                    now: float | None = None) -> dict[str, Any] | None:
    """The recent noise floor (`recent`), else — when `measure` — a quick one measured now and kept. None when
    there is none and `measure` is False, or when the quick measurement failed: a run without a floor is judged
    by the plain tolerance, and its stability says the noise was not measured. `on_progress(text)` hears that a
    measurement starts."""
    floor = recent(target, db, max_age_s=max_age_s, now=now)
    if floor is not None or not measure:
        return floor
    if on_progress is not None:
        on_progress("measuring this machine's noise floor (about 3 s; kept for "
                    f"{max_age_s / 60:g} minutes)")
    try:
        floor = measure_quick()
    except Exception:  # noqa: BLE001 — a run must not fail because its noise floor could not be measured
        return None
    keep(floor, db)
    return {**floor, "source": "quick measurement before the run", "age_s": 0.0}


def recent(target: str = "cpu", db: str | os.PathLike | None = None, *, max_age_s: float = MAX_AGE_S,
           now: float | None = None) -> dict[str, Any] | None:
    """The newest usable noise floor of this host: the machine card's (any age: it is the machine's noise, and its
    age is stated) or the kept quick one if no older than `max_age_s`, with "source" and "age_s" added; None when
    there is neither (or no history yet)."""
    now = time.time() if now is None else now
    fresh = []
    card_floor = _card_floor(target, db)
    if card_floor is not None and _epoch(card_floor) is not None:
        fresh.append(card_floor)
    kept = kept_floor(db)
    if kept is not None and _epoch(kept) is not None and 0 <= now - _epoch(kept) <= max_age_s:
        fresh.append({**kept, "source": "quick measurement kept from an earlier run"})
    if not fresh:
        return None
    newest = max(fresh, key=_epoch)
    return {**newest, "age_s": now - _epoch(newest)}


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
    """Write `floor` as this host's kept quick floor next to the history (atomically); None when it cannot be
    written (a read-only folder: the floor then serves this run only)."""
    path = cache_path(db)
    try:
        data = _read(path)
        data[socket.gethostname()] = {k: v for k, v in floor.items() if k not in ("source", "age_s")}
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(prefix=".noise-", dir=path.parent)
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            json.dump(data, out)
        os.replace(temporary, path)
    except OSError:
        return None
    return path


def kept_floor(db: str | os.PathLike | None = None) -> dict[str, Any] | None:
    """This host's kept quick floor, whatever its age; None when there is none."""
    floor = _read(cache_path(db)).get(socket.gethostname())
    return floor if isinstance(floor, dict) else None


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
    return (f"noise floor {floor['spread']:.0%} between {floor.get('window_s', 0):g}-s windows "
            f"({source}{when})")


# ---- Private API
def _card_floor(target: str, db: str | os.PathLike | None) -> dict[str, Any] | None:
    from console.history import HistoryError
    from console.machine import stored_card

    try:
        card = stored_card(target, db)
    except (HistoryError, ValueError, OSError):
        return None
    floor = (card or {}).get("noise_floor")
    if not isinstance(floor, dict):
        return None
    return {**floor, "source": f"machine card {str(card.get('card_id') or '')[:8]}".rstrip()}


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
