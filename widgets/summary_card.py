"""The result of a run as a few big figures.

This is the card people read from across the room: each figure has a caption, a value with three significant
digits and its unit. A value that was not measured shows "—", never 0, and notes say why a figure is missing or
weak (e.g. too few samples for a p99). Below the figures, the scenario block says what the load scenario reported:
target and achieved rate, late and dropped queries, concurrency, streams, time to first token … each with the
caption, unit and format its scenario declares (engines.figures), handed in by the page that shows the run.

"Copy as Markdown" (a button on the card, its context menu, and the shortcut a page gives it) only asks: the card
is a view and holds no run, so it emits ``sig_copy_markdown_requested`` and the page that showed the run writes
the text (``console.analysis.summary_markdown``) to the clipboard, then may call ``show_copied()``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from PySide6 import QtCore, QtGui, QtWidgets

from engines.figures import NOTES, Figures
from widgets import layouts, theme
from widgets.formatting import MISSING, format_number

# a baseline verdict as words before the baseline's id (console.analysis.compare's verdicts, and the legacy one)
RELATIONS = {"equivalent": "equally fast as", "undecided": "not told apart from",
             "no difference": "not told apart from"}


@dataclass(frozen=True)
class _FigureSpec:
    key: str  # public name, see SummaryCard.value_text
    caption: str
    unit: str
    path: tuple[str, ...]  # where the value sits in the summary dict


FIGURES = (
    _FigureSpec("p50", "p50 latency", "ms", ("latency_ms", "p50")),
    _FigureSpec("p90", "p90 latency", "ms", ("latency_ms", "p90")),
    _FigureSpec("p99", "p99 latency", "ms", ("latency_ms", "p99")),
    _FigureSpec("mean", "Mean latency", "ms", ("latency_ms", "mean")),
    _FigureSpec("throughput", "Throughput", "samples/s", ("throughput_per_s",)),
    _FigureSpec("iterations", "Iterations", "", ("iterations",)),
    _FigureSpec("duration", "Measured for", "s", ("duration_s",)),
    _FigureSpec("load", "Model load", "s", ("load_s",)),
)
MAX_NOTES = 3
COPY_TEXT = "Copy as Markdown"
COPY_TIP = ("Copy this run's summary as Markdown: figures with their intervals, validity, energy and its method, "
            "the baseline verdict, the command that reproduces it")
COPIED_MS = 2000  # how long the button says "Copied"
_COLUMNS = 2  # fits the narrow left column of the Run and History pages


def scenario_rows(scenario: dict, figures: Figures | None = None) -> list[tuple[str, str, str, str]]:
    """(key, caption, value text, tooltip) for each figure a scenario reported, as its declaration (`figures`,
    engines.figures) reads them: the declared ones in their order, then any other plain value under its own name,
    so a new scenario's figures are never hidden."""
    return [(figure.key, figure.caption, figure.text(value, format_number), _scenario_tip(figure.key, scenario))
            for figure, value in (figures or Figures()).rows(scenario)]


def _scenario_tip(key: str, scenario: dict) -> str:
    if key == "late" and scenario.get("late_threshold_ms") is not None:
        return f"issued more than {format_number(scenario['late_threshold_ms'])} ms after their scheduled time"
    if key == "dropped":
        return "still queued when the drain ended: never served, so their latencies are missing"
    if key == "warmup_elapsed_s":
        return "stabilised" if scenario.get("warmup_stabilised") else \
            f"did not stabilise within the cap of {format_number(scenario.get('warmup_cap_s'))} s"
    if key == "queue_wait_ms_p99" and scenario.get("queue_wait_ms_p50") is not None:
        return f"p50 {format_number(scenario['queue_wait_ms_p50'])} ms"
    return ""


def _lookup(summary: dict, path: tuple[str, ...]):
    value = summary
    for key in path:
        if not isinstance(value, dict):
            return None
        value = value.get(key)
    return value


class _Figure(QtWidgets.QWidget):
    """Caption over a big value and its unit."""

    def __init__(self, spec: _FigureSpec, parent: QtWidgets.QWidget | None = None):
        super().__init__(parent)
        self.spec = spec
        self._caption = QtWidgets.QLabel(spec.caption)
        self._caption.setFont(theme.font(theme.BASE_PT))
        self._caption.setStyleSheet(f"color: {theme.MUTED};")
        self._value = QtWidgets.QLabel(MISSING)
        self._value.setFont(theme.font(theme.FIGURE_PT, bold=True))
        self._value.setStyleSheet(f"color: {theme.FOREGROUND};")
        self._unit = QtWidgets.QLabel(spec.unit)
        self._unit.setFont(theme.font(theme.AXIS_LABEL_PT))
        self._unit.setStyleSheet(f"color: {theme.MUTED};")
        row = QtWidgets.QHBoxLayout()
        row.setSpacing(6)
        row.addWidget(self._value, 0, QtCore.Qt.AlignmentFlag.AlignBaseline)
        row.addWidget(self._unit, 0, QtCore.Qt.AlignmentFlag.AlignBaseline)
        row.addStretch(1)
        layout = QtWidgets.QVBoxLayout(self)
        layout.setContentsMargins(8, 4, 8, 4)
        layout.setSpacing(0)
        layout.addWidget(self._caption)
        layout.addLayout(row)
        self.set_value(None)

    def set_value(self, value, extra_tip: str = "") -> None:
        text = format_number(value)
        self._value.setText(text)
        missing = text == MISSING
        self._unit.setVisible(not missing and bool(self.spec.unit))
        if missing:
            tip = "not available"
        else:
            exact = f"{value:,}" if isinstance(value, int) else f"{float(value):.6g}"
            tip = f"{self.spec.caption}: {exact} {self.spec.unit}".rstrip()
        if extra_tip and not missing:
            tip = f"{tip}\n{extra_tip}"
        self.setToolTip(tip)

    def text(self) -> str:
        value = self._value.text()
        return value if value == MISSING or not self.spec.unit else f"{value} {self.spec.unit}"


class _ScenarioBlock(QtWidgets.QWidget):
    """The scenario's name, then a caption and a value per row, then the scenario's own notes."""

    def __init__(self, parent: QtWidgets.QWidget | None = None):
        super().__init__(parent)
        self._title = QtWidgets.QLabel()
        self._title.setFont(theme.font(theme.AXIS_LABEL_PT, bold=True))
        self._title.setStyleSheet(f"color: {theme.FOREGROUND};")
        self._grid = QtWidgets.QGridLayout()  # caption | value: one per row, so long values never clip
        self._grid.setHorizontalSpacing(12)
        self._grid.setVerticalSpacing(1)
        self._grid.setColumnStretch(1, 1)
        self._notes = QtWidgets.QLabel()
        self._notes.setWordWrap(True)
        self._notes.setFont(theme.font(theme.SMALL_PT))
        self._notes.setStyleSheet(f"color: {theme.MUTED};")
        layout = QtWidgets.QVBoxLayout(self)
        layout.setContentsMargins(8, 6, 8, 0)
        layout.setSpacing(4)
        layout.addWidget(self._title)
        layout.addLayout(self._grid)
        layout.addWidget(self._notes)
        self._values: dict[str, QtWidgets.QLabel] = {}

    def set_scenario(self, name: str | None, scenario: dict, figures: Figures | None = None) -> None:
        self._clear_rows()
        rows = scenario_rows(scenario, figures)
        notes = [str(scenario[key]) for key in NOTES if scenario.get(key)]
        if not name and not rows and not notes:
            self.hide()
            return
        self._title.setText(f"{name} scenario" if name else "Scenario")
        for i, (key, caption, text, tip) in enumerate(rows):
            label = QtWidgets.QLabel(caption)
            label.setFont(theme.font(theme.SMALL_PT))
            label.setStyleSheet(f"color: {theme.MUTED};")
            value = QtWidgets.QLabel(text)
            value.setFont(theme.font(theme.BASE_PT, bold=True))
            value.setStyleSheet(f"color: {theme.FOREGROUND};")
            for cell in (label, value):
                cell.setToolTip(tip)
            self._grid.addWidget(label, i, 0)
            self._grid.addWidget(value, i, 1)
            self._values[key] = value
        self._notes.setText("\n".join(f"• {n}" for n in notes))
        self._notes.setVisible(bool(notes))
        self.show()

    def value_text(self, key: str) -> str:
        cell = self._values.get(key)
        return cell.text() if cell is not None else ""

    def title(self) -> str:
        return self._title.text() if not self.isHidden() else ""

    def notes_text(self) -> str:
        return self._notes.text() if not self._notes.isHidden() else ""

    def _clear_rows(self) -> None:
        while self._grid.count():
            widget = self._grid.takeAt(0).widget()
            if widget is not None:
                widget.deleteLater()
        self._values.clear()


class SummaryCard(QtWidgets.QFrame):
    """p50 / p90 / p99 / mean latency, throughput, iterations, measured time and model load time of one run."""

    sig_copy_markdown_requested = QtCore.Signal()  # the page that showed the run puts its Markdown on the clipboard

    def __init__(self, parent: QtWidgets.QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("summaryCard")
        self.setStyleSheet(
            f"QFrame#summaryCard {{ background: {theme.BACKGROUND}; border: 1px solid {theme.BORDER};"
            " border-radius: 6px; }"
        )
        self._message = QtWidgets.QLabel()
        self._message.setWordWrap(True)
        self._message.setFont(theme.font(theme.AXIS_LABEL_PT, bold=True))
        self._message.setTextInteractionFlags(QtCore.Qt.TextInteractionFlag.TextSelectableByMouse)
        self._message.hide()

        self._figures: dict[str, _Figure] = {}
        grid = QtWidgets.QGridLayout()
        grid.setHorizontalSpacing(12)
        grid.setVerticalSpacing(10)
        for i, spec in enumerate(FIGURES):
            figure = _Figure(spec)
            self._figures[spec.key] = figure
            grid.addWidget(figure, i // _COLUMNS, i % _COLUMNS)
        for column in range(_COLUMNS):
            grid.setColumnStretch(column, 1)

        self._scenario = _ScenarioBlock()
        self._scenario.hide()

        self._verdict = QtWidgets.QLabel()
        self._verdict.setFont(theme.font(theme.AXIS_LABEL_PT, bold=True))
        self._verdict.setWordWrap(True)  # "VALID — stable; no drift shown, but drifts under 38% …" is read whole
        self._verdict.hide()

        self._baseline = QtWidgets.QLabel()  # the verdict against the configuration's baseline run
        self._baseline.setWordWrap(True)
        self._baseline.setFont(theme.font(theme.BASE_PT, bold=True))
        self._baseline.setTextInteractionFlags(QtCore.Qt.TextInteractionFlag.TextSelectableByMouse)
        self._baseline.hide()

        self._finding = QtWidgets.QLabel()  # the bottleneck verdict of an analysed run, in one sentence
        self._finding.setWordWrap(True)
        self._finding.setFont(theme.font(theme.BASE_PT, bold=True))
        self._finding.setTextInteractionFlags(QtCore.Qt.TextInteractionFlag.TextSelectableByMouse)
        self._finding.hide()

        self._notes = QtWidgets.QLabel()
        self._notes.setWordWrap(True)
        self._notes.setFont(theme.font(theme.SMALL_PT))
        self._notes.setStyleSheet(f"color: {theme.MUTED};")
        self._notes.setTextInteractionFlags(QtCore.Qt.TextInteractionFlag.TextSelectableByMouse)
        self._notes.hide()

        self._cores = QtWidgets.QLabel()  # environment: the worker's and the console's cores, the console's CPU
        self._cores.setObjectName("summary_cores")
        self._cores.setWordWrap(True)
        self._cores.setFont(theme.font(theme.SMALL_PT))
        self._cores.setStyleSheet(f"color: {theme.MUTED};")
        self._cores.setTextInteractionFlags(QtCore.Qt.TextInteractionFlag.TextSelectableByMouse)
        self._cores.hide()

        # Copy as Markdown: a button in the card's corner and the card's context menu; a page may add a shortcut.
        self.copy_action = QtGui.QAction(COPY_TEXT, self)
        self.copy_action.setObjectName("summary_copy_markdown")
        self.copy_action.setToolTip(COPY_TIP)
        self.copy_action.triggered.connect(self.sig_copy_markdown_requested)
        self.copy_action.setEnabled(False)
        self.addAction(self.copy_action)
        self.setContextMenuPolicy(QtCore.Qt.ContextMenuPolicy.ActionsContextMenu)
        self._copy_button = QtWidgets.QToolButton()
        self._copy_button.setObjectName("summary_copy_button")
        self._copy_button.setDefaultAction(self.copy_action)
        self._copy_button.setToolButtonStyle(QtCore.Qt.ToolButtonStyle.ToolButtonTextOnly)
        self._copy_button.setAutoRaise(True)
        self._copy_button.setFont(theme.font(theme.SMALL_PT))
        self._copy_button.setStyleSheet(f"color: {theme.MUTED};")
        corner = QtWidgets.QHBoxLayout()
        corner.setContentsMargins(0, 0, 0, 0)
        corner.addStretch(1)
        corner.addWidget(self._copy_button)

        layouts.column(self, corner, self._message, grid, self._scenario, self._verdict, self._baseline, self._finding,
                       self._notes, self._cores,
                       layouts.STRETCH,  # a tall card keeps its figures together at the top
                       margins=(12, 6, 12, 10))

    # ---- Public API
    def set_summary(self, summary: dict, scenario: str | None = None, figures: Figures | None = None) -> None:
        """Show a run summary (see the module doc for keys) of a run in the `scenario` named (its spec says which),
        its scenario block as that scenario's `figures` declare (engines.scenarios.figures_of); missing keys and None
        show "—". Clears any message."""
        summary = summary or {}
        block = summary.get("scenario") if isinstance(summary.get("scenario"), dict) else {}
        self._scenario.set_scenario(scenario, block, figures)
        latency = summary.get("latency_ms") if isinstance(summary.get("latency_ms"), dict) else {}
        range_tip = ""
        if _is_number(latency.get("min")) and _is_number(latency.get("max")):
            range_tip = f"range {format_number(latency['min'])} – {format_number(latency['max'])} ms"
        noise = _stability(summary).get("noise")  # beside every latency figure and its interval: the machine's jitter
        if _is_number(noise):
            range_tip = "\n".join(filter(None, [range_tip, f"machine noise {noise:.0%} between windows"]))
        for spec in FIGURES:
            tip = range_tip if spec.path[0] == "latency_ms" else ""
            self._figures[spec.key].set_value(_lookup(summary, spec.path), tip)
        notes = [str(n) for n in (summary.get("notes") or [])]
        shown = notes[:MAX_NOTES]
        if len(notes) > MAX_NOTES:
            shown.append(f"… and {len(notes) - MAX_NOTES} more (hover to read all)")
        self._notes.setText("\n".join(f"• {n}" for n in shown))
        self._notes.setToolTip("\n".join(f"• {n}" for n in notes))
        self._notes.setVisible(bool(notes))
        self._show_verdict(summary)
        self._show_baseline(summary.get("baseline"))
        self._show_finding(summary.get("bottleneck"))
        self._show_cores(summary.get("partition"), summary.get("console_cpu"))
        self._message.hide()
        self.copy_action.setEnabled(True)

    def add_under_finding(self, widget: QtWidgets.QWidget) -> None:
        """Put `widget` right under the bottleneck verdict (the Confirm action: its outcome belongs beside the
        sentence it confirms or refutes); the page shows and hides it."""
        layout = self.layout()
        layout.insertWidget(layout.indexOf(self._finding) + 1, widget)

    def _show_cores(self, partition: dict | None, console_cpu: dict | None) -> None:
        """"Cores: worker CPUs 1, console CPUs 0 … · the console used 3.1% of a core while measuring"."""
        text = (partition or {}).get("text") if isinstance(partition, dict) else None
        percent = (console_cpu or {}).get("percent_of_core") if isinstance(console_cpu, dict) else None
        parts = [f"Cores: {text}"] if text else []
        if _is_number(percent):
            parts.append(f"the console used {percent:.1f}% of a core while measuring")
        self._cores.setText(" · ".join(parts))
        self._cores.setToolTip(str((partition or {}).get("cost") or "") if isinstance(partition, dict) else "")
        self._cores.setVisible(bool(parts))

    def _show_finding(self, verdict: dict | None) -> None:
        """What holds the run back (analysed runs): the sentence, its evidence and lever on hover."""
        if not isinstance(verdict, dict) or not verdict.get("sentence"):
            self._finding.hide()
            return
        self._finding.setText(verdict["sentence"])  # it names the class and the confidence itself
        evidence = "\n".join(f"{k}: {format_number(v) if _is_number(v) else v}"
                             for k, v in (verdict.get("evidence") or {}).items())
        self._finding.setToolTip("\n".join(filter(None, [
            f"Recommendation: {verdict.get('recommendation', '')}", evidence,
            f"Runner-up: {verdict['secondary']}" if verdict.get("secondary") else ""])))
        self._finding.show()

    def _show_baseline(self, block: dict | None) -> None:
        """Faster / slower / equally fast as the configuration's baseline, or not told apart from it, with the
        ratio's interval; what changed around the measurement (versions, driver) and the explanation on hover.
        ("no difference", stored by older versions, meant "not shown different": said as not told apart.)"""
        if not isinstance(block, dict) or not block.get("run_id"):
            self._baseline.hide()
            return
        verdict, short = block.get("verdict"), str(block["run_id"])[:8]
        ci95 = block.get("ci95") or [None, None]
        if verdict and _is_number(block.get("ratio")) and all(_is_number(v) for v in ci95):
            relation = RELATIONS.get(verdict, f"{verdict} than")
            text = (f"vs baseline: {relation} {short} — ×{block['ratio']:.3f} "
                    f"(95% CI {ci95[0]:.3f}–{ci95[1]:.3f})")
            color = {"slower": theme.BAD, "faster": theme.GOOD}.get(verdict, theme.FOREGROUND)
        else:
            text, color = f"vs baseline {short}: not compared", theme.MUTED
        self._baseline.setText(text)
        self._baseline.setStyleSheet(f"color: {color};")
        changed = [f"{c['field']}: {c.get('a')} → {c.get('b')}" for c in block.get("changed") or []]
        self._baseline.setToolTip("\n".join(filter(None, [
            str(block.get("explanation") or ""),
            f"block test p = {block['p_value']:.2g}" if _is_number(block.get("p_value")) else "",
            "What changed: " + "; ".join(changed) if changed else ""])))
        self._baseline.show()

    def baseline_text(self) -> str:
        return self._baseline.text() if not self._baseline.isHidden() else ""

    def finding_text(self) -> str:
        return self._finding.text() if not self._finding.isHidden() else ""

    def _show_verdict(self, summary: dict) -> None:
        """VALID / INVALID in the words of MLPerf LoadGen: a number is only as good as the rules it passed."""
        if "valid" not in summary:
            self._verdict.hide()
            return
        failed = len(summary.get("invalid_reasons") or [])
        valid = bool(summary["valid"])
        self._verdict.setText("VALID" if valid else f"INVALID — {failed} rule{'s' * (failed != 1)} not met")
        stability = _stability(summary)  # console.analysis.drift: stable / jittery machine (noise 15%), no drift / …
        if valid and stability.get("text") and stability.get("text") != "stable":  # "stable; drifts under 25% …"
            self._verdict.setText(f"VALID — {stability['text']}")
        self._verdict.setToolTip(str(stability.get("text") or ""))
        self._verdict.setStyleSheet(f"color: {theme.GOOD if valid else theme.BAD};")
        self._verdict.show()

    def clear(self) -> None:
        """Back to the empty card: every figure "—", no notes, no message."""
        for figure in self._figures.values():
            figure.set_value(None)
        self._scenario.set_scenario(None, {})
        self._notes.clear()
        self._notes.hide()
        self._verdict.hide()
        self._baseline.hide()
        self._finding.hide()
        self._cores.clear()
        self._cores.hide()
        self._message.clear()
        self._message.hide()
        self.copy_action.setEnabled(False)

    def set_message(self, text: str, error: bool = False) -> None:
        """A line above the figures, e.g. why a run failed (red when ``error``). Figures are left as they are."""
        color = theme.STATUS_COLORS["failed"] if error else theme.FOREGROUND
        self._message.setStyleSheet(f"color: {color};")
        self._message.setText(text)
        self._message.setVisible(bool(text))
        if text:
            self.copy_action.setEnabled(True)  # a failed run's error and its command are worth sharing too

    def set_copy_shortcut(self, shortcut: str | None) -> None:
        """Give "Copy as Markdown" a shortcut while the focus is in the card (None: none, where it would clash)."""
        self.copy_action.setShortcut(QtGui.QKeySequence(shortcut) if shortcut else QtGui.QKeySequence())
        self.copy_action.setShortcutContext(QtCore.Qt.ShortcutContext.WidgetWithChildrenShortcut)
        self.copy_action.setToolTip(f"{COPY_TIP} ({shortcut})" if shortcut else COPY_TIP)

    def show_copied(self) -> None:
        """Say on the button, for a moment, that the Markdown is on the clipboard."""
        self.copy_action.setText("Copied ✓")
        QtCore.QTimer.singleShot(COPIED_MS, self, lambda: self.copy_action.setText(COPY_TEXT))

    def value_text(self, key: str) -> str:
        """What a figure shows, e.g. value_text("p50") == "12.3 ms"; keys: p50 p90 p99 mean throughput iterations
        duration load."""
        return self._figures[key].text()

    def scenario_title(self) -> str:
        """"server scenario", or "" when no scenario block is shown."""
        return self._scenario.title()

    def scenario_text(self, key: str) -> str:
        """What the scenario block shows for a key of the summary's "scenario" dict, e.g. "40 queries/s"; "" if
        not shown."""
        return self._scenario.value_text(key)

    def scenario_notes(self) -> str:
        return self._scenario.notes_text()

    def figure_tooltip(self, key: str) -> str:
        return self._figures[key].toolTip()

    def verdict_text(self) -> str:
        """VALID / VALID — jittery machine (noise 15%), no drift / INVALID — n rules not met; "" when hidden."""
        return self._verdict.text() if not self._verdict.isHidden() else ""

    def verdict_tooltip(self) -> str:
        return self._verdict.toolTip()

    def notes_text(self) -> str:
        return self._notes.text() if self._notes.isVisibleTo(self) else ""

    def message_text(self) -> str:
        return self._message.text() if self._message.isVisibleTo(self) else ""

    def cores_text(self) -> str:
        """The environment line: both core sets (or not confined, why) and the console's CPU while measuring."""
        return self._cores.text() if self._cores.isVisibleTo(self) else ""


def _stability(summary: dict) -> dict:
    """summary.validity.stability (the drift verdict, its text and the machine's noise), {} when absent."""
    validity = summary.get("validity") if isinstance(summary.get("validity"), dict) else {}
    return validity.get("stability") if isinstance(validity.get("stability"), dict) else {}


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
