"""A live progress line for long commands on a terminal: phase, time elapsed and time left.

`run`, `analyze` and `sweep` can take minutes. On a terminal the user wants to know what is happening and how
long it will take; a CI log, a pipe or a `--json` consumer wants no control characters. So the line is written
to stderr only when stderr is a terminal and the command does not print --json, as one line rewritten in place
(`\\r`, padded over the previous text, cut to the terminal's width); otherwise nothing at all is written and
the commands keep their plain `  … phase` log lines.

The time left comes from the spec (console.cli.progress.RunProgress): the warm-up and --duration still to go,
the iterations still to go at the rate so far (--iterations), or — measuring until stable past --duration —
"at most" the cap (--max-duration) less what was measured. A sweep (SweepProgress) adds the points still to
go at the time the finished points took each.
"""

from __future__ import annotations

import shutil
import sys
import threading
import time
from collections.abc import Callable
from typing import Any, TextIO

TICK_S = 0.5  # the line is redrawn at least this often (elapsed time moves during a load too)


class ProgressLine:
    """One stderr line rewritten in place; a no-op unless enabled (stderr a terminal, no --json)."""

    def __init__(self, stream: TextIO | None = None, enabled: bool | None = None,
                 clock: Callable[[], float] = time.monotonic):
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = _is_terminal(self.stream) if enabled is None else bool(enabled)
        self.clock = clock
        self._shown = 0  # characters on screen
        self._text = ""
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._ticker: threading.Thread | None = None

    @classmethod
    def for_command(cls, as_json: bool, stream: TextIO | None = None) -> ProgressLine:
        """Enabled when the command prints no JSON and the stream (stderr) is a terminal."""
        stream = stream if stream is not None else sys.stderr
        return cls(stream, enabled=not as_json and _is_terminal(stream))

    def show(self, text: str) -> None:
        """Replace the line with `text` (cut to the terminal's width)."""
        if not self.enabled:
            return
        width = max(20, shutil.get_terminal_size((100, 24)).columns - 1)
        text = text if len(text) <= width else text[:width - 1] + "…"
        with self._lock:
            self._text = text
            self._write(text)

    def interject(self, write: Callable[[], None]) -> None:
        """Let `write` print permanent lines (a sweep point's result) above the progress line, drawn again below."""
        if not self.enabled:
            write()
            return
        with self._lock:
            self._write("")
            write()
            self._write(self._text)

    def start(self, render: Callable[[], str]) -> None:
        """Redraw `render()` every TICK_S until close(), so elapsed time moves between events."""
        if not self.enabled or self._ticker is not None:
            return

        def tick() -> None:
            while not self._stop.wait(TICK_S):
                try:
                    self.show(render())
                except Exception:  # noqa: BLE001 — a progress line must never end the command
                    return

        self._ticker = threading.Thread(target=tick, name="labconsole-progress", daemon=True)
        self._ticker.start()

    def close(self) -> None:
        """Stop redrawing and clear the line, so the command's own output starts at column 0."""
        self._stop.set()
        if self._ticker is not None:
            self._ticker.join(timeout=2 * TICK_S)
            self._ticker = None
        if self.enabled:
            with self._lock:
                self._write("")
                self._text = ""

    # ---- Private API
    def _write(self, text: str) -> None:
        """`\r`, the text, spaces over what is left of the longer previous text; back to column 0 when cleared."""
        self.stream.write("\r" + text + " " * max(0, self._shown - len(text)) + ("" if text else "\r"))
        self.stream.flush()
        self._shown = len(text)


class RunProgress:
    """A run session's events → 'run mlp · measuring · 3.1 s elapsed · about 1.9 s left'.

    Feed it the session's events (`on_event`, the RunSession listener); `text()` is the line. Nothing here
    reads a clock but `clock`, so tests drive it with a fake one.
    """

    def __init__(self, spec: Any, label: str = "", clock: Callable[[], float] = time.monotonic):
        self.label = label
        self.clock = clock
        self.started = clock()
        self.phase = "starting"
        self.warmup_s = float(_field(spec, "warmup_s") or 0.0)
        self.duration_s = float(_field(spec, "duration_s") or 0.0)
        self.iterations = _field(spec, "iterations")
        options = _field(spec, "scenario_options")
        self.until_stable = bool(_field(options, "until_stable"))
        self.cap_s = _cap_s(_field(options, "max_duration_s"), self.duration_s) if self.until_stable else None
        self._progress: dict[str, Any] = {}
        self._where = ""

    def on_event(self, event: dict[str, Any]) -> None:
        kind = event.get("type")
        if kind == "phase":
            self.phase = str(event.get("phase"))
            self._progress = {}
        elif kind == "progress":
            self._progress = event
        elif kind == "node":
            self._where = f"on {(event.get('host') or {}).get('hostname') or str(event.get('node_id'))[:8]}"

    def remaining_s(self) -> tuple[float | None, bool]:
        """(seconds left, whether that is an upper bound "at most"); None when the spec cannot say."""
        measure = self._measure_left()
        if self.phase in ("starting", "loading"):
            return (None, False) if measure[0] is None else (self.warmup_s + measure[0], measure[1])
        if self.phase == "warmup":
            fraction = float(self._progress.get("fraction") or 0.0)
            if measure[0] is None:
                return None, False
            return self.warmup_s * (1.0 - min(1.0, fraction)) + measure[0], measure[1]
        if self.phase == "measuring":
            return measure
        return None, False  # profiling, finishing: the spec does not say how long

    def text(self) -> str:
        elapsed = self.clock() - self.started
        parts = [part for part in (self.label, self._where, self.phase_text()) if part]
        parts.append(f"{_duration(elapsed)} elapsed")
        left, at_most = self.remaining_s()
        if left is not None:
            parts.append(f"{'at most' if at_most else 'about'} {_duration(left)} left"
                         + (" after the load" if self.phase in ("starting", "loading") else ""))
        return " · ".join(parts)

    def phase_text(self) -> str:
        """The phase in words: 'measuring (120 of 500)', 'measuring until stable (window 12, spread 8%)'."""
        stabilising = self._progress.get("stabilising") if self.phase == "measuring" else None
        if stabilising:
            spread, typical = stabilising.get("spread"), stabilising.get("typical_spread")
            allowance = stabilising.get("allowance")
            if isinstance(typical, (int, float)) and isinstance(allowance, (int, float)):  # aimed for the floor
                shown = f", typical spread {float(typical):.0%} of {float(allowance):.0%} allowed"
            else:
                shown = f", spread {float(spread):.0%}" if isinstance(spread, (int, float)) else ""
            return f"measuring until stable (window {stabilising.get('windows')}{shown})"
        if self.phase == "measuring" and self.iterations and self._progress:
            return f"measuring ({int(self._progress.get('iterations') or 0):,} of {int(self.iterations):,})"
        return self.phase

    # ---- Private API
    def _measure_left(self) -> tuple[float | None, bool]:
        """The measuring phase's time still to go (all of it before it starts)."""
        measuring = self.phase == "measuring"
        elapsed = float(self._progress.get("elapsed_s") or 0.0) if measuring else 0.0
        if self.iterations:
            fraction = float(self._progress.get("fraction") or 0.0) if measuring else 0.0
            if fraction <= 0.0:
                return None, False
            return elapsed * (1.0 - fraction) / fraction, False
        stabilising = self._progress.get("stabilising") if measuring else None
        if stabilising:
            cap = float(stabilising.get("cap_s") or self.cap_s or 0.0)
            return max(0.0, cap - elapsed), True
        return max(0.0, self.duration_s - elapsed), False


class SweepProgress:
    """A sweep's points → '[2/4] b2 · measuring · 14 s elapsed · about 21 s left': this point's time left plus
    the points still to go, each at the mean time the finished points took (loads included), or the spec's plan
    before one finished."""

    def __init__(self, spec: Any, clock: Callable[[], float] = time.monotonic):
        self.spec = spec  # the sweep's base spec (values): its warm-up and duration plan each point
        self.clock = clock
        self.started = clock()
        self.total = 0
        self.index = 0
        self.label = ""
        self.finished: list[float] = []
        self.point: RunProgress | None = None
        self._point_started = clock()

    def on_point(self, event: dict[str, Any]) -> None:
        kind = event.get("type")
        if kind == "sweep_started":
            self.total = int(event.get("total") or 0)
        elif kind == "point_started":  # sent once the point's session started: its first events may be here
            self._begin(int(event["index"]))
            self.total = int(event["total"])
            self.label = str(event.get("label") or "the point")
        elif kind == "point_finished":
            self.finished.append(self.clock() - self._point_started)

    def on_event(self, index: int, event: dict[str, Any]) -> None:
        self._begin(index)
        self.point.on_event(event)

    def text(self) -> str:
        parts = [f"[{self.index + 1}/{self.total}] {self.label}".rstrip()] if self.total else ["sweep"]
        left: float | None = None
        each = sum(self.finished) / len(self.finished) if self.finished else None
        if self.point is not None:
            parts.append(self.point.phase_text())
            left = self.point.remaining_s()[0]
            if left is not None and each is not None:  # the finished points say how long a load takes here
                left = max(left, each - (self.clock() - self._point_started))
        parts.append(f"{_duration(self.clock() - self.started)} elapsed")
        after = self.total - self.index - 1
        if after > 0:
            if each is None and self.point is not None and left is not None:
                each = self.point.warmup_s + (self.point.duration_s or 0.0)
            left = None if each is None or left is None else left + after * each
        if left is not None:
            parts.append(f"about {_duration(left)} left")
        return " · ".join(parts)

    def _begin(self, index: int) -> None:
        if self.point is None or index != self.index:
            self.index, self.point, self._point_started = index, RunProgress(self.spec, clock=self.clock), self.clock()


def live_listener(spec: Any, as_json: bool, plain: Callable[[dict[str, Any]], None] | None, label: str = "",
                  stream: TextIO | None = None) -> tuple[Callable[[dict[str, Any]], None] | None, ProgressLine]:
    """The RunSession listener of `run`/`analyze` and its line (close() it when the run ends): on a terminal
    without --json the live line; else `plain` (the `  … phase` log lines), or None with --json."""
    line = ProgressLine.for_command(as_json, stream)
    if not line.enabled:
        return (None if as_json else plain), line
    progress = RunProgress(spec, label, clock=line.clock)

    def listener(event: dict[str, Any]) -> None:
        progress.on_event(event)
        if event.get("type") in ("phase", "progress", "node"):
            line.show(progress.text())

    line.show(progress.text())
    line.start(progress.text)
    return listener, line


def sweep_listeners(base: Any, as_json: bool, plain: Callable[[dict[str, Any]], None], stream: TextIO | None = None,
                    ) -> tuple[Callable[[dict[str, Any]], None], Callable[[int, dict[str, Any]], None] | None,
                               ProgressLine]:
    """SweepRun's (on_point, on_event) and the line (close() it at the end): `plain` prints each point's lines
    as before; on a terminal without --json the live line stays below them."""
    line = ProgressLine.for_command(as_json, stream)
    if not line.enabled:
        return plain, None, line
    progress = SweepProgress(base, clock=line.clock)

    def on_point(event: dict[str, Any]) -> None:
        progress.on_point(event)
        line.interject(lambda: plain(event))
        line.show(progress.text())

    def on_event(index: int, event: dict[str, Any]) -> None:
        progress.on_event(index, event)
        if event.get("type") in ("phase", "progress"):
            line.show(progress.text())

    line.start(progress.text)
    return on_point, on_event, line


# ---- Private API
def _field(spec: Any, name: str) -> Any:
    """A spec value from a RunSpec (or options object) or its dict form (a sweep's base values)."""
    if isinstance(spec, dict):
        return spec.get(name)
    return getattr(spec, name, None)


def _is_terminal(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):  # closed, or not a file
        return False


def _cap_s(max_duration_s: float | None, duration_s: float) -> float:
    """--max-duration, else the engine's default cap (engines.scenarios._stability: 4 × --duration)."""
    if max_duration_s is not None:
        return float(max_duration_s)
    try:
        from engines.scenarios._stability import DEFAULT_CAP_FACTOR
    except ImportError:
        DEFAULT_CAP_FACTOR = 4.0  # noqa: N806
    return min(DEFAULT_CAP_FACTOR * duration_s, 24 * 3600.0)


def _duration(seconds: float) -> str:
    seconds = max(0.0, float(seconds))
    if seconds < 60:
        return f"{seconds:.0f} s" if seconds >= 10 else f"{seconds:.1f} s"
    minutes, rest = divmod(int(round(seconds)), 60)
    if minutes < 60:
        return f"{minutes} min {rest:02d} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"
