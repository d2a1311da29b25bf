"""The Machine page: the machine cards of every host in the history side by side, and a Measure button that
measures this host's card for a target in a worker (about a minute) and keeps it in the history.

Measuring shares the machine with nothing: it is refused while a run or a sweep measures, since each would
disturb the other's figures.

Under the cards, "What adds noise here" shows `engines.doctor`'s checks (governor, turbo, SMT, VM and steal,
other processes, swap, thermal, power profile) with their fixes. They run on a thread (about a second of
sampling), never while something measures, and `sig_doctor_report` hands each report to the window, whose Run page
warns when something is badly off.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from PySide6 import QtCore, QtWidgets

from console.machine.cards import default_storage_dir, latest_cards, measure
from console.machine.table import view_columns
from console.ui.background import BackgroundCall
from console.ui.pages import PageContext
from console.ui.workspace import MACHINE
from widgets.doctor_view import DoctorView
from widgets.machine_card_view import MachineCardView

EMPTY_TEXT = ("No machine card in the history yet. Choose a target and a storage directory, then press Measure "
              "(about a minute; or run `labconsole machine --refresh`).")


DOCTOR_SAMPLE_S = 1.0


def diagnose_machine() -> dict[str, Any]:
    """This machine's noise check (engines.doctor; reads /proc and /sys, samples other processes for a second)."""
    from engines.doctor import diagnose

    return diagnose(sample_s=DOCTOR_SAMPLE_S)


class MachinePage(QtWidgets.QWidget):
    sig_progress = QtCore.Signal(str)  # from the measuring thread; delivered on the GUI thread
    sig_doctor_report = QtCore.Signal(object)  # each noise check's report (engines.doctor), on the GUI thread

    def __init__(self, context: PageContext, measure_card: Callable[..., dict[str, Any]] = measure,
                 diagnose: Callable[[], dict[str, Any]] = diagnose_machine):
        super().__init__()
        self._context, self._workspace = context, context.workspace
        self._measure_card = measure_card
        self._diagnose = diagnose
        self._doctor_call: BackgroundCall | None = None
        self.doctor_report: dict[str, Any] | None = None  # the latest noise check
        self._started = 0.0
        self._call: BackgroundCall | None = None

        self.target = QtWidgets.QComboBox()
        self.target.setToolTip("the target whose ceilings to measure")
        self.storage = QtWidgets.QLineEdit(str(default_storage_dir()))
        self.storage.setToolTip("the directory whose sequential read throughput is measured (a test file is "
                                "written there, read back cold and deleted)")
        choose = QtWidgets.QPushButton("Choose…")
        choose.clicked.connect(self._choose_storage)
        self.measure_button = QtWidgets.QPushButton("Measure")
        self.measure_button.setToolTip("measure this host's ceilings for the target now and keep them in the history")
        self.measure_button.clicked.connect(self.start_measuring)
        self.progress = QtWidgets.QLabel("")
        self.progress.setWordWrap(True)
        self.view = MachineCardView()

        controls = QtWidgets.QHBoxLayout()
        controls.addWidget(QtWidgets.QLabel("Target"))
        controls.addWidget(self.target)
        controls.addSpacing(12)
        controls.addWidget(QtWidgets.QLabel("Storage directory"))
        controls.addWidget(self.storage, 1)
        controls.addWidget(choose)
        controls.addSpacing(12)
        controls.addWidget(self.measure_button)
        self.doctor = DoctorView()
        self.check_button = QtWidgets.QPushButton("Check again")
        self.check_button.setToolTip("read what on this machine adds noise to measurements now (about a second; "
                                     "nothing is changed)")
        self.check_button.clicked.connect(self.check_machine)
        noise = QtWidgets.QGroupBox("What adds noise here")
        noise_layout = QtWidgets.QVBoxLayout(noise)
        noise_layout.addWidget(self.doctor, 1)
        noise_layout.addWidget(self.check_button, 0, QtCore.Qt.AlignmentFlag.AlignRight)
        split = QtWidgets.QSplitter(QtCore.Qt.Orientation.Vertical)
        split.addWidget(self.view)
        split.addWidget(noise)
        split.setChildrenCollapsible(False)
        split.setStretchFactor(0, 3)
        split.setStretchFactor(1, 2)
        layout = QtWidgets.QVBoxLayout(self)
        layout.addLayout(controls)
        layout.addWidget(self.progress)
        layout.addWidget(split, 1)

        self.sig_progress.connect(self._show_progress)
        self.target.addItem("cpu")  # the discovered targets are read when the page is shown: the window may
        self.reload()               # still be building itself now
        if not self._workspace.usable:
            self.measure_button.setEnabled(False)
            self.progress.setText(f"The history cannot be opened, so nothing can be measured: "
                                  f"{self._workspace.startup_error}")

    # ---- Public API
    def reload(self) -> None:
        """Show the newest card of every host and target in the history."""
        store = self._workspace.store
        cards = latest_cards(store) if store is not None else []
        columns, rows = view_columns(cards)
        self.view.set_cards(columns, rows, EMPTY_TEXT)

    def start_measuring(self) -> None:
        """Measure the chosen target's card in the background; the progress line says what is being measured."""
        if self._call is not None:
            return
        self._fill_targets()
        target, directory = self.target.currentText() or "cpu", self.storage.text().strip()
        if not directory:
            self.progress.setText("Choose a storage directory first (its sequential read is part of the card).")
            return
        # a run or sweep now would disturb the ceilings, and the reverse
        if not self._workspace.claim_or_say(MACHINE, self.progress.setText):
            return
        self.measure_button.setEnabled(False)
        self._started = time.monotonic()
        self.progress.setText(f"Measuring {target}: starting a worker…")
        self._call = BackgroundCall(self, self._measured, self._failed)
        self._call.start(self._measure_card, target, directory, 5, False, self.sig_progress.emit)

    @property
    def measuring(self) -> bool:
        return self._call is not None

    def check_machine(self) -> bool:
        """Read what adds noise on this machine, on a thread; False (with the reason shown) when it cannot now:
        a check already under way, or something measuring (the check would read the run as noise, and its
        sampling would cost the run CPU)."""
        if self._doctor_call is not None:
            return False
        busy = self._workspace.measuring
        if busy is not None:
            self.doctor.set_message(f"Not checked now: a {busy} is measuring (the check would count it as noise). "
                                    "Press Check again when it has ended.")
            return False
        self.check_button.setEnabled(False)
        self.doctor.set_message("Checking what adds noise on this machine…")
        self._doctor_call = BackgroundCall(self, self._diagnosed, self._diagnosis_failed)
        self._doctor_call.start(self._diagnose)
        return True

    @property
    def checking(self) -> bool:
        return self._doctor_call is not None

    # ---- Private API
    def showEvent(self, event) -> None:  # noqa: N802 — Qt's name
        self._fill_targets()
        super().showEvent(event)

    def _fill_targets(self) -> None:
        """cpu and every usable CUDA device discovered so far (a machine card measures those two kinds)."""
        found = ["cpu"] + [t["id"] for t in self._context.targets()
                           if t.get("kind") == "cuda" and t.get("available") and t.get("id")]
        current = self.target.currentText()
        if found != [self.target.itemText(i) for i in range(self.target.count())]:
            self.target.clear()
            self.target.addItems(found)
            if current in found:
                self.target.setCurrentText(current)

    def _choose_storage(self) -> None:
        chosen = QtWidgets.QFileDialog.getExistingDirectory(self, "Directory whose read throughput to measure",
                                                            self.storage.text())
        if chosen:
            self.storage.setText(chosen)

    def _show_progress(self, text: str) -> None:
        if self._call is not None:
            self.progress.setText(f"Measuring {self.target.currentText()}: {text} "
                                  f"({time.monotonic() - self._started:.0f} s)")

    def _measured(self, card: dict[str, Any]) -> None:
        self._call = None
        self._workspace.release(MACHINE)
        self.measure_button.setEnabled(True)
        writer = self._workspace.writer
        writer.add_machine_card(card)
        stored = writer.flush()
        self.reload()
        took = time.monotonic() - self._started
        self.progress.setText(f"Measured {card.get('target')} in {took:.0f} s" +
                              ("" if stored else " — but it could not be stored in the history (see the status bar)"))

    def _failed(self, message: str) -> None:
        self._call = None
        self._workspace.release(MACHINE)
        self.measure_button.setEnabled(True)
        self.progress.setText(f"Measuring failed: {message}")

    def _diagnosed(self, report: dict[str, Any]) -> None:
        from engines.doctor import summary_line

        self._doctor_call = None
        self.check_button.setEnabled(True)
        self.doctor_report = report
        when = str(report.get("measured_at", "?")).replace("T", " ").removesuffix("Z")
        self.doctor.set_report(report, f"Checked at {when} UTC: {summary_line(report)}. The console changes none "
                                       "of these settings: each fix is yours to apply (same checks: labconsole "
                                       "doctor).")
        self.sig_doctor_report.emit(report)

    def _diagnosis_failed(self, message: str) -> None:
        self._doctor_call = None
        self.check_button.setEnabled(True)
        self.doctor.set_message(f"Checking the machine failed: {message}")

    def shutdown(self) -> None:
        """Drop results still to come (the window is closing): a thread must not deliver to a deleted page."""
        for call in (self._call, self._doctor_call):
            if call is not None:
                call.stop()

    def closeEvent(self, event) -> None:  # noqa: N802 — Qt's name
        self.shutdown()
        super().closeEvent(event)
