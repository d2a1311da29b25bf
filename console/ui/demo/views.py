"""Demo mode's screens: one run, an A-vs-B race, a message. Each is fed session events and ticks, and shows
tiles from `widgets.demo_tiles`; the figures come from `console.demo.figures`.

Live figures (the last second) while a run measures; the run's own summary once it ended, so what stays on the
screen is what the history keeps. A race side that is not running shows its completed rounds.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np
from PySide6 import QtCore, QtWidgets

from console.demo import figures
from engines import phases
from widgets import theme
from widgets.demo_tiles import Banner, FigureTile, ScaledLabel
from widgets.demo_trace import DemoTrace
from widgets.formatting import format_number

MEASURED_X = "time measuring (s)"
ROUND_GAP_S = 0.3  # between rounds on a race's trace
TITLE_PX = 52
SUBTITLE_PX = 30
STATUS_PX = 36


class _Screen(QtWidgets.QWidget):
    """What the screens share: a header (title, subtitle, status at the right) and scheme/scale plumbing."""

    def __init__(self, scheme: theme.Scheme, parent: QtWidgets.QWidget | None = None):
        super().__init__(parent)
        self.scheme = scheme
        self.title = ScaledLabel("", TITLE_PX, True, "foreground", scheme, shrink=True)
        self.subtitle = ScaledLabel("", SUBTITLE_PX, False, "muted", scheme, shrink=True)
        self.status = ScaledLabel("", STATUS_PX, True, "accent", scheme)
        self.status.setAlignment(QtCore.Qt.AlignmentFlag.AlignRight | QtCore.Qt.AlignmentFlag.AlignVCenter)
        header = QtWidgets.QGridLayout()
        header.setHorizontalSpacing(24)
        header.addWidget(self.title, 0, 0)
        header.addWidget(self.status, 0, 1)
        header.addWidget(self.subtitle, 1, 0, 1, 2)
        header.setColumnStretch(0, 1)
        self.body = QtWidgets.QVBoxLayout(self)
        self.body.setContentsMargins(0, 0, 0, 0)
        self.body.setSpacing(18)
        self.body.addLayout(header)
        self._scaled: list[Any] = [self.title, self.subtitle, self.status]

    def scaled(self, widget: Any) -> Any:
        self._scaled.append(widget)
        return widget

    def set_scheme(self, scheme: theme.Scheme) -> None:
        self.scheme = scheme
        for widget in self._scaled:
            widget.set_scheme(scheme)

    def set_scale(self, scale: float) -> None:
        for widget in self._scaled:
            widget.set_scale(scale)
        self.body.setSpacing(round(18 * scale))

    def tick(self) -> None:
        """Called by the window's one timer: update the figures, redraw the trace."""


class MessageView(_Screen):
    """A screen that says something: waiting for a run, an item that could not start, the playlist's end."""

    def __init__(self, scheme: theme.Scheme, parent: QtWidgets.QWidget | None = None):
        super().__init__(scheme, parent)
        self.banner = self.scaled(Banner(scheme, headline_px=64))
        self.body.addStretch(1)
        self.body.addWidget(self.banner)
        self.body.addStretch(2)

    def set_message(self, title: str, headline: str, lines: list[str], tone: str = "neutral",
                    status: str = "", subtitle: str = "") -> None:
        self.title.setText(title)
        self.subtitle.setText(subtitle)
        self.status.setText(status)
        self.status.set_role({"bad": "bad", "good": "good"}.get(tone, "accent"))
        self.banner.set_text(headline, lines, tone)


class SingleRunView(_Screen):
    """One run: latency, throughput and power tiles over a live latency trace, and the run's outcome."""

    def __init__(self, scheme: theme.Scheme, parent: QtWidgets.QWidget | None = None):
        super().__init__(scheme, parent)
        self.latency = self.scaled(FigureTile("Latency", scheme))
        self.throughput = self.scaled(FigureTile("Throughput", scheme))
        self.power = self.scaled(FigureTile("Power", scheme))
        tiles = QtWidgets.QHBoxLayout()
        tiles.setSpacing(24)
        for tile in (self.latency, self.throughput, self.power):
            tiles.addWidget(tile, 1)
        self.trace = self.scaled(DemoTrace("Latency per iteration", scheme, x_label=MEASURED_X))
        self.trace.setMinimumHeight(260)
        self.outcome = self.scaled(ScaledLabel("", SUBTITLE_PX, True, "muted", scheme, wrap=True))
        self.body.addLayout(tiles)
        self.body.addWidget(self.trace, 1)
        self.body.addWidget(self.outcome)
        self.live = figures.LiveRun()
        self.running = False
        self.record: dict[str, Any] | None = None
        self._t0_ns = 0
        self._seen = 0
        self._last_t_s = 0.0
        self._phase = ""
        self._scenario = "single-stream"
        self._mode = "inference"

    # ---- Public API
    def begin(self, title: str, spec: dict[str, Any], t0_ns: int, note: str = "") -> None:
        """A run starts (or is joined mid-way, `note` says so)."""
        self.title.setText(title)
        self.subtitle.setText(_describe(spec) + (f" · {note}" if note else ""))
        self._t0_ns, self._seen, self._last_t_s = None, 0, 0.0
        self._scenario, self._mode = spec.get("scenario") or "single-stream", spec.get("mode") or "inference"
        self.live = figures.LiveRun(batch=int(spec.get("batch") or 1))
        self.running, self.record = True, None
        self.trace.clear()
        self.trace.set_series("run", "latency per iteration", self.scheme.palette[0])
        self._set_phase("")
        self.outcome.setText("")
        for tile in (self.latency, self.throughput, self.power):
            tile.clear("starting the worker")

    def handle(self, event: dict[str, Any]) -> None:
        kind = event.get("type")
        if kind == "latencies":
            t_ns, latency_ns = _fed_latencies(self.live, event)
            if t_ns.size:
                if self._t0_ns is None:  # the axis counts measured time: loading and warm-up are not drawn
                    self._t0_ns = int(t_ns[0])
                self.trace.add_points("run", (t_ns - self._t0_ns) / 1e9, latency_ns / 1e6)
                self._last_t_s = (int(t_ns[-1]) - self._t0_ns) / 1e9
        elif kind == "samples":
            self.live.add_samples(event["rows"])
        elif kind == "sources":
            self.live.sources = list(event["sources"])
        elif kind == "phase":
            self._set_phase(event["phase"])
        elif kind == "finished":
            self.finish(event)

    def tick(self) -> None:
        if self.running and self.live.iterations:
            fresh = self.live.iterations != self._seen
            self._seen = self.live.iterations
            latency = self.live.latency_ms()
            self.latency.set_value(latency, "ms", f"median of the last second · {self.live.iterations:,} "
                                                  "iterations so far")
            if fresh:
                self.trace.add_median("run", self._last_t_s, latency)
            self.throughput.set_value(self.live.throughput(), _throughput_unit(self._mode),
                                      f"last second · batch {self.live.batch}")
        if self.running:
            _show_power(self.power, self.live.power(), self.live, "mean of the last second")
        self.trace.refresh()

    def finish(self, record: dict[str, Any]) -> None:
        """The run ended: its summary's figures, and what became of it."""
        self.running, self.record = False, record
        summary = record.get("summary") or {}
        latency = summary.get("latency_ms") or {}
        ci = (latency.get("ci95") or {}).get("p50") or [None, None]
        interval = f" · 95% CI {format_number(ci[0])}–{format_number(ci[1])} ms" if None not in ci else ""
        iterations = summary.get("iterations") or 0
        backing = ((summary.get("validity") or {}).get("percentiles") or {}).get("p50") or {}
        if latency.get("p50") is None and iterations and backing.get("required"):
            self.latency.set_value(None, "ms", f"median not reported: {iterations:,} iterations, a median needs "
                                               f"{backing['required']:,} (MLPerf early stopping)")
        else:
            self.latency.set_value(latency.get("p50"), "ms", f"run median{interval} · {iterations:,} iterations")
        self.throughput.set_value(summary.get("throughput_per_s"), _throughput_unit(self._mode),
                                  f"whole measurement ({format_number(summary.get('duration_s'))} s)")
        _show_power(self.power, figures.final_power(summary), self.live, "mean over the measurement",
                    figures.final_power_reason(summary) or "no power samples in the measurement")
        status = record.get("status")
        if status == "completed":
            valid, line = figures.validity_line(summary)
            self.outcome.setText(line)
            self.outcome.set_role("good" if valid else "estimated")
            self._set_status("Completed", "good")
        elif status == "cancelled":
            self.outcome.setText("Cancelled: kept in the history as cancelled, with what it measured")
            self.outcome.set_role("muted")
            self._set_status("Cancelled", "muted")
        else:
            self.outcome.setText(f"FAILED: {record.get('message') or 'no message'}")
            self.outcome.set_role("bad")
            self._set_status("Failed", "bad")
        self.trace.refresh()

    def phase(self) -> str:
        return self._phase

    def set_scheme(self, scheme: theme.Scheme) -> None:
        super().set_scheme(scheme)
        if "run" in self.trace.series_keys():
            self.trace.set_series("run", "latency per iteration", scheme.palette[0])

    # ---- Private API
    def _set_phase(self, name: str) -> None:
        self._phase = name
        self._set_status(phases.get(name).title, "accent")
        if name == "loading":
            for tile in (self.latency, self.throughput):
                tile.clear("loading the model")
        elif name == "warmup":
            for tile in (self.latency, self.throughput):
                tile.clear("warming up: not measured")

    def _set_status(self, text: str, role: str) -> None:
        self.status.setText(text)
        self.status.set_role(role)


class RaceView(_Screen):
    """A vs B: each side's tiles side by side, both latency traces on one time axis, the verdict at the end."""

    SIDES = ("A", "B")

    def __init__(self, scheme: theme.Scheme, parent: QtWidgets.QWidget | None = None):
        super().__init__(scheme, parent)
        self.sides: dict[str, dict[str, Any]] = {}
        columns = QtWidgets.QHBoxLayout()
        columns.setSpacing(40)
        for index, side in enumerate(self.SIDES):
            head = self.scaled(ScaledLabel(side, 44, True, scheme.palette[index], scheme, shrink=True))
            caption = self.scaled(ScaledLabel("", 28, True, "muted", scheme))
            caption.setAlignment(QtCore.Qt.AlignmentFlag.AlignRight | QtCore.Qt.AlignmentFlag.AlignVCenter)
            tiles = {name: self.scaled(FigureTile(label, scheme, compact=True))
                     for name, label in (("latency", "Latency"), ("throughput", "Throughput"), ("power", "Power"))}
            column = QtWidgets.QVBoxLayout()
            column.setSpacing(10)
            row = QtWidgets.QHBoxLayout()
            row.setSpacing(16)
            for tile in tiles.values():
                row.addWidget(tile, 1)
            head_row = QtWidgets.QHBoxLayout()
            head_row.addWidget(head, 1)
            head_row.addWidget(caption)
            column.addLayout(head_row)
            column.addLayout(row)
            columns.addLayout(column, 1)
            self.sides[side] = {"head": head, "caption": caption, "tiles": tiles, "label": side, "index": index,
                                "figures": None, "done": 0}
        self.trace = self.scaled(DemoTrace("Latency per iteration, both sides", scheme, x_label=MEASURED_X))
        self.trace.setMinimumHeight(240)
        self.banner = self.scaled(Banner(scheme))
        self.banner.hide()
        self.body.addLayout(columns)
        self.body.addWidget(self.trace, 1)
        self.body.addWidget(self.banner)
        self.live = figures.LiveRun()
        self.verdict: dict[str, Any] | None = None
        self.running_side: str | None = None
        self.rounds = 1
        self._round = 0
        self._t0_ns: int | None = None  # the first iteration of the round that runs
        self._offset_s = 0.0  # where that round begins on the trace's measured-time axis
        self._seen = 0
        self._last_t_s = 0.0
        self._mode = "inference"

    # ---- Public API
    def begin(self, info: dict[str, Any]) -> None:
        self.title.setText(info["title"])
        specs = info.get("specs") or [{}, {}]
        self.rounds = int(info.get("rounds") or 1)
        self._mode = specs[0].get("mode") or "inference"
        self.subtitle.setText(f"{_common(specs)} · {self.rounds} round{'s' if self.rounds != 1 else ''} per side, "
                              "alternating (A B, B A …)")
        self.trace.clear()
        labels = info.get("labels") or ("A", "B")
        for side, label in zip(self.SIDES, labels, strict=True):
            parts = self.sides[side]
            parts.update(label=label, figures=None, done=0)
            parts["head"].setText(f"{side} · {label}")
            parts["caption"].setText(f"0 of {self.rounds} rounds done")
            for tile in parts["tiles"].values():
                tile.clear("waiting")
            self.trace.set_series(side, f"{side} · {label}", self.scheme.palette[parts["index"]])
        self.banner.hide()
        self.verdict, self.running_side, self._t0_ns = None, None, None
        self._offset_s, self._last_t_s = 0.0, 0.0
        self._set_status("Starting", "accent")

    def run_started(self, info: dict[str, Any]) -> None:
        side, event = info["side"], info["event"]
        self.running_side, self._round = side, int(info["round"])
        self._t0_ns = None
        self.live = figures.LiveRun(batch=int((event.get("spec") or {}).get("batch") or 1))
        self._seen = 0
        parts = self.sides[side]
        parts["caption"].setText(f"● running round {self._round + 1} of {self.rounds}")
        parts["caption"].set_role("accent")
        self._set_status(f"Round {self._round + 1} of {self.rounds} · {side} starting", "accent")

    def handle(self, event: dict[str, Any]) -> None:
        side = self.running_side
        if side is None:
            return
        kind = event.get("type")
        if kind == "latencies":
            t_ns, latency_ns = _fed_latencies(self.live, event)
            if t_ns.size:
                if self._t0_ns is None:  # rounds follow each other on the axis: only measured time is drawn
                    self._t0_ns = int(t_ns[0])
                    self.trace.add_marker(self._offset_s, f"{side}{self._round + 1}")
                x = self._offset_s + (t_ns - self._t0_ns) / 1e9
                self.trace.add_points(side, x, latency_ns / 1e6)
                self._last_t_s = float(x[-1])
        elif kind == "samples":
            self.live.add_samples(event["rows"])
        elif kind == "sources":
            self.live.sources = list(event["sources"])
        elif kind == "phase":
            title = phases.get(event["phase"]).title.lower()
            self._set_status(f"Round {self._round + 1} of {self.rounds} · {side} {title}", "accent")

    def tick(self) -> None:
        side = self.running_side
        if side is not None and self.live.iterations:
            tiles = self.sides[side]["tiles"]
            fresh = self.live.iterations != self._seen
            self._seen = self.live.iterations
            latency = self.live.latency_ms()
            tiles["latency"].set_value(latency, "ms", "live, last 1 s")
            if fresh:
                self.trace.add_median(side, self._last_t_s, latency)
            tiles["throughput"].set_value(self.live.throughput(), _throughput_unit(self._mode), "live, last 1 s")
            _show_power(tiles["power"], self.live.power(), self.live, "live, last 1 s")
        self.trace.refresh()

    def side_update(self, side: str, values: dict[str, Any]) -> None:
        """A side's figures over its completed rounds (after each of them)."""
        parts = self.sides[side]
        parts["figures"], parts["done"] = values, values["rounds"]
        self._show_side(side)

    def run_finished(self, info: dict[str, Any]) -> None:
        side = info["side"]
        parts = self.sides[side]
        record = info["record"]
        if self.running_side == side:
            self.running_side = None
        if self._t0_ns is not None:
            self._offset_s = self._last_t_s + ROUND_GAP_S
            self.trace.add_gap(side)
        if record.get("status") != "completed":
            parts["caption"].setText(f"round {info['round'] + 1} {record.get('status')}")
            parts["caption"].set_role("bad")

    def finish(self, outcome: dict[str, Any]) -> None:
        """The race ended: the verdict with its interval, or why there is none."""
        self.running_side = None
        verdict = outcome.get("verdict") or figures.no_verdict(outcome.get("message") or "the race did not finish")
        self.verdict = verdict
        self.banner.set_text(verdict["headline"], verdict["lines"], verdict["tone"])
        self.banner.show()
        for side in self.SIDES:
            if self.sides[side]["figures"] is not None:
                self._show_side(side)
        done = outcome.get("status") == "completed"
        self._set_status("Race finished" if done else "Race stopped", "good" if done else "bad")
        self.trace.refresh()

    def set_scheme(self, scheme: theme.Scheme) -> None:
        super().set_scheme(scheme)
        for side, parts in self.sides.items():
            color = scheme.palette[parts["index"]]
            parts["head"].set_role(color)
            if side in self.trace.series_keys():
                self.trace.set_series(side, f"{side} · {parts['label']}", color)

    # ---- Private API
    def _show_side(self, side: str) -> None:
        parts = self.sides[side]
        values = parts["figures"]
        if values is None:
            return
        done = parts["done"]
        caption = f"{done} round{'s' if done != 1 else ''}"
        parts["caption"].setText(f"{done} of {self.rounds} rounds done")
        parts["caption"].set_role("muted")
        tiles = parts["tiles"]
        tiles["latency"].set_value(values["latency_ms"], "ms", f"median, {caption}")
        tiles["throughput"].set_value(values["throughput"], _throughput_unit(self._mode), f"mean, {caption}")
        _show_power(tiles["power"], values["power"], self.live, f"mean, {caption}", "no power samples in the rounds")

    def _set_status(self, text: str, role: str) -> None:
        self.status.setText(text)
        self.status.set_role(role)


# ---- Helpers
def _show_power(tile: FigureTile, reading: figures.PowerReading | None, live: figures.LiveRun, what: str,
                fallback: str = "") -> None:
    """Power with its method (an estimate says so), or "not available" and why (each source's reason on
    hover), or "waiting" while no sample came yet."""
    if reading is not None:
        how = {"estimated": "TDP model: an estimate, not a measurement", "counter": "energy counter",
               "integrated": "measured power, integrated", "measured": "measured"}.get(reading.method,
                                                                                     reading.method)
        per = (f" · {format_number(reading.joules_per_inference)} J per inference"
               if reading.joules_per_inference is not None else "")
        tile.set_value(reading.watts, "W", f"{what} · {reading.scope} · {how}{per}", estimated=reading.estimated)
    elif live.power_missing():
        tile.set_unavailable(live.power_missing(), live.power_missing(detailed=True))
    elif fallback:
        tile.set_unavailable(fallback)
    else:
        tile.clear("waiting for power samples")


def _throughput_unit(mode: str) -> str:
    return "samples/s" if mode == "training" else "inferences/s"


def _describe(spec: dict[str, Any]) -> str:
    """"mlp · PyTorch · cpu · batch 8 · fp32 · single-stream" for a spec dict."""
    from engines import backends

    engine = spec.get("engine") or ""
    try:
        engine = backends.info(engine).label
    except KeyError:
        pass
    model = str(spec.get("model") or "")
    if "/" in model or os.sep in model:
        model = os.path.basename(model)
    parts = [model, engine, spec.get("target"), f"batch {spec.get('batch')}", spec.get("precision"),
             spec.get("scenario")]
    if spec.get("threads"):
        parts.append(f"{spec['threads']} threads")
    return " · ".join(str(p) for p in parts if p)


def _common(specs: list[dict[str, Any]]) -> str:
    """What both sides of a race share, in words (what differs is in the side headers)."""
    a, b = (specs + [{}, {}])[:2]
    parts = []
    for key, word in (("model", ""), ("target", ""), ("batch", "batch "), ("precision", ""), ("scenario", "")):
        if a.get(key) == b.get(key) and a.get(key) not in (None, ""):
            value = os.path.basename(str(a[key])) if key == "model" else a[key]
            parts.append(f"{word}{value}")
    return " · ".join(parts) or "two configurations"


def _fed_latencies(live: Any, event: dict[str, Any]) -> tuple[np.ndarray, np.ndarray]:
    """A "latencies" event's (t_ns, latency_ns) arrays, given to the live figures first."""
    t_ns = np.asarray(event["t_ns"], dtype=np.int64)
    latency_ns = np.asarray(event["latency_ns"], dtype=np.int64)
    live.add_latencies(t_ns, latency_ns)
    return t_ns, latency_ns
