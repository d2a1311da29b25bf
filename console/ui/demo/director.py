"""Plays a demo playlist through the window's RunController: runs, races, holds, loops; survives failures.

Every run goes through the RunController, so it is measured, stored and summarised like a Run-page run (it is in
the history with its status), it claims the workspace's one measuring state (a sweep cannot start over it), and the
Run page shows it too. The director never finishes or marks a run itself: the session does; the director only
starts the next one when the previous one's `finished` event arrived.

A failing item never stops the playlist: a spec that cannot be built now (ItemProblem), a run refused by the spec
check, a worker that fails — each ends the item with that reason, and the next item follows after the hold.
A run started elsewhere (the Run page, a sweep) makes the director wait and retry; it is not a failure.
`stop()` cancels the director's own run in flight (stored as cancelled, with what it measured) and nothing else.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
from PySide6 import QtCore

from console.demo import figures
from console.demo.playlist import ItemProblem, Playlist, RaceItem
from console.spec.build import SpecError, label_for

RETRY_MS = 1000  # a run from elsewhere is measuring: try again this often


class PlaylistDirector(QtCore.QObject):
    """Signals carry plain dicts (see each). Counts in `counts`; the last outcomes in `outcomes`."""

    sig_item = QtCore.Signal(object)  # an item begins: number, total, loop, kind, title, labels, rounds, problem
    sig_run_started = QtCore.Signal(object)  # side ("A" | "B" | None), round (0-based), rounds, event (started)
    sig_event = QtCore.Signal(object)  # the session events of the director's run in flight
    sig_run_finished = QtCore.Signal(object)  # side, round, record (the session's finished record)
    sig_side = QtCore.Signal(object)  # a race side after a completed round: side, figures (console.demo.figures)
    sig_item_done = QtCore.Signal(object)  # outcome: number, kind, title, status, message, verdict, run_ids
    sig_waiting = QtCore.Signal(str)  # why the next run has not started yet
    sig_done = QtCore.Signal(object)  # a playlist that does not loop ended: counts

    # ---- Public API
    def __init__(self, controller: Any, playlist: Playlist, parent: QtCore.QObject | None = None):
        super().__init__(parent)
        self.controller = controller
        self.playlist = playlist
        self.counts = {"items": 0, "runs": 0, "completed_runs": 0, "failed_items": 0, "races": 0, "verdicts": 0,
                       "loops": 0}
        self.outcomes: list[dict[str, Any]] = []  # the last MAX_OUTCOMES, newest last
        self._index = 0
        self._stopped = True
        self._queue: list[tuple[str | None, int, Any]] = []
        self._run_id: str | None = None
        self._seen_started = False
        self._current: tuple[str | None, int, Any] | None = None
        self._chunks: list[np.ndarray] = []
        self._item: dict[str, Any] | None = None
        self._race: dict[str, Any] | None = None
        self._hold = QtCore.QTimer(self, singleShot=True, timeout=self._advance)
        self._retry = QtCore.QTimer(self, singleShot=True, interval=RETRY_MS, timeout=self._start_next_run)
        controller.sig_event.connect(self._on_event)

    MAX_OUTCOMES = 200

    @property
    def running(self) -> bool:
        return not self._stopped

    @property
    def run_in_flight(self) -> str | None:
        """The id of the director's run that has not finished yet, if any."""
        return self._run_id if self._current is not None else None

    def start(self) -> None:
        self._stopped = False
        self._index = 0
        self._begin_item()

    def stop(self) -> bool:
        """Stop playing; cancel the director's own run in flight. True when a run was cancelled (it ends as
        "cancelled" in the history, with what it measured)."""
        self._stopped = True
        self._hold.stop()
        self._retry.stop()
        session = getattr(self.controller, "session", None)
        if self._current is not None and session is not None and session.run_id == self._run_id \
                and self.controller.busy:
            self.controller.stop()
            return True
        return False

    # ---- Private API: items
    def _begin_item(self) -> None:
        if self._stopped:
            return
        item = self.playlist.items[self._index]
        info = {"number": item.number, "total": len(self.playlist.items), "loop": self.counts["loops"] + 1,
                "kind": item.kind, "title": item.name or f"item {item.number}", "labels": None, "rounds": 1,
                "problem": None, "specs": []}
        self._queue = []
        try:
            if isinstance(item, RaceItem):
                title, (label_a, spec_a), (label_b, spec_b) = self.playlist.build_race(item)
                info.update(title=title, labels=(label_a, label_b), rounds=item.rounds,
                            specs=[spec_a.to_dict(), spec_b.to_dict()])
                for k in range(item.rounds):  # rounds alternate who goes first: A B, B A, A B …
                    order = (("A", spec_a), ("B", spec_b)) if k % 2 == 0 else (("B", spec_b), ("A", spec_a))
                    self._queue += [(side, k, spec) for side, spec in order]
                self._race = {"labels": {"A": label_a, "B": label_b}, "batch": {"A": spec_a.batch, "B": spec_b.batch},
                              "rounds": {"A": [], "B": []}}
            else:
                title, spec = self.playlist.build_run(item)
                info.update(title=title, specs=[spec.to_dict()])
                self._queue = [(None, 0, spec)]
                self._race = None
        except ItemProblem as exc:
            info["problem"] = {"where": exc.where, "problem": exc.problem, "fix": exc.fix}
            self._item = {**info, "run_ids": []}
            self.sig_item.emit(info)
            self._finish_item("failed", str(exc))
            return
        self._item = {**info, "run_ids": []}
        self.sig_item.emit(info)
        self._start_next_run()

    def _finish_item(self, status: str, message: str = "", verdict: dict[str, Any] | None = None) -> None:
        item = self._item or {}
        outcome = {"number": item.get("number"), "kind": item.get("kind"), "title": item.get("title"),
                   "status": status, "message": message, "verdict": verdict, "run_ids": item.get("run_ids", []),
                   "loop": item.get("loop"), "finished_at": time.time()}
        self.counts["items"] += 1
        if status != "completed":
            self.counts["failed_items"] += 1
        if item.get("kind") == "race":
            self.counts["races"] += 1
            if verdict is not None and verdict.get("compare") is not None:
                self.counts["verdicts"] += 1
        self.outcomes.append(outcome)
        del self.outcomes[:-self.MAX_OUTCOMES]
        self._queue, self._race, self._chunks, self._current = [], None, [], None
        self.sig_item_done.emit(outcome)
        if not self._stopped:
            self._hold.start(round(self.playlist.hold_s * 1000))

    def _advance(self) -> None:
        if self._stopped:
            return
        self._index += 1
        if self._index >= len(self.playlist.items):
            self.counts["loops"] += 1
            if not self.playlist.loop:
                self._stopped = True
                self.sig_done.emit(dict(self.counts))
                return
            self._index = 0
        self._begin_item()

    # ---- Private API: runs
    def _start_next_run(self) -> None:
        if self._stopped or not self._queue:
            return
        side, k, spec = self._queue[0]
        try:
            run_id = self.controller.start(spec)
        except SpecError as exc:
            self._finish_item("failed", f"the run was not started: {label_for(exc.field)}: {exc.detail}")
            return
        except RuntimeError as exc:  # workspace.Busy: a run or a sweep from elsewhere is measuring
            what = getattr(exc, "title", "") or str(exc)
            self.sig_waiting.emit(f"Waiting: {what} elsewhere; the playlist goes on when it ends")
            self._retry.start()
            return
        except Exception as exc:  # noqa: BLE001 — an unattended playlist goes on, with the reason shown
            self._finish_item("failed", f"the run could not be started: {type(exc).__name__}: {exc}")
            return
        self._queue.pop(0)
        self._current, self._run_id, self._chunks = (side, k, spec), run_id, []
        self._seen_started = False
        if self._item is not None:
            self._item["run_ids"].append(run_id)

    def _on_event(self, event: dict[str, Any]) -> None:
        if self._current is None:
            return
        kind = event.get("type")
        if kind == "started":
            # A run that ended earlier may still have events queued: only ours, after our `started`, count.
            self._seen_started = event.get("run_id") == self._run_id
            if self._seen_started:
                side, k, _ = self._current
                self.sig_run_started.emit({"side": side, "round": k, "event": event,
                                           "rounds": (self._item or {}).get("rounds", 1)})
            return
        if kind == "finished":
            if event.get("run_id") == self._run_id:
                self._run_finished(event)
            return
        if not self._seen_started:
            return
        if kind == "latencies" and self._race is not None:
            self._chunks.append(np.asarray(event["latency_ns"], dtype=np.int64))
        self.sig_event.emit(event)

    def _run_finished(self, record: dict[str, Any]) -> None:
        side, k, _ = self._current
        self._current, self._seen_started = None, False
        self.counts["runs"] += 1
        status = record.get("status")
        if status == "completed":
            self.counts["completed_runs"] += 1
        self.sig_run_finished.emit({"side": side, "round": k, "record": record})
        if self._race is None:
            self._finish_item(status, record.get("message") or "")
            return
        race, label = self._race, self._race["labels"][side]
        if status != "completed":
            reason = f"round {k + 1} of {side} ({label}) {status}: {record.get('message') or 'no message'}"
            self._finish_item("failed" if status != "cancelled" else "cancelled", reason,
                              figures.no_verdict(reason))
            return
        latency = np.concatenate(self._chunks) if self._chunks else np.empty(0, np.int64)
        self._chunks = []
        race["rounds"][side].append(figures.Round(latency, record.get("summary") or {}))
        self.sig_side.emit({"side": side, "figures": figures.side_figures(race["rounds"][side], race["batch"][side])})
        if self._queue:
            self._start_next_run()
            return
        try:
            verdict = figures.race_verdict(race["rounds"]["A"], race["rounds"]["B"], race["batch"]["A"],
                                           race["batch"]["B"], race["labels"]["A"], race["labels"]["B"])
        except ValueError as exc:
            verdict = figures.no_verdict(f"the rounds cannot be compared: {exc}")
        self._finish_item("completed" if verdict["compare"] is not None else "failed",
                          verdict["headline"] + (f": {verdict['lines'][0]}" if verdict["compare"] is None else ""),
                          verdict)
