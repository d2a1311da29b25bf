"""The History page: every stored run and every sweep, newest first, filtered, tagged, compared, re-run.

Double-clicking a run re-opens its summary and plots from the database; double-clicking a sweep asks the window to
show it on the Sweeps page, where its charts and knee live. The filters (model, engine, target, precision, dates,
tag, valid) are a history query, remembered between sessions. Several runs selected → Compare (the Compare page);
one run → Set as baseline (of its configuration), Re-run (its stored spec, through the window's start-run path,
refused while something measures), Tags and note; any number → Delete (asks first, naming how many; a run a
console is recording is refused with the fix).

Shortcuts work while the page has the focus: Ctrl+Shift+C compare, Ctrl+B baseline, Ctrl+E re-run, Ctrl+T tags
and note, F2 edits the Tags or Note cell in place, Enter opens the run, Delete deletes the selected runs.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import date, datetime, time, timedelta, timezone
from typing import Any

from PySide6 import QtCore, QtGui, QtWidgets

from console.analysis.summary_markdown import run_markdown
from console.history import HistoryError, HistoryStore, damage
from console.ui.run_page import put_markdown_on_clipboard
from console.ui.run_plots import RunPlots
from console.ui.settings import Settings
from engines import scenarios
from widgets import theme
from widgets.confirm_panel import ConfirmPanel
from widgets.history_filters import HistoryFilters
from widgets.history_table import HistoryTable
from widgets.summary_card import SummaryCard
from widgets.sweep_table import SweepTable
from widgets.tags_dialog import TagsNoteDialog

SWEEPS_LISTED = 200
MAX_COMPARED = 10  # one colour each (the theme's palette), and a legend that still reads
SHORTCUTS = {"compare": "Ctrl+Shift+C", "baseline": "Ctrl+B", "rerun": "Ctrl+E", "tags": "Ctrl+T",
             "report": "Ctrl+Shift+P", "delete": "Delete"}


def store_filters(values: dict[str, Any]) -> dict[str, Any]:
    """The filter bar's values → HistoryStore.list_runs / run_rows keywords. Days are local calendar days, both
    included; the history keeps UTC times, so each bound is the local midnight converted to UTC."""
    query = {name: values.get(name) for name in ("model", "engine", "target", "precision", "tag", "valid")}
    if values.get("since"):
        query["since"] = _utc_midnight(date.fromisoformat(values["since"]))
    if values.get("until"):  # the store's `until` is exclusive: the day after, at midnight
        query["until"] = _utc_midnight(date.fromisoformat(values["until"]) + timedelta(days=1))
    return {name: value for name, value in query.items() if value is not None}


def confirm_delete(parent: QtWidgets.QWidget, count: int) -> bool:
    """Ask before runs are deleted (there is no undo), naming how many; No is the default answer."""
    runs = f"{count} run" + ("" if count == 1 else "s")
    box = QtWidgets.QMessageBox(
        QtWidgets.QMessageBox.Icon.Warning, "Delete runs",
        f"Delete {runs} from the history? Their latencies, telemetry, profiles, tags and notes go with them, and "
        "so does a baseline that is one of them. This cannot be undone.",
        QtWidgets.QMessageBox.StandardButton.Yes | QtWidgets.QMessageBox.StandardButton.No, parent)
    box.setObjectName("history_delete_confirm")
    box.setDefaultButton(QtWidgets.QMessageBox.StandardButton.No)
    box.button(QtWidgets.QMessageBox.StandardButton.Yes).setText(f"Delete {runs}")
    return box.exec() == QtWidgets.QMessageBox.StandardButton.Yes


def _utc_midnight(day: date) -> str:
    local = datetime.combine(day, time()).astimezone()  # a naive time is taken as local
    return local.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S")


class HistoryPage(QtWidgets.QWidget):
    """Runs and Sweeps tabs on top; the selected run's summary and plots below, read back from SQLite."""

    sig_error = QtCore.Signal(str)
    sig_sweep_activated = QtCore.Signal(str)  # sweep_id: the window opens it on the Sweeps page
    sig_compare_requested = QtCore.Signal(list)  # run ids, in the table's order: the window opens the Compare page
    sig_rerun_requested = QtCore.Signal(dict)  # a stored run's spec: the window starts it like the Run page does
    sig_report_requested = QtCore.Signal(list)  # run ids, in the table's order: the window writes their report
    sig_run_opened = QtCore.Signal(object)  # the run just opened, the page's own dict: the Confirm action updates it
    sig_runs_deleted = QtCore.Signal(list)  # run ids just deleted from the history: pages showing them can let go

    # ---- Public API
    def __init__(self, store: HistoryStore | None, parent: QtWidgets.QWidget | None = None,
                 measuring: Callable[[], str | None] = lambda: None):
        super().__init__(parent)
        self._store = store
        self._measuring = measuring  # what measures now ("run", "sweep" …), or None: Delete waits for it
        self._settings = Settings()
        self.filters = HistoryFilters()
        self.table = HistoryTable()
        self.sweeps = SweepTable()
        self.message = QtWidgets.QLabel("")
        self.message.setObjectName("history_message")
        self.message.setWordWrap(True)
        self.message.setStyleSheet(f"color: {theme.MUTED};")
        self.actions_: dict[str, QtGui.QAction] = {}
        runs = QtWidgets.QWidget()
        runs_layout = QtWidgets.QVBoxLayout(runs)
        runs_layout.setContentsMargins(0, 4, 0, 0)
        runs_layout.addWidget(self.filters)
        runs_layout.addLayout(self._action_row())
        runs_layout.addWidget(self.table, 1)
        self.sections = QtWidgets.QTabWidget()
        self.sections.setDocumentMode(True)
        self.sections.addTab(runs, "Runs")
        self.sections.addTab(self.sweeps, "Sweeps")
        self.summary = SummaryCard()
        self.confirm_panel = ConfirmPanel()  # the verdict's Confirm action (console.ui.confirm_action drives it)
        self.summary.add_under_finding(self.confirm_panel)
        self.confirm_panel.hide()
        self.plots = RunPlots()
        detail = QtWidgets.QWidget()
        detail_layout = QtWidgets.QHBoxLayout(detail)
        detail_layout.setContentsMargins(0, 0, 0, 0)
        self.summary.setMaximumWidth(420)
        detail_layout.addWidget(self.summary)
        detail_layout.addWidget(self.plots, 1)
        # The run's four plots scroll rather than set the page's (and so the window's) minimum height.
        detail_scroll = QtWidgets.QScrollArea()
        detail_scroll.setWidgetResizable(True)
        detail_scroll.setFrameShape(QtWidgets.QFrame.Shape.NoFrame)
        detail_scroll.setWidget(detail)
        splitter = QtWidgets.QSplitter(QtCore.Qt.Orientation.Vertical)
        splitter.addWidget(self.sections)
        splitter.addWidget(detail_scroll)
        splitter.setSizes([380, 420])
        layout = QtWidgets.QVBoxLayout(self)
        layout.addWidget(splitter)
        self.table.sig_run_activated.connect(self.open_run)
        self.table.sig_selection_changed.connect(self._selection_changed)
        self.table.sig_tags_edited.connect(self.set_tags)
        self.table.sig_note_edited.connect(self.set_note)
        self.sweeps.sig_sweep_activated.connect(self.sig_sweep_activated)
        self.opened_run_id: str | None = None
        self._opened_run: dict[str, Any] | None = None
        self._damaged: dict[str, list[dict[str, str]]] = {}  # run_id → damaged fields, as found on opening
        # Copy as Markdown from the card's button or menu; no shortcut here: Ctrl+Shift+C is Compare on this page.
        self.summary.sig_copy_markdown_requested.connect(self.copy_markdown)
        self.filters.set_values(self._settings.history_filters())
        self.filters.sig_changed.connect(self._filters_changed)
        self._selection_changed([])

    def reload(self) -> None:
        """List the runs the filters let through (narrow rows: fast for thousands) and the sweeps."""
        if self._store is None:
            return
        try:
            everything = self._store.run_rows()
            query = store_filters(self.filters.values())
            rows = self._store.run_rows(**query) if query else everything
            baselines = {b["run_id"] for b in self._store.baselines()}
            sweeps = self._store.list_sweeps(limit=SWEEPS_LISTED)
        except HistoryError as exc:
            self.sig_error.emit(str(exc))
            return
        self.filters.set_choices({
            **{name: {row.get(name) for row in everything} for name in ("model", "engine", "target", "precision")},
            "tag": {tag for row in everything for tag in row.get("tags") or []},
        })
        for row in rows:  # runs found damaged when opened stay marked (the listing does not read their JSON)
            if row["run_id"] in self._damaged and not row.get("damaged"):
                row["damaged"] = self._damaged[row["run_id"]]
        self.table.set_runs(rows, baselines)
        hidden = len(everything) - len(rows)
        self.sections.setTabText(0, f"Runs ({len(rows):,} of {len(everything):,})" if hidden else "Runs")
        self.sweeps.set_sweeps(sweeps)
        self.sections.setTabText(1, f"Sweeps ({len(sweeps)})" if sweeps else "Sweeps")
        self._update_actions()

    def open_run(self, run_id: str) -> None:
        """Read a run's latencies and samples back from the database and plot them. A damaged run (a JSON
        column the history cannot read) is opened too: its latencies are plotted and the card says what is
        damaged, and its row is marked."""
        if self._store is None:
            return
        try:
            run = self._store.get_run(run_id, include_damaged=True)
            if run is None:
                self.sig_error.emit(f"run {run_id} is no longer in the history database")
                return
            t_ns, latency_ns = self._store.latencies(run["run_id"])
            samples = self._store.samples(run["run_id"])
        except HistoryError as exc:
            self.sig_error.emit(str(exc))
            return
        self.opened_run_id = run["run_id"]
        self._opened_run = run
        self.plots.show_stored(run, t_ns, latency_ns, samples)
        if run.get("summary"):
            name = (run.get("spec") or {}).get("scenario")
            self.summary.set_summary(run["summary"], scenario=name, figures=scenarios.figures_of(name))
        else:
            self.summary.clear()
        if run.get("error"):
            self.summary.set_message(run["error"], error=run["status"] == "failed")
        if run.get("damaged"):
            self._damaged[run["run_id"]] = run["damaged"]
            self.table.mark_damaged(run["run_id"], run["damaged"])
            self.summary.set_message(f"Run {run['run_id'][:8]} is damaged in the history: "
                                     f"{damage.describe(run['damaged'])}. Its latencies are shown; the commands "
                                     f"that list runs skip it. Fix: {damage.RESTORE}.", error=True)
        self.sig_run_opened.emit(run)

    def copy_markdown(self) -> str:
        """Put the opened run's summary on the clipboard as Markdown; returns the text ("" when none is open)."""
        if self._opened_run is None:
            return ""
        text = run_markdown(self._opened_run)
        put_markdown_on_clipboard(text)
        self.summary.show_copied()
        return text

    # ---- Actions (buttons, context menu and shortcuts)
    def compare_selected(self) -> list[str]:
        """Ask for the Compare page with the selected runs (2 to MAX_COMPARED); returns the ids asked for."""
        selected = self.table.selected_run_ids()
        if len(selected) < 2:
            self._say("Select two or more runs to compare (Ctrl-click or Shift-click rows).")
            return []
        if len(selected) > MAX_COMPARED:
            self._say(f"{len(selected)} runs are selected; the Compare page shows up to {MAX_COMPARED}, so the "
                      f"first {MAX_COMPARED} in the table's order are compared.")
            selected = selected[:MAX_COMPARED]
        self.sig_compare_requested.emit(selected)
        return selected

    def report_selected(self) -> list[str]:
        """Ask for a report of the selected runs (one run, or each against the first); returns the ids."""
        selected = self.table.selected_run_ids()
        if not selected:
            self._say("Select the runs to report: one, or several to compare each with the first.")
            return []
        self.sig_report_requested.emit(selected)
        return selected

    def set_baseline_selected(self) -> bool:
        """Make the selected run its configuration's baseline; a refusal (failed or invalid run) is explained."""
        run_id = self._single("set as a baseline")
        if run_id is None or self._store is None:
            return False
        try:
            self._store.set_baseline(run_id)
        except HistoryError as exc:
            self._refuse("Cannot set this baseline", str(exc))
            return False
        self.reload()
        self._say(f"Run {run_id[:8]} is now the baseline of its configuration: each new run of the same "
                  "configuration is compared with it.")
        return True

    def rerun_selected(self) -> bool:
        """Ask the window to run the selected run's stored spec again (it refuses while something measures)."""
        run_id = self._single("re-run")
        if run_id is None or self._store is None:
            return False
        try:
            run = self._store.get_run(run_id)
        except HistoryError as exc:
            self.sig_error.emit(str(exc))
            return False
        spec = (run or {}).get("spec")
        if not isinstance(spec, dict) or not spec:
            self._refuse("Cannot re-run", f"Run {run_id[:8]} has no stored spec to run again.")
            return False
        self.sig_rerun_requested.emit(spec)
        return True

    def edit_tags_and_note(self) -> bool:
        """The Tags and note dialog for the selected run; OK stores both."""
        run_id = self._single("tag")
        if run_id is None:
            return False
        tags, note = self.table.tags_and_note(run_id)
        dialog = TagsNoteDialog(f"Tags and note — run {run_id[:8]}", tags, note,
                                self.filters.choices("tag"), parent=self)
        if dialog.exec() != QtWidgets.QDialog.DialogCode.Accepted:
            return False
        return self.set_tags(run_id, dialog.tags()) and self.set_note(run_id, dialog.note())

    def delete_selected(self) -> list[str]:
        """Delete the selected runs, and everything stored with them, once confirmed; returns the ids deleted.
        A refusal (a run a console is recording; anything measuring in this window, since a delete holds the
        history's write lock and loads the machine being measured) is explained and deletes nothing."""
        selected = self.table.selected_run_ids()
        if not selected or self._store is None:
            self._say("Select the runs to delete.")
            return []
        busy = self._measuring()
        if busy:
            self._refuse("Cannot delete now", f"A {busy} is measuring: delete runs when it has ended (a delete "
                         "holds the history's write lock and adds work to the machine being measured).")
            return []
        if not confirm_delete(self, len(selected)):
            return []
        try:
            result = self._store.delete_runs(selected)
        except HistoryError as exc:
            self._refuse("Cannot delete", str(exc))
            return []
        for run_id in selected:
            self._damaged.pop(run_id, None)
        if self.opened_run_id in selected:  # its summary and plots no longer have a run behind them
            self.opened_run_id, self._opened_run = None, None
            self.summary.clear()
            self.plots.clear()
            self.confirm_panel.hide()
        self.reload()
        files = list(dict.fromkeys(result["artifact_files"]))
        kept = f" Their {len(files)} artifact file(s) stay on disk: {', '.join(files)}." if files else ""
        self._say(f"Deleted {len(selected)} run{'' if len(selected) == 1 else 's'}.{kept}")
        self.sig_runs_deleted.emit(selected)
        return selected

    def set_tags(self, run_id: str, tags: list[str]) -> bool:
        return self._write(lambda: self._store.set_tags(run_id, tags), f"tags of run {run_id[:8]} saved")

    def set_note(self, run_id: str, note: str) -> bool:
        return self._write(lambda: self._store.set_note(run_id, note or None), f"note of run {run_id[:8]} saved")

    # ---- Private API
    def _action_row(self) -> QtWidgets.QHBoxLayout:
        row = QtWidgets.QHBoxLayout()
        row.setSpacing(6)
        specs = (("compare", "Compare", "Compare the selected runs on the Compare page", self.compare_selected),
                 ("baseline", "Set as baseline", "Make the selected run the baseline of its configuration",
                  self.set_baseline_selected),
                 ("rerun", "Re-run", "Run the selected run's stored setup again (not while something measures)",
                  self.rerun_selected),
                 ("tags", "Tags and note…", "Edit the selected run's tags and note (or F2 on the cell)",
                  self.edit_tags_and_note),
                 ("report", "Report…", "Write a report of the selected runs, HTML or PDF (several: each against "
                  "the first)", self.report_selected))
        for key, text, tip, slot in specs:
            action = QtGui.QAction(text, self)
            action.setShortcut(QtGui.QKeySequence(SHORTCUTS[key]))
            action.setShortcutContext(QtCore.Qt.ShortcutContext.WidgetWithChildrenShortcut)
            action.setToolTip(f"{tip} ({SHORTCUTS[key]})")
            action.triggered.connect(slot)
            self.addAction(action)
            self.table.view.addAction(action)
            self.actions_[key] = action
            button = QtWidgets.QToolButton()
            button.setObjectName(f"history_{key}")
            button.setDefaultAction(action)
            button.setToolButtonStyle(QtCore.Qt.ToolButtonStyle.ToolButtonTextOnly)
            row.addWidget(button)
        self.table.view.setContextMenuPolicy(QtCore.Qt.ContextMenuPolicy.ActionsContextMenu)
        row.addWidget(self.message, 1)
        row.addWidget(self._delete_button())  # the one action that destroys: at the far end, apart from the rest
        return row

    def _delete_button(self) -> QtWidgets.QToolButton:
        """Delete (the Delete key, the context menu, a button): kept out of actions_, which lists the actions that
        read or annotate runs."""
        action = QtGui.QAction("Delete…", self)
        action.setShortcut(QtGui.QKeySequence(SHORTCUTS["delete"]))
        action.setShortcutContext(QtCore.Qt.ShortcutContext.WidgetWithChildrenShortcut)
        action.setToolTip(f"Delete the selected runs and everything stored with them; asks first "
                          f"({SHORTCUTS['delete']})")
        action.triggered.connect(self.delete_selected)
        self.addAction(action)
        separator = QtGui.QAction(self)
        separator.setSeparator(True)
        self.table.view.addAction(separator)
        self.table.view.addAction(action)
        self.delete_action = action
        button = QtWidgets.QToolButton()
        button.setObjectName("history_delete")
        button.setDefaultAction(action)
        button.setToolButtonStyle(QtCore.Qt.ToolButtonStyle.ToolButtonTextOnly)
        return button

    def _update_actions(self) -> None:
        count = len(self.table.selected_run_ids())
        self.actions_["compare"].setEnabled(count >= 2)
        self.actions_["report"].setEnabled(count >= 1)
        for key in ("baseline", "rerun", "tags"):
            self.actions_[key].setEnabled(count == 1 and self._store is not None)
        self.delete_action.setEnabled(count >= 1 and self._store is not None)

    def _selection_changed(self, run_ids: list[str]) -> None:
        self._update_actions()
        count = len(run_ids)
        if count == 0:
            self._say("Select runs: one to re-run, tag or make a baseline; two or more to compare.")
        elif count == 1:
            self._say("")
        else:
            self._say(f"{count} runs selected: Compare ({SHORTCUTS['compare']}) shows them overlaid.")

    def _single(self, doing: str) -> str | None:
        selected = self.table.selected_run_ids()
        if len(selected) != 1:
            self._say(f"Select exactly one run to {doing} ({len(selected)} selected).")
            return None
        return selected[0]

    def _write(self, write, done: str) -> bool:
        if self._store is None:
            return False
        try:
            write()
        except HistoryError as exc:
            self.sig_error.emit(str(exc))
            QtCore.QTimer.singleShot(0, self.reload)  # show what the history really holds
            return False
        self._say(done.capitalize() + ".")
        return True

    def _filters_changed(self) -> None:
        self._settings.save_history_filters(self.filters.values())
        self.reload()

    def _say(self, text: str) -> None:
        self.message.setText(text)

    def _refuse(self, title: str, text: str) -> None:
        box = QtWidgets.QMessageBox(QtWidgets.QMessageBox.Icon.Warning, title, text,
                                    QtWidgets.QMessageBox.StandardButton.Ok, self)
        box.setObjectName("history_refusal")
        box.open()
