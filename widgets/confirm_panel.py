"""The Confirm action beside a run's bottleneck verdict: the button, the confirmation's progress and Cancel while
it runs, then its outcome and its experiments.

A view only (no console, no engines): the window's console.ui.confirm_action decides whether the button is
enabled (and says why not), runs the rounds and hands the words and table rows here. Why a panel of its own under
the verdict rather than a dialog: the outcome belongs next to the sentence it confirms or refutes, on the Run page
for a run just analysed and on the History page when the run is opened again.
"""

from __future__ import annotations

from PySide6 import QtCore, QtGui, QtWidgets

from widgets import layouts, theme

BUTTON_TEXT = "Confirm verdict"
MIN_CAP, MAX_CAP = 2, 50  # rounds a side: a paired interval needs two; fifty pairs is several minutes an experiment
# outcome (console.analysis.confirm.outcome) → the colour its headline takes
_OUTCOME_COLOURS = {"confirmed": "good", "refuted": "bad", "undecided": "warn", "failed": "bad"}


def _colour(outcome: str) -> str:
    kind = _OUTCOME_COLOURS.get(outcome, "muted")
    return {"good": theme.GOOD, "bad": theme.BAD, "muted": theme.MUTED,
            "warn": theme.STATUS_COLORS.get("interrupted", theme.BAD)}[kind]


class ConfirmPanel(QtWidgets.QWidget):
    """[Confirm verdict] (and a muted reason when it cannot run), progress and [Cancel] while it runs, then the
    outcome headline, its sentence and the experiments table (intervention, predicted, measured, rounds,
    outcome)."""

    sig_confirm_requested = QtCore.Signal()
    sig_cancel_requested = QtCore.Signal()
    sig_rounds_changed = QtCore.Signal(int)  # the cap on rounds a side per experiment, as the user set it

    # ---- Public API
    def __init__(self, parent: QtWidgets.QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("confirm_panel")
        self.button = QtWidgets.QPushButton(BUTTON_TEXT)
        self.button.setObjectName("confirm_button")
        self.button.setSizePolicy(QtWidgets.QSizePolicy.Policy.Maximum, QtWidgets.QSizePolicy.Policy.Fixed)
        self.button.clicked.connect(self.sig_confirm_requested)
        self.cancel_button = QtWidgets.QPushButton("Cancel")
        self.cancel_button.setObjectName("confirm_cancel")
        self.cancel_button.setSizePolicy(QtWidgets.QSizePolicy.Policy.Maximum, QtWidgets.QSizePolicy.Policy.Fixed)
        self.cancel_button.setToolTip("Stop the confirmation: the round measuring now is cancelled and nothing is "
                                      "stored (Esc)")
        self.cancel_button.clicked.connect(self.sig_cancel_requested)
        self.cancel_button.hide()
        self._reason = self._label(theme.SMALL_PT, muted=True, name="confirm_reason")
        self.rounds = QtWidgets.QSpinBox()
        self.rounds.setObjectName("confirm_rounds")
        self.rounds.setRange(MIN_CAP, MAX_CAP)
        self.rounds.setPrefix("≤ ")
        self.rounds.setSuffix(" rounds a side")
        self.rounds.setToolTip("At most this many interleaved rounds of each side per experiment: more rounds "
                               "answer on a noisier machine and take longer (about 5 s a pair)")
        self.rounds.setSizePolicy(QtWidgets.QSizePolicy.Policy.Maximum, QtWidgets.QSizePolicy.Policy.Fixed)
        self.rounds.valueChanged.connect(self.sig_rounds_changed)
        row = QtWidgets.QHBoxLayout()
        row.setContentsMargins(0, 0, 0, 0)
        left = QtCore.Qt.AlignmentFlag.AlignLeft
        row.addWidget(self.button, 0, left)
        row.addWidget(self.rounds, 0, left)
        row.addWidget(self.cancel_button, 0, left)
        row.addWidget(self._reason, 1)
        self._progress_text = self._label(theme.SMALL_PT, muted=False, name="confirm_progress")
        self.bar = QtWidgets.QProgressBar()
        self.bar.setObjectName("confirm_bar")
        self.bar.setRange(0, 1000)
        self.bar.setTextVisible(False)
        self.bar.setMaximumHeight(6)
        self.bar.hide()
        self._headline = self._label(theme.BASE_PT, muted=False, name="confirm_headline", bold=True)
        self._sentence = self._label(theme.SMALL_PT, muted=False, name="confirm_sentence")
        self.table = QtWidgets.QTableWidget(0, 0)
        self.table.setObjectName("confirm_table")
        self.table.setEditTriggers(QtWidgets.QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.setSelectionMode(QtWidgets.QAbstractItemView.SelectionMode.NoSelection)
        self.table.setFocusPolicy(QtCore.Qt.FocusPolicy.NoFocus)
        self.table.verticalHeader().hide()
        self.table.setWordWrap(True)
        self.table.setFont(theme.font(theme.SMALL_PT))
        self.table.horizontalHeader().setFont(theme.font(theme.SMALL_PT))
        self.table.horizontalHeader().setStretchLastSection(True)
        self.table.horizontalHeader().setDefaultAlignment(QtCore.Qt.AlignmentFlag.AlignLeft
                                                          | QtCore.Qt.AlignmentFlag.AlignVCenter)
        self.table.setVerticalScrollBarPolicy(QtCore.Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        # sized to its rows, so no scroll bars: the figures are two lines each to fit the card's width
        self.table.setHorizontalScrollBarPolicy(QtCore.Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.table.hide()
        self._notes = self._label(theme.SMALL_PT, muted=True, name="confirm_notes")
        layouts.column(self, row, self._progress_text, self.bar, self._headline, self._sentence, self.table,
                       self._notes, margins=(0, 2, 0, 2), spacing=4)

    def set_available(self, available: bool, why: str = "", tip: str = "") -> None:
        """Enable the button, or disable it with `why` on hover and in muted words beside it."""
        self.button.setEnabled(available)
        self.rounds.setVisible(available)  # the cap means something only where a confirmation can start
        self.button.setToolTip(tip if available else why)
        self._reason.setText("" if available else why)
        self._reason.setToolTip(why)
        self._reason.setVisible(bool(not available and why))

    def set_rounds(self, rounds: int) -> None:
        """Show the cap without announcing it (the action that set it knows)."""
        blocked = self.rounds.blockSignals(True)
        self.rounds.setValue(int(rounds))
        self.rounds.blockSignals(blocked)

    def show_progress(self, text: str, fraction: float | None = None) -> None:
        """While the rounds run: the line (which experiment, which round of how many) and the bar (None: busy)."""
        self.button.hide()
        self.rounds.hide()
        self._reason.hide()
        self.cancel_button.show()
        self.cancel_button.setEnabled(True)
        self._progress_text.setText(text)
        self._progress_text.show()
        if fraction is None:
            self.bar.setRange(0, 0)
        else:
            self.bar.setRange(0, 1000)
            self.bar.setValue(int(1000 * min(max(fraction, 0.0), 1.0)))
        self.bar.show()

    def show_cancelling(self) -> None:
        self.cancel_button.setEnabled(False)
        self._progress_text.setText("Cancelling: the round measuring now is being stopped…")

    def end_progress(self) -> None:
        """The rounds are over (done, failed or cancelled): the button comes back."""
        self.cancel_button.hide()
        self.bar.hide()
        self._progress_text.hide()
        self.button.show()
        self.rounds.setVisible(self.button.isEnabled())

    def show_result(self, outcome: str, headline: str, sentence: str = "", headers: list[str] | None = None,
                    rows: list[list[str]] | None = None, notes: list[str] | None = None) -> None:
        """The outcome's headline (coloured by `outcome`), its sentence, the experiments and the notes."""
        self._headline.setText(headline)
        self._headline.setStyleSheet(f"color: {_colour(outcome)};")
        self._headline.show()
        self._sentence.setText(sentence)
        self._sentence.setVisible(bool(sentence))
        self._fill(headers or [], rows or [])
        self._notes.setText("\n".join(f"• {n}" for n in notes or []))
        self._notes.setVisible(bool(notes))

    def clear_result(self) -> None:
        for label in (self._headline, self._sentence, self._notes, self._progress_text):
            label.clear()
            label.hide()
        self.table.setRowCount(0)
        self.table.hide()

    # Read back (tests, and a page that copies what is shown)
    def headline_text(self) -> str:
        return self._headline.text() if not self._headline.isHidden() else ""

    def sentence_text(self) -> str:
        return self._sentence.text() if not self._sentence.isHidden() else ""

    def progress_text(self) -> str:
        return self._progress_text.text() if not self._progress_text.isHidden() else ""

    def reason_text(self) -> str:
        return self._reason.text() if not self._reason.isHidden() else ""

    def notes_text(self) -> str:
        return self._notes.text() if not self._notes.isHidden() else ""

    def cell_text(self, row: int, column: int) -> str:
        item = self.table.item(row, column)
        return item.text().replace("\n", " ") if item is not None else ""  # as one line

    # ---- Private API
    def _fill(self, headers: list[str], rows: list[list[str]]) -> None:
        self.table.clear()
        self.table.setColumnCount(len(headers))
        self.table.setHorizontalHeaderLabels(headers)
        self.table.setRowCount(len(rows))
        for r, row in enumerate(rows):
            for c, text in enumerate(row):
                item = QtWidgets.QTableWidgetItem(text)
                item.setToolTip(text.replace("\n", " "))
                if c == len(row) - 1 and rows:  # the outcome cell takes its colour
                    colour = {"as predicted": theme.GOOD, "not as predicted": theme.BAD}.get(text.replace("\n", " "))
                    if colour:
                        item.setForeground(QtGui.QColor(colour))
                self.table.setItem(r, c, item)
        self.table.setVisible(bool(rows))
        if rows:  # sized from the text itself: a view not shown yet has no size hints to resize to
            cells = QtGui.QFontMetrics(self.table.font())
            heads = QtGui.QFontMetrics(self.table.horizontalHeader().font())
            for c, header in enumerate(headers):
                wide = max([heads.horizontalAdvance(line) for line in header.split("\n")]
                           + [cells.horizontalAdvance(line) for row in rows for line in row[c].split("\n")])
                self.table.setColumnWidth(c, wide + 10)
            for r, row in enumerate(rows):
                self.table.setRowHeight(r, max(t.count("\n") + 1 for t in row) * cells.lineSpacing() + 8)
            head = max(h.count("\n") + 1 for h in headers) * heads.lineSpacing() + 10
            self.table.horizontalHeader().setFixedHeight(head)
            height = head + sum(self.table.rowHeight(r) for r in range(len(rows)))
            self.table.setFixedHeight(height + 2 * self.table.frameWidth() + 2)

    def _label(self, points: int, muted: bool, name: str, bold: bool = False) -> QtWidgets.QLabel:
        label = QtWidgets.QLabel()
        label.setObjectName(name)
        label.setWordWrap(True)
        label.setFont(theme.font(points, bold=bold))
        label.setTextInteractionFlags(QtCore.Qt.TextInteractionFlag.TextSelectableByMouse)
        if muted:
            label.setStyleSheet(f"color: {theme.MUTED};")
        label.hide()
        return label
