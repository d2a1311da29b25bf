"""The Run page: set up a run, start/stop it, watch it live, read its summary."""

from __future__ import annotations

from typing import Any

from PySide6 import QtCore, QtWidgets

from console.ui.run_plots import RunPlots
from widgets.input_editor import InputEditor
from widgets.phase_progress import PhaseProgress
from widgets.run_form import RunForm
from widgets.summary_card import SummaryCard

PHASE_TEXT = {"loading": "Loading model", "warmup": "Warming up", "measuring": "Measuring",
              "finishing": "Finishing"}


class RunPage(QtWidgets.QWidget):
    """Form, progress and summary on the left; live plots on the right."""

    sig_run_requested = QtCore.Signal(dict)
    sig_stop_requested = QtCore.Signal()

    # ---- Public API
    def __init__(self, parent: QtWidgets.QWidget | None = None):
        super().__init__(parent)
        self.form = RunForm()
        self.inputs = InputEditor()
        self.progress = PhaseProgress()
        self.summary = SummaryCard()
        self.plots = RunPlots()
        left = QtWidgets.QWidget()
        left_layout = QtWidgets.QVBoxLayout(left)
        left_layout.addWidget(self.form)
        left_layout.addWidget(self.inputs)
        left_layout.addWidget(self.progress)
        left_layout.addWidget(self.summary)
        left_layout.addStretch(1)
        left.setMinimumWidth(400)
        left.setMaximumWidth(520)
        splitter = QtWidgets.QSplitter()
        splitter.addWidget(left)
        splitter.addWidget(self.plots)
        splitter.setStretchFactor(1, 1)
        layout = QtWidgets.QHBoxLayout(self)
        layout.addWidget(splitter)
        self.form.sig_run_requested.connect(lambda: self.sig_run_requested.emit(self.form.values()))
        self.form.sig_stop_requested.connect(self.sig_stop_requested)
        self.form.set_running(False)

    def handle(self, event: dict[str, Any]) -> None:
        """Route one session event (GUI thread)."""
        kind = event.get("type")
        self.plots.handle(event)
        if kind == "started":
            self.summary.clear()
            self.progress.reset()
            self.progress.set_phase("Starting worker", event["spec"]["model"])
            self.progress.set_fraction(None)
            self.form.set_running(True)
        elif kind == "phase":
            self.progress.set_phase(PHASE_TEXT.get(event["phase"], event["phase"]))
            self.progress.set_fraction(None if event["phase"] == "loading" else 0.0)
        elif kind == "progress":
            self.progress.set_fraction(event["fraction"])
        elif kind == "loaded":
            self.progress.set_phase("Loaded", f"{event['params']:,} parameters in {event['load_s']:.2f} s")
        elif kind == "finished":
            self.form.set_running(False)
            self.plots.refresh()
            self.summary.set_summary(event["summary"])
            self.progress.finish(event["status"], event["message"] or f"run {event['run_id'][:8]} {event['status']}")
            if event["status"] == "failed":
                self.summary.set_message(event["message"], error=True)
