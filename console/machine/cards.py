"""Machine cards for the console: the newest stored card of this host and target, or a fresh one measured in a
worker (torch never enters the console) and kept in the history, where cards of other lab hosts can be compared.

A stored card is reused only when it answers the question asked: the same target, full sizes unless quick ones
were asked for, and — when a storage directory is named — measured on that directory. `newest_card` is the one
place that says which stored card that is: a finished run's findings, the Run page's roofs, a report, `analyze`
and the noise floor all ask it (five lookups once disagreed: only one canonicalised the target and skipped quick
cards, whose buffers fit in the caches and so are no ceilings).
"""

from __future__ import annotations

import multiprocessing
import os
import queue
import socket
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from console import paths
from console.workers import call_in_worker
from engines.machine.devices import canonical_target
from engines.machine.errors import MachineError
from engines.machine.storage import check_directory

MEASURE_TIMEOUT_S = 1800.0  # a slow disk and an emulated precision can take minutes; a hung worker cannot
_DONE = None

__all__ = ["card_for", "newest_card", "stored_card", "card_to_judge_by", "AnalysisCard", "card_before_analysis",
           "card_for_analysis", "measure", "store_card", "latest_cards", "default_storage_dir", "MachineError"]


# ---- Public API
def card_for(target: str = "cpu", refresh: bool = False, storage_dir: str | os.PathLike | None = None,
             db: str | os.PathLike | None = None, *, repeats: int = 5, quick: bool = False,
             on_progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    """The newest stored card for this host and `target` unless `refresh`; else measured now and stored.

    Raises MachineError (a bad target or storage directory: the message says what to do) and HistoryError.
    """
    target = canonical_target(target)
    if storage_dir is not None:
        check_directory(storage_dir)  # before a worker starts: a typo fails in a moment
    path = paths.history_db(db)
    if not refresh:
        card = stored_card(target, path, storage_dir=storage_dir, quick=quick)
        if card is not None:
            return card
    directory = str(storage_dir) if storage_dir is not None else str(default_storage_dir())
    card = measure(target, directory, repeats=repeats, quick=quick, on_progress=on_progress)
    card["card_id"] = store_card(card, path)
    return card


def newest_card(store: Any, target: str, *, hostname: str | None = None,
                storage_dir: str | os.PathLike | None = None, quick: bool = False) -> dict[str, Any] | None:
    """The card a question about this host (or `hostname`) and `target` is answered with, read from `store` (a
    history reader; nothing is measured): the newest of that host and canonical target ("cuda" is "cuda:0"), full
    sizes unless `quick` (a quick card's buffers fit in the caches: its figures are no ceilings), measured on
    `storage_dir` when one is named. None when there is none, or `target` is one no card is measured for."""
    try:
        target = canonical_target(target)
    except MachineError:
        return None
    wanted_dir = str(Path(storage_dir).expanduser().resolve()) if storage_dir is not None else None
    for card in store.machine_cards(hostname=hostname or socket.gethostname(), target=target):  # newest first
        if bool(card.get("quick")) != quick:
            continue
        if wanted_dir is not None and (card.get("storage") or {}).get("dir") != wanted_dir:
            continue
        return card
    return None


def stored_card(target: str, db: str | os.PathLike | None = None, storage_dir: str | os.PathLike | None = None,
                quick: bool = False, hostname: str | None = None) -> dict[str, Any] | None:
    """`newest_card` of the history at `db` (a short read); None when there is no history yet."""
    from console.history import open_reader

    if not paths.history_db(db).is_file():
        return None
    with open_reader(paths.history_db(db)) as store:
        return newest_card(store, target, hostname=hostname, storage_dir=storage_dir, quick=quick)


def card_to_judge_by(target: str, db: str | os.PathLike | None = None) -> dict[str, Any] | None:
    """The card a finished run's findings are judged against: `newest_card`, with the newest stored I/O sweep
    attached as its "storage_sweep" (a storage verdict's ceiling) when there is one; None when there is no card
    or the history cannot be read (a summary never measures a card, and a run is never lost for want of one)."""
    from console.analysis.storage import stored_sweep
    from console.history import HistoryError, open_reader

    if not paths.history_db(db).is_file():
        return None
    try:
        with open_reader(paths.history_db(db)) as store:
            card = newest_card(store, target)
            sweep = stored_sweep(store) if card is not None else None
    except HistoryError:
        return None
    return {**card, "storage_sweep": sweep} if card is not None and sweep else card


@dataclass(frozen=True)
class AnalysisCard:
    """The card an analysis is judged against (None when it could not be had), why not (`note`, "" with a card),
    and whether it was measured now rather than read from the history."""

    card: dict[str, Any] | None
    note: str = ""
    measured: bool = False


def card_before_analysis(target: str, db: str | os.PathLike | None = None) -> dict[str, Any] | None:
    """This host's stored card for `target` that an analysis would use; None when one must be measured first (or
    the history cannot be read: measuring then says why). A short read: the window asks it on the GUI thread to
    know whether to wait for a measurement."""
    from console.history import HistoryError

    try:
        return stored_card(target, db)
    except (HistoryError, OSError):
        return None


def card_for_analysis(target: str, db: str | os.PathLike | None = None,
                      on_progress: Callable[[str], None] | None = None) -> AnalysisCard:
    """The stored card, else one measured now (minutes; `on_progress(text)` hears each step, on a helper thread)
    and stored, so the run's verdict is judged against it. Why before the run, whichever surface asks: the window's
    Analyze once profiled with no card stored and judged without roofs ("Bound by compute" for a batch-1 MLP at 2%
    of the CPU's peak) while `labconsole analyze` measured the card first and said "cache-resident". Never raises:
    a card that cannot be had is a note, and the op table stands without roofs (the verdict then says so)."""
    try:
        had = stored_card(target, db)
        if had is not None:
            return AnalysisCard(had)
        return AnalysisCard(card_for(target, db=db, on_progress=on_progress), measured=True)
    except Exception as exc:  # noqa: BLE001 — a worker's error comes back as is; the analysis goes on without roofs
        return AnalysisCard(None, f"no machine card ({type(exc).__name__}: {exc}): ops shown without roofs")


def measure(target: str = "cpu", storage_dir: str | None = None, repeats: int = 5, quick: bool = False,
            on_progress: Callable[[str], None] | None = None,
            timeout_s: float = MEASURE_TIMEOUT_S) -> dict[str, Any]:
    """Measure a card in a spawned worker; `on_progress(text)` is called (on a helper thread) as it goes."""
    args = (canonical_target(target), None if storage_dir is None else str(storage_dir), repeats, quick)
    if on_progress is None:
        return call_in_worker("engines.machine:measure_card", *args, timeout_s=timeout_s)
    with multiprocessing.get_context("spawn").Manager() as manager:
        texts = manager.Queue()
        relay = threading.Thread(target=_relay, args=(texts, on_progress), name="machine-progress", daemon=True)
        relay.start()
        try:
            return call_in_worker("engines.machine:measure_card", *args, texts.put, timeout_s=timeout_s)
        finally:
            texts.put(_DONE)
            relay.join(5)


def store_card(card: dict[str, Any], db: str | os.PathLike | None = None,
               host_row: dict[str, Any] | None = None) -> str:
    """Keep `card` in the history (through the writer, committed before returning) under this host, or under
    `host_row`'s (a card a lab node measured); its card_id."""
    from console.history import HistoryError, HistoryWriter

    writer = HistoryWriter.open(paths.history_db(db))
    card_id = writer.add_machine_card({k: v for k, v in card.items() if k != "card_id"}, host_row)
    if not writer.close():
        raise writer.last_error or HistoryError("the machine card could not be stored",
                                                "check the history database (labconsole history)",
                                                paths.history_db(db))
    return card_id


def latest_cards(store: Any) -> list[dict[str, Any]]:
    """The newest card of every (host, target) in the history, this host first, then by host and target."""
    me = socket.gethostname()
    cards = store.machine_cards(latest_only=True)
    return sorted(cards, key=lambda c: (c.get("host") != me, str(c.get("host")), str(c.get("target"))))


def default_storage_dir() -> Path:
    """Where a card measures storage when no directory is named: the console's data directory (the history's
    disk), created if missing."""
    directory = paths.data_dir()
    directory.mkdir(parents=True, exist_ok=True)
    return directory


# ---- Private API
def _relay(texts: Any, on_progress: Callable[[str], None]) -> None:
    while True:
        try:
            text = texts.get(timeout=1.0)
        except queue.Empty:
            continue
        except (EOFError, OSError):  # the manager is gone: the measurement ended
            return
        if text is _DONE:
            return
        on_progress(text)
