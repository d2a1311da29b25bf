"""The Run page: set up a run, start/stop it (or analyze it), watch it live, read its summary and op profile.

The form is usable at the window's first paint: the live plots and the roofline chart (pyqtgraph, about half a
second to import and build) are built just after the page first paints, or at once when something needs them first
(a run's first event, a profile to show).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from PySide6 import QtCore, QtGui, QtWidgets

from console.analysis import finished_run, roofline
from console.analysis.summary_markdown import run_markdown
from engines import phases, scenarios
from widgets import live_plot, theme  # live_plot: its paint state now, its plots (pyqtgraph) in build_plots()
from widgets.confirm_panel import ConfirmPanel
from widgets.doctor_view import NoiseBanner
from widgets.formatting import format_number
from widgets.input_editor import InputEditor
from widgets.op_table import OpTable
from widgets.phase_progress import PhaseProgress
from widgets.run_form import RunForm
from widgets.summary_card import SummaryCard

if TYPE_CHECKING:
    from console.ui.run_plots import RunPlots
    from widgets.roofline_chart import RooflineChart


class RunPage(QtWidgets.QWidget):
    """Form, progress and summary on the left; live plots on the right, and under them, after Analyze, the op
    table of the run's profile."""

    sig_run_requested = QtCore.Signal(dict)
    sig_analyze_requested = QtCore.Signal(dict)  # the form's values; the window adds the profiling
    sig_stop_requested = QtCore.Signal()
    COPY_SHORTCUT = "Ctrl+Shift+C"  # copy the summary as Markdown; on this page it clashes with nothing

    # ---- Public API
    def __init__(self, parent: QtWidgets.QWidget | None = None):
        super().__init__(parent)
        self.form = RunForm()
        self.noise_banner = NoiseBanner()  # the Machine page's noise check found something badly off (non-blocking)
        self.inputs = InputEditor()
        self.progress = PhaseProgress()
        self.summary = SummaryCard()
        self.confirm_panel = ConfirmPanel()  # the verdict's Confirm action (console.ui.confirm_action drives it)
        self.summary.add_under_finding(self.confirm_panel)
        self.confirm_panel.hide()
        self._plots = None  # RunPlots, built by `build_plots()`
        self._roofline = None  # RooflineChart, built with the plots
        # The stored machine card for a target (efficiency and bound columns); set by the window, None: no roofs.
        self.machine_card: Callable[[str], dict[str, Any] | None] | None = None
        self.profile_box = QtWidgets.QGroupBox("Op profile")
        self.profile_caption = _WrappedCaption()
        self.profile_caption.setWordWrap(True)
        self.profile_caption.setFont(theme.font(theme.BASE_PT))
        self.ops = OpTable()
        self.ops.setMinimumHeight(120)
        self._tables = tables = QtWidgets.QHBoxLayout()  # the roofline chart joins the table when built
        tables.addWidget(self.ops, 3)
        box_layout = QtWidgets.QVBoxLayout(self.profile_box)
        box_layout.addWidget(self.profile_caption)
        box_layout.addLayout(tables, 1)  # room beyond the minimum goes to the table and the chart, not the caption
        self.profile_box.hide()
        left = QtWidgets.QWidget()
        left_layout = QtWidgets.QVBoxLayout(left)
        left_layout.addWidget(self.noise_banner)
        left_layout.addWidget(self.form)
        left_layout.addWidget(self.inputs)
        left_layout.addWidget(self.progress)
        left_layout.addWidget(self.summary)
        left_layout.addStretch(1)
        # Scrolls rather than squeezes: with a scenario's options and its summary block the column can be taller
        # than the window, and squeezed figures would overlap.
        self.left_scroll = scroll = QtWidgets.QScrollArea()
        scroll.setWidget(left)
        scroll.setWidgetResizable(True)
        scroll.setFrameShape(QtWidgets.QFrame.Shape.NoFrame)
        scroll.setHorizontalScrollBarPolicy(QtCore.Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        scroll.setMinimumWidth(420)
        scroll.setMaximumWidth(540)
        # The op table goes under the plots, at their full width: eleven columns do not fit the summary's column,
        # and the efficiency and bound columns are the point of it.
        self._right = right = QtWidgets.QSplitter(QtCore.Qt.Orientation.Vertical)
        right.addWidget(self.profile_box)  # the plots go above it (`build_plots()`)
        right.setChildrenCollapsible(False)
        # The plots and the profile scroll rather than set the page's minimum height: four plots and the op
        # profile with its roofline need ~1000 px at their smallest, more than a laptop's screen leaves the page,
        # and a window made taller than its screen hid the verdict and its Confirm button below the screen's edge.
        # Where there is room they fill the page and nothing scrolls.
        self.right_scroll = right_scroll = QtWidgets.QScrollArea()
        right_scroll.setWidget(right)
        right_scroll.setWidgetResizable(True)
        right_scroll.setFrameShape(QtWidgets.QFrame.Shape.NoFrame)
        right_scroll.setMinimumWidth(400)
        splitter = QtWidgets.QSplitter()
        splitter.addWidget(scroll)
        splitter.addWidget(right_scroll)
        splitter.setChildrenCollapsible(False)
        splitter.setStretchFactor(1, 1)
        layout = QtWidgets.QHBoxLayout(self)
        layout.addWidget(splitter)
        self.form.sig_run_requested.connect(lambda: self.sig_run_requested.emit(self.form.values()))
        self.form.sig_analyze_requested.connect(lambda: self.sig_analyze_requested.emit(self.form.values()))
        self.form.sig_stop_requested.connect(self.sig_stop_requested)
        self.form.set_running(False)
        self.last_record: dict[str, Any] | None = None  # the last finished run: what "Copy as Markdown" copies
        self._node = ""  # "on node lab-b" while a run on a lab node goes on
        self.summary.set_copy_shortcut(self.COPY_SHORTCUT)
        self.addAction(self.summary.copy_action)  # the shortcut works anywhere on the page, not only in the card
        self.summary.sig_copy_markdown_requested.connect(self.copy_markdown)
        # While a run measures the bar moves with the plots' quiet frames, not with each progress event.
        self._pending_fraction: float | None = None
        self._plots_queued = False  # `build_plots()` is queued for just after the first paint

    @property
    def plots(self) -> RunPlots:
        """The live plots, built now if they were not yet."""
        if self._plots is None:
            self.build_plots()
        return self._plots

    @property
    def roofline(self) -> RooflineChart:
        """The ops against the machine's roofs, beside the op table when a machine card gives them."""
        if self._roofline is None:
            self.build_plots()
        return self._roofline

    @property
    def plots_built(self) -> bool:
        return self._plots is not None

    def build_plots(self) -> None:
        """Build the live plots and the roofline chart (imports pyqtgraph); once."""
        if self._plots is not None:
            return
        from console.ui.run_plots import RunPlots
        from widgets.roofline_chart import RooflineChart

        self._plots = RunPlots()
        self._right.insertWidget(0, self._plots)
        self._roofline = RooflineChart()
        self._roofline.setMinimumWidth(360)
        self._roofline.hide()
        self._tables.addWidget(self._roofline, 2)
        live_plot.paint_clock().sig_tick.connect(self._show_pending_fraction)

    def paintEvent(self, event: QtGui.QPaintEvent) -> None:  # noqa: N802 — Qt override
        """The form has painted: the plots are built next, on the event loop."""
        super().paintEvent(event)
        if self._plots is None and not self._plots_queued:
            self._plots_queued = True
            QtCore.QTimer.singleShot(0, self, self.build_plots)

    def copy_markdown(self) -> str:
        """Put the last finished run's summary on the clipboard as Markdown; returns the text ("" when none)."""
        if self.last_record is None:
            return ""
        text = run_markdown(self.last_record)
        put_markdown_on_clipboard(text)
        self.summary.show_copied()
        return text

    def handle(self, event: dict[str, Any]) -> None:
        """Route one session event (GUI thread)."""
        kind = event.get("type")
        self.plots.handle(event)
        if kind == "started":
            self.last_record = None
            self._node = ""
            self.summary.clear()
            self.profile_box.hide()
            self.progress.reset()
            self.progress.set_phase(phases.START_UP.title, event["spec"]["model"])
            self.progress.set_fraction(None)
            self.form.set_running(True)
        elif kind == "node":  # a run on a lab node reached it (console.cluster)
            self._node = f"on node {node_name(event)}"
            self.progress.set_phase(phases.START_UP.title, self._node)
        elif kind == "phase":
            self._pending_fraction = None
            self.progress.set_phase(phases.get(event["phase"]).title, self._node)
            self.progress.set_fraction(None if event["phase"] == "loading" else 0.0)
        elif kind == "progress":
            self._pending_fraction = event["fraction"]
            if event.get("stabilising"):  # past its duration, measuring until stable (engines.scenarios._stability)
                from console.analysis.until_stable import progress_text

                self.progress.set_phase(phases.get("measuring").title, progress_text(event["stabilising"]))
            if live_plot.quiet_rates() is None:
                self._show_pending_fraction()
        elif kind == "loaded":
            self.progress.set_phase("Loaded", f"{event['params']:,} parameters in {event['load_s']:.2f} s")
        elif kind == "finished":
            self._pending_fraction = None
            self.last_record = event
            self.form.set_running(False)
            self.plots.refresh()
            name = (event.get("spec") or {}).get("scenario")
            self.summary.set_summary(event["summary"], scenario=name, figures=scenarios.figures_of(name))
            node = (event.get("environment") or {}).get("node")
            self.progress.finish(event["status"], event["message"] or f"run {event['run_id'][:8]} {event['status']}")
            if event["status"] == "failed":
                self.summary.set_message(event["message"], error=True)
            elif node:
                self.summary.set_message(f"Ran on node {node_name(node)} ({str(node.get('node_id'))[:8]})")
            self.show_profile(event)

    def _show_pending_fraction(self) -> None:
        if self._pending_fraction is not None:
            fraction, self._pending_fraction = self._pending_fraction, None
            self.progress.set_fraction(fraction)

    def show_profile(self, record: dict[str, Any]) -> None:
        """The op table of a profiled run (a RunSession `finished` record); hidden when the run has none."""
        profile = record.get("profile")
        if not profile:
            self.profile_box.hide()
            return
        card = finished_run.roofs_card(record, self.machine_card)  # none for a node's run: its card is not ours
        precision = str((record.get("spec") or {}).get("precision") or "fp32")
        self.ops.set_ops(finished_run.op_table(record, card))
        self._show_roofline(record.get("ops") or [], card, precision, profile.get("op_time_s"))
        self.profile_caption.setText(_caption(profile, card is not None))
        self.profile_caption.fit()
        self.profile_caption.setToolTip("\n".join(profile.get("notes") or []))
        if not self.profile_box.isVisible():
            total = sum(self._right.sizes()) or self._right.height()
            self.profile_box.show()
            self._right.setSizes([total - total * 2 // 5, total * 2 // 5])  # the table gets two fifths


    def _show_roofline(self, ops: list[dict[str, Any]], card: dict[str, Any] | None, precision: str,
                       op_time_s: float | None) -> None:
        """The ops against this machine's measured roofs; hidden without a card (nothing to draw them against)."""
        try:
            data = roofline.chart_data(ops, card, precision, op_time_s) if card and ops else None
        except roofline.RooflineError:
            data = None
        if data is None:
            self.roofline.hide()
            return
        self.roofline.set_data(data)
        self.roofline.show()


class _WrappedCaption(QtWidgets.QLabel):
    """A wrapped label whose minimum height is that of its wrapped lines. A splitter (and so the scroll area around
    the Run page's plots and profile) sizes its parts from their minimums, which count one line of a wrapped label:
    the profile box came out a line short and its bottom, the roofline's note, was cut off."""

    def fit(self) -> None:
        needed = self.heightForWidth(self.width())
        if needed > 0 and needed != self.minimumHeight():
            self.setMinimumHeight(needed)

    def resizeEvent(self, event: QtGui.QResizeEvent) -> None:
        super().resizeEvent(event)
        self.fit()


def node_name(node: dict[str, Any]) -> str:
    """A lab node as the page names it: its host name (a `node` event or a record's environment["node"])."""
    return str((node.get("host") or {}).get("hostname") or str(node.get("node_id") or "?")[:8])


def put_markdown_on_clipboard(text: str) -> None:
    """The Markdown as plain text, which every paste target takes. (Not as a QMimeData with text/markdown too:
    with PySide6 6.11 a QMimeData handed to the clipboard is freed twice when the application exits — a
    segmentation fault on quitting after a copy.)"""
    QtGui.QGuiApplication.clipboard().setText(text)


def _caption(profile: dict[str, Any], roofs: bool) -> str:
    """One line on what was profiled; the notes (how times were taken, what is missing) are its tooltip."""
    wall, inside = profile.get("wall_s") or 0.0, profile.get("op_time_s") or 0.0
    parts = [f"Profiled apart from the measurement: {profile.get('iterations')} iterations with the "
             f"{profile.get('engine', '')} profiler, {format_number(inside * 1e3)} ms inside ops"
             + (f" of {format_number(wall * 1e3)} ms ({format_number(100 * inside / wall)}%)" if wall else "")]
    if not roofs:
        parts.append("no machine card for this target: no efficiency or bound columns")
    if profile.get("trace_path"):
        parts.append(f"Chrome trace: {profile['trace_path']}")
    elif profile.get("notes"):
        parts.append(profile["notes"][-1])
    return ". ".join(part[:1].upper() + part[1:] for part in parts) + "."
