"""Every past run in one sortable, filterable table.

A lab history grows to thousands of runs, so this is a model/view table (rows formatted once, when set) rather
than a widget per cell. Numbers sort as numbers, a run without a summary sorts last, and the order given (newest
first) is kept until a header is clicked. Rows come either as stored runs (a `summary` dict) or as the history's
narrow listing rows (`p50_ms`, `throughput_per_s`, `valid` as plain columns), which list thousands of runs
without decoding their JSON.

A damaged run (a stored JSON column the history could not read: `damaged` on the row, [{field, reason}]) shows
"damaged" in its Status cell, in the failed colour, with the fields and reasons as the cell's tooltip.

Tags and Note are edited in place (double-click or F2 on their cell); the table only reports the edit
(`sig_tags_edited`, `sig_note_edited`): whoever owns the history writes it, and reloads if the write is refused.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from datetime import datetime

from PySide6 import QtCore, QtGui, QtWidgets

from widgets import layouts, theme
from widgets.formatting import MISSING, as_number, format_number

COLUMNS = (
    "Started", "Name", "Model", "Engine", "Target", "Batch", "Status", "p50 (ms)", "Throughput (/s)", "Run ID",
    "Valid", "Baseline", "Tags", "Note",
)
(COL_STARTED, COL_NAME, COL_MODEL, COL_ENGINE, COL_TARGET, COL_BATCH, COL_STATUS, COL_P50, COL_THROUGHPUT, COL_ID,
 COL_VALID, COL_BASELINE, COL_TAGS, COL_NOTE) = range(len(COLUMNS))
_NUMERIC_COLUMNS = frozenset({COL_BATCH, COL_P50, COL_THROUGHPUT})
EDITABLE_COLUMNS = frozenset({COL_TAGS, COL_NOTE})
_FILTERED_FIELDS = ("model", "engine", "target", "status", "name")
BASELINE_MARK = "★"
_LABELS = {"tags": "tag list", "sweep_point": "sweep point"}  # a damaged field as the tooltip's sentence names it
_RIGHT = QtCore.Qt.AlignmentFlag.AlignRight | QtCore.Qt.AlignmentFlag.AlignVCenter
_LEFT = QtCore.Qt.AlignmentFlag.AlignLeft | QtCore.Qt.AlignmentFlag.AlignVCenter


def local_time(iso) -> tuple[str, float | None]:
    """ISO time → local "YYYY-MM-DD HH:MM:SS" and epoch seconds; a time without a zone is taken as local."""
    if not isinstance(iso, str) or not iso:
        return MISSING, None
    try:
        dt = datetime.fromisoformat(iso.strip().replace("Z", "+00:00"))
    except ValueError:
        return iso, None
    if dt.tzinfo is not None:
        dt = dt.astimezone()
    try:
        return dt.strftime("%Y-%m-%d %H:%M:%S"), dt.timestamp()
    except (OverflowError, OSError, ValueError):
        return dt.strftime("%Y-%m-%d %H:%M:%S"), None


def parse_tags(text: str) -> list[str]:
    """Comma-separated text → tags, trimmed, empty ones dropped, each once (the history keeps them so too)."""
    return list(dict.fromkeys(part.strip() for part in str(text or "").split(",") if part.strip()))


@dataclass(frozen=True)
class _Row:
    run_id: str
    status: str
    started_iso: str
    display: tuple[str, ...]
    sort_keys: tuple  # per column: (0, value) or (1, 0) when missing, so missing sorts last ascending
    fields_text: str  # lower-cased model, engine, target, status and name
    tags: tuple[str, ...] = ()
    note: str = ""
    valid: bool | None = None
    damaged: str = ""  # why the run is damaged, one line per field ("" when it is not)

    @property
    def haystack(self) -> str:
        """Lower-cased text the filter box searches: the fields, the tags and the note."""
        return " ".join([self.fields_text, *self.tags, self.note]).lower()


def _figures(run: dict) -> tuple[float | None, float | None, bool | None]:
    """p50 (ms), throughput (/s) and validity from a stored run's summary or a narrow listing row."""
    summary = run.get("summary") if isinstance(run.get("summary"), dict) else None
    if summary is not None:
        latency = summary.get("latency_ms") if isinstance(summary.get("latency_ms"), dict) else {}
        valid = summary.get("valid")
        return (as_number(latency.get("p50")), as_number(summary.get("throughput_per_s")),
                None if valid is None else bool(valid))
    valid = run.get("valid")
    return as_number(run.get("p50_ms")), as_number(run.get("throughput_per_s")), None if valid is None else bool(valid)


def _make_row(run: dict, baseline: bool = False) -> _Row:
    run_id = str(run.get("run_id") or "")
    status = str(run.get("status") or "")
    started_text, started_epoch = local_time(run.get("started_at"))
    p50, throughput, valid = _figures(run)
    if status != "completed" and valid is False:
        valid = None  # a failed run was never judged; "no" would suggest it was measured and found wanting
    batch = as_number(run.get("batch"))
    texts = {f: str(run.get(f) or "") for f in ("name", "model", "engine", "target")}
    tags = tuple(str(t) for t in (run.get("tags") or []) if isinstance(t, str))
    note = str(run.get("note") or "")

    def key(value):
        return (1, 0) if value is None or value == "" else (0, value)

    display = (
        started_text, texts["name"], texts["model"], texts["engine"], texts["target"],
        MISSING if batch is None else f"{int(batch):,}", status,
        format_number(p50), format_number(throughput), run_id[:8],
        {True: "yes", False: "no", None: MISSING}[valid], BASELINE_MARK if baseline else "", ", ".join(tags),
        note.replace("\n", " "),
    )
    sort_keys = (
        key(started_epoch if started_epoch is not None else (started_text if started_text != MISSING else None)),
        key(texts["name"].lower()), key(texts["model"].lower()), key(texts["engine"].lower()),
        key(texts["target"].lower()), key(batch), key(status.lower()), key(p50), key(throughput), key(run_id),
        key(None if valid is None else int(valid)), key(1 if baseline else None), key(", ".join(tags).lower()),
        key(note.lower()),
    )
    fields_text = " ".join(str(run.get(f) or "") for f in _FILTERED_FIELDS).lower()
    row = _Row(run_id, status, str(run.get("started_at") or ""), display, sort_keys, fields_text, tags, note, valid)
    return _damaged(row, run.get("damaged") or [])


def _damaged(row: _Row, damaged: list) -> _Row:
    """`row` marked damaged: "<status> · damaged" in the Status cell, the reasons kept for its tooltip."""
    if not damaged:
        return row
    display = list(row.display)
    display[COL_STATUS] = f"{row.status} · damaged" if row.status else "damaged"
    reasons = "\n".join(f"its {_LABELS.get(item.get('field'), item.get('field'))} {item.get('reason')}"
                        for item in damaged if isinstance(item, dict))
    return dataclasses.replace(row, display=tuple(display), damaged=reasons or "damaged",
                               fields_text=f"{row.fields_text} damaged")


class _RunsTableModel(QtCore.QAbstractTableModel):
    """Rows formatted once in ``set_runs`` so painting thousands of them stays cheap."""

    def __init__(self, parent: QtCore.QObject | None = None):
        super().__init__(parent)
        self._rows: list[_Row] = []

    sig_tags_edited = QtCore.Signal(str, list)  # run_id, tags
    sig_note_edited = QtCore.Signal(str, str)  # run_id, note ("" clears it)

    def set_runs(self, runs: list[dict], baseline_ids: frozenset[str] = frozenset()) -> None:
        self.beginResetModel()
        self._rows = [_make_row(run, str(run.get("run_id")) in baseline_ids) for run in runs]
        self.endResetModel()

    def flags(self, index: QtCore.QModelIndex) -> QtCore.Qt.ItemFlag:
        flags = super().flags(index)
        if index.isValid() and index.column() in EDITABLE_COLUMNS:
            flags |= QtCore.Qt.ItemFlag.ItemIsEditable
        return flags

    def setData(self, index: QtCore.QModelIndex, value, role: int = QtCore.Qt.ItemDataRole.EditRole) -> bool:
        """An edited tag list or note: the row shows it at once and the edit is reported (the owner stores it)."""
        if role != QtCore.Qt.ItemDataRole.EditRole or not index.isValid() or index.column() not in EDITABLE_COLUMNS:
            return False
        row = self._rows[index.row()]
        if index.column() == COL_TAGS:
            tags = parse_tags(str(value or ""))
            if tuple(tags) == row.tags:
                return False
            self._replace(index.row(), tags=tags, note=row.note)
            self.dataChanged.emit(index, index)
            self.sig_tags_edited.emit(row.run_id, tags)
        else:
            note = str(value or "").strip()
            if note == row.note:
                return False
            self._replace(index.row(), tags=list(row.tags), note=note)
            self.dataChanged.emit(index, index)
            self.sig_note_edited.emit(row.run_id, note)
        return True

    def _replace(self, position: int, tags: list[str], note: str) -> None:
        row = self._rows[position]
        display = list(row.display)
        display[COL_TAGS], display[COL_NOTE] = ", ".join(tags), note.replace("\n", " ")
        keys = list(row.sort_keys)
        keys[COL_TAGS] = (0, display[COL_TAGS].lower()) if tags else (1, 0)
        keys[COL_NOTE] = (0, note.lower()) if note else (1, 0)
        self._rows[position] = dataclasses.replace(row, display=tuple(display), sort_keys=tuple(keys),
                                                   tags=tuple(tags), note=note)

    def mark_damaged(self, run_id: str, damaged: list) -> None:
        """Mark a run found damaged when it was opened (the listing does not read every run's JSON)."""
        for position, row in enumerate(self._rows):
            if row.run_id == run_id and not row.damaged:
                self._rows[position] = _damaged(row, damaged)
                self.dataChanged.emit(self.index(position, 0), self.index(position, len(COLUMNS) - 1))

    def row(self, row: int) -> _Row:
        return self._rows[row]

    def rowCount(self, parent=QtCore.QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else len(self._rows)

    def columnCount(self, parent=QtCore.QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else len(COLUMNS)

    def data(self, index: QtCore.QModelIndex, role: int = QtCore.Qt.ItemDataRole.DisplayRole):
        if not index.isValid():
            return None
        row = self._rows[index.row()]
        column = index.column()
        if role == QtCore.Qt.ItemDataRole.DisplayRole:
            return row.display[column]
        if role == QtCore.Qt.ItemDataRole.EditRole:
            return ", ".join(row.tags) if column == COL_TAGS else row.note if column == COL_NOTE else row.display[column]
        if role == QtCore.Qt.ItemDataRole.TextAlignmentRole:
            return _RIGHT if column in _NUMERIC_COLUMNS else _LEFT
        if role == QtCore.Qt.ItemDataRole.ForegroundRole and column == COL_STATUS:
            color = theme.STATUS_COLORS.get("failed" if row.damaged else row.status.lower())
            if color and (row.damaged or row.status.lower() != "completed"):
                return QtGui.QBrush(QtGui.QColor(color))
            return None
        if role == QtCore.Qt.ItemDataRole.ToolTipRole:
            if column == COL_ID:
                return row.run_id
            if column == COL_STARTED:
                return row.started_iso
            if column == COL_STATUS and row.damaged:
                return f"This run is damaged in the history:\n{row.damaged}"
            if column in (COL_P50, COL_THROUGHPUT) and row.display[column] == MISSING:
                return "not available"
            if column in EDITABLE_COLUMNS:
                shown = {COL_TAGS: ", ".join(row.tags), COL_NOTE: row.note}[column]
                return (shown + "\n\n" if shown else "") + "Double-click or F2 to edit" + (
                    " (tags separated by commas)" if column == COL_TAGS else "")
            if column == COL_BASELINE and row.display[column]:
                return "the baseline of this run's configuration: later runs of it are compared with this one"
            return None
        return None

    def headerData(self, section: int, orientation, role: int = QtCore.Qt.ItemDataRole.DisplayRole):
        if orientation != QtCore.Qt.Orientation.Horizontal:
            return None
        if role == QtCore.Qt.ItemDataRole.DisplayRole:
            return COLUMNS[section]
        if role == QtCore.Qt.ItemDataRole.TextAlignmentRole:
            return _RIGHT if section in _NUMERIC_COLUMNS else _LEFT
        return None


class _RunsFilterProxy(QtCore.QSortFilterProxyModel):
    """Keeps rows whose model/engine/target/status/name, tags or note contain every filter word; sorts on typed
    keys."""

    def __init__(self, parent: QtCore.QObject | None = None):
        super().__init__(parent)
        self._terms: list[str] = []

    def set_filter_text(self, text: str) -> None:
        if hasattr(self, "beginFilterChange"):  # Qt >= 6.10
            self.beginFilterChange()
            self._terms = text.lower().split()
            self.endFilterChange(QtCore.QSortFilterProxyModel.Direction.Rows)
        else:
            self._terms = text.lower().split()
            self.invalidateFilter()

    def filterAcceptsRow(self, source_row: int, source_parent: QtCore.QModelIndex) -> bool:
        if not self._terms:
            return True
        haystack = self.sourceModel().row(source_row).haystack
        return all(term in haystack for term in self._terms)

    def lessThan(self, left: QtCore.QModelIndex, right: QtCore.QModelIndex) -> bool:
        model = self.sourceModel()
        column = left.column()
        a = model.row(left.row()).sort_keys[column]
        b = model.row(right.row()).sort_keys[column]
        try:
            return a < b
        except TypeError:  # e.g. a parsed time against an unparsable one
            return str(a) < str(b)


class HistoryTable(QtWidgets.QWidget):
    """Filter box over the table of past runs; several runs can be selected (Shift/Ctrl-click)."""

    sig_run_activated = QtCore.Signal(str)  # run_id, on double-click or Enter
    sig_selection_changed = QtCore.Signal(list)  # selected run ids, in view order
    sig_tags_edited = QtCore.Signal(str, list)  # run_id, tags: edited in the Tags cell
    sig_note_edited = QtCore.Signal(str, str)  # run_id, note ("" clears it): edited in the Note cell

    def __init__(self, parent: QtWidgets.QWidget | None = None):
        super().__init__(parent)
        self._model = _RunsTableModel(self)
        self._proxy = _RunsFilterProxy(self)
        self._proxy.setSourceModel(self._model)

        self._filter = QtWidgets.QLineEdit()
        self._filter.setPlaceholderText("Search model, engine, target, status, name, tags or note")
        self._filter.setClearButtonEnabled(True)
        self._filter.setFont(theme.font(theme.BASE_PT))
        self._filter.textChanged.connect(self._on_filter_changed)
        self._count = QtWidgets.QLabel()
        self._count.setStyleSheet(f"color: {theme.MUTED};")
        self._count.setFont(theme.font(theme.BASE_PT))

        self._view = QtWidgets.QTableView()
        self._view.setModel(self._proxy)
        self._view.setFont(theme.font(theme.BASE_PT))
        self._view.setSelectionBehavior(QtWidgets.QAbstractItemView.SelectionBehavior.SelectRows)
        self._view.setSelectionMode(QtWidgets.QAbstractItemView.SelectionMode.ExtendedSelection)
        # Only Tags and Note are editable (the model says so); elsewhere a double-click opens the run.
        self._view.setEditTriggers(QtWidgets.QAbstractItemView.EditTrigger.DoubleClicked
                                   | QtWidgets.QAbstractItemView.EditTrigger.EditKeyPressed)
        self._view.setAlternatingRowColors(True)
        self._view.setWordWrap(False)
        self._view.setShowGrid(False)
        self._view.verticalHeader().hide()
        self._view.verticalHeader().setDefaultSectionSize(self._view.fontMetrics().height() + 10)
        header = self._view.horizontalHeader()
        header.setFont(theme.font(theme.BASE_PT, bold=True))
        header.setHighlightSections(False)
        header.setStretchLastSection(True)
        # Column -1 keeps the given order (newest first) until a header is clicked; descending would reverse it.
        header.setSortIndicator(-1, QtCore.Qt.SortOrder.AscendingOrder)
        self._view.setSortingEnabled(True)
        self._view.activated.connect(self._on_activated)  # double-click and Enter
        self._view.selectionModel().selectionChanged.connect(self._on_selection_changed)
        self._model.sig_tags_edited.connect(self.sig_tags_edited)
        self._model.sig_note_edited.connect(self.sig_note_edited)
        self._sized = False

        layouts.column(self, layouts.row((self._filter, 1), self._count), (self._view, 1))
        self._update_count()

    # ---- Public API
    def set_runs(self, runs: list[dict], baseline_ids=frozenset()) -> None:
        """Replace the rows (newest first, as given); the filter, sort column and selected runs are kept.
        `baseline_ids`: runs that are their configuration's baseline (marked in the Baseline column)."""
        selected = set(self.selected_run_ids())
        self._model.set_runs(runs, frozenset(baseline_ids))
        if not self._sized and runs:
            self._view.resizeColumnsToContents()
            header_metrics = QtGui.QFontMetrics(self._view.horizontalHeader().font())
            for column in (COL_VALID, COL_BASELINE):  # "yes" and "★" need no more than their header
                self._view.setColumnWidth(column, header_metrics.horizontalAdvance(COLUMNS[column]) + 18)
            for column in EDITABLE_COLUMNS:  # room to read a few tags and the start of a note
                self._view.setColumnWidth(column, max(self._view.columnWidth(column), 120))
            self._sized = True
        if selected:
            self._select_ids(selected)
        self._update_count()

    def selected_run_ids(self) -> list[str]:
        rows = sorted(index.row() for index in self._view.selectionModel().selectedRows())
        ids = []
        for row in rows:
            source = self._proxy.mapToSource(self._proxy.index(row, 0))
            ids.append(self._model.row(source.row()).run_id)
        return ids

    def mark_damaged(self, run_id: str, damaged: list) -> None:
        """Show a run as damaged (found so when it was opened); `damaged`: [{field, reason}]."""
        self._model.mark_damaged(run_id, damaged)

    def set_filter_text(self, text: str) -> None:
        self._filter.setText(text)

    def row_count(self) -> int:
        """Rows shown after filtering."""
        return self._proxy.rowCount()

    def run_id_at(self, row: int) -> str:
        """Run id of the ``row``-th row as shown (after filter and sort)."""
        source = self._proxy.mapToSource(self._proxy.index(row, 0))
        return self._model.row(source.row()).run_id

    def cell_text(self, row: int, column: int) -> str:
        return self._proxy.index(row, column).data() or ""

    def select_run_ids(self, run_ids) -> None:
        """Select these runs (those shown); the others are deselected."""
        self._select_ids(set(run_ids))

    def current_run_id(self) -> str | None:
        """The run of the current row (the keyboard focus), else the first selected one."""
        index = self._view.currentIndex()
        if index.isValid() and self._view.selectionModel().isRowSelected(index.row(), QtCore.QModelIndex()):
            return self.run_id_at(index.row())
        selected = self.selected_run_ids()
        return selected[0] if selected else None

    def tags_and_note(self, run_id: str) -> tuple[list[str], str]:
        """The tags and note shown for a run (([], "") if it is not listed)."""
        for position in range(self._model.rowCount()):
            row = self._model.row(position)
            if row.run_id == run_id:
                return list(row.tags), row.note
        return [], ""

    def edit_cell(self, run_id: str, column: int) -> bool:
        """Open the in-place editor of a run's Tags or Note cell; False if the run is not shown."""
        for row in range(self._proxy.rowCount()):
            if self.run_id_at(row) == run_id:
                index = self._proxy.index(row, column)
                self._view.setCurrentIndex(index)
                self._view.edit(index)
                return True
        return False

    @property
    def view(self) -> QtWidgets.QTableView:
        return self._view

    @property
    def filter_edit(self) -> QtWidgets.QLineEdit:
        return self._filter

    # ---- Private API
    def _on_filter_changed(self, text: str) -> None:
        self._proxy.set_filter_text(text)
        self._update_count()

    def _on_activated(self, index: QtCore.QModelIndex) -> None:
        if index.isValid():
            source = self._proxy.mapToSource(index)
            self.sig_run_activated.emit(self._model.row(source.row()).run_id)

    def _on_selection_changed(self, *_args) -> None:
        self.sig_selection_changed.emit(self.selected_run_ids())

    def _select_ids(self, run_ids: set[str]) -> None:
        selection = QtCore.QItemSelection()
        for row in range(self._proxy.rowCount()):
            if self.run_id_at(row) in run_ids:
                selection.select(self._proxy.index(row, 0), self._proxy.index(row, len(COLUMNS) - 1))
        self._view.selectionModel().select(selection, QtCore.QItemSelectionModel.SelectionFlag.ClearAndSelect)

    def _update_count(self) -> None:
        total = self._model.rowCount()
        shown = self._proxy.rowCount()
        noun = "run" if total == 1 else "runs"
        self._count.setText(f"{total:,} {noun}" if shown == total else f"{shown:,} of {total:,} {noun}")
