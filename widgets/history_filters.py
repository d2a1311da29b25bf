"""The History page's filter bar: model, engine, target, precision, date range, tag, valid.

A view: it offers the values it is given (`set_choices`, from the runs in the history) and reports what is picked
(`values()`, plain data, `sig_changed`). The page turns the values into a history query and remembers them; a value
remembered from an earlier session stays offered even when no run has it any more, so a filter never hides runs
without showing that it is set. Dates are local calendar days, both ends included.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from PySide6 import QtCore, QtWidgets

from widgets import theme

TEXT_FIELDS = ("model", "engine", "target", "precision", "tag")
FIELDS = (*TEXT_FIELDS, "since", "until", "valid")
ANY = "any"
_LABELS = {"model": "Model", "engine": "Engine", "target": "Target", "precision": "Precision", "tag": "Tag"}
_VALID_CHOICES = ((ANY, None), ("valid", True), ("invalid", False))
_NO_DATE = QtCore.QDate(2000, 1, 1)  # the date edits' minimum, shown as "any"


class HistoryFilters(QtWidgets.QWidget):
    """Combo boxes for what was measured, then the date range and validity; Clear resets them all."""

    sig_changed = QtCore.Signal()

    # ---- Public API
    def __init__(self, parent: QtWidgets.QWidget | None = None):
        super().__init__(parent)
        self.combos: dict[str, QtWidgets.QComboBox] = {}
        what, when = QtWidgets.QHBoxLayout(), QtWidgets.QHBoxLayout()  # two rows: fits a 1,000-pixel window
        for row in (what, when):
            row.setSpacing(6)
        for name in TEXT_FIELDS:
            combo = QtWidgets.QComboBox()
            combo.setObjectName(f"filter_{name}")
            # A model file path would widen the row past the window: the list shows it whole, the box elides.
            combo.setSizeAdjustPolicy(QtWidgets.QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
            combo.setMinimumContentsLength(9)
            combo.addItem(ANY, None)
            combo.currentIndexChanged.connect(self._changed)
            self.combos[name] = combo
            self._add(what, _LABELS[name], combo)
        what.addStretch(1)
        self.since = self._date_edit("filter_since", "runs started on or after this day (local time)")
        self.until = self._date_edit("filter_until", "runs started on or before this day (local time)")
        self._add(when, "Started from", self.since)
        self._add(when, "to", self.until)
        self.valid = QtWidgets.QComboBox()
        self.valid.setObjectName("filter_valid")
        for text, value in _VALID_CHOICES:
            self.valid.addItem(text, value)
        self.valid.setToolTip("valid: the run met its statistical requirements (enough samples, stable)")
        self.valid.currentIndexChanged.connect(self._changed)
        self._add(when, "Valid", self.valid)
        self.clear_button = QtWidgets.QPushButton("Clear filters")
        self.clear_button.clicked.connect(self.clear)
        when.addWidget(self.clear_button)
        when.addStretch(1)
        layout = QtWidgets.QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(4)
        layout.addLayout(what)
        layout.addLayout(when)
        self._quiet = False
        self._update_clear()

    def values(self) -> dict[str, Any]:
        """{model, engine, target, precision, tag: str | None, since, until: "YYYY-MM-DD" | None, valid: bool |
        None}; None means any."""
        values: dict[str, Any] = {name: combo.currentData() for name, combo in self.combos.items()}
        for name, edit in (("since", self.since), ("until", self.until)):
            values[name] = None if edit.date() == _NO_DATE else edit.date().toString("yyyy-MM-dd")
        values["valid"] = self.valid.currentData()
        return values

    def active(self) -> bool:
        return any(value is not None for value in self.values().values())

    def set_values(self, values: Mapping[str, Any]) -> None:
        """Pick these values (unknown keys ignored; a value not offered yet is added, so it shows)."""
        self._quiet = True
        try:
            for name, combo in self.combos.items():
                value = values.get(name)
                if value is None:
                    combo.setCurrentIndex(0)
                    continue
                if combo.findData(str(value)) < 0:
                    combo.addItem(str(value), str(value))
                combo.setCurrentIndex(combo.findData(str(value)))
            for name, edit in (("since", self.since), ("until", self.until)):
                date = QtCore.QDate.fromString(str(values.get(name) or ""), "yyyy-MM-dd")
                edit.setDate(date if date.isValid() and date > _NO_DATE else _NO_DATE)
            valid = values.get("valid")
            self.valid.setCurrentIndex({None: 0, True: 1, False: 2}.get(valid if isinstance(valid, bool) else None))
        finally:
            self._quiet = False
        self._changed()

    def set_choices(self, choices: Mapping[str, Iterable[str]]) -> None:
        """Offer these values per field (sorted); the current pick is kept even if it is not among them."""
        self._quiet = True
        try:
            for name, combo in self.combos.items():
                current = combo.currentData()
                offered = sorted({str(v) for v in choices.get(name, ()) if v not in (None, "")} | (
                    {current} if current is not None else set()), key=str.lower)
                combo.blockSignals(True)
                combo.clear()
                combo.addItem(ANY, None)
                for value in offered:
                    combo.addItem(value, value)
                combo.setCurrentIndex(max(combo.findData(current), 0) if current is not None else 0)
                combo.blockSignals(False)
        finally:
            self._quiet = False
        self._update_clear()

    def choices(self, name: str) -> list[str]:
        combo = self.combos[name]
        return [combo.itemData(i) for i in range(1, combo.count())]

    def clear(self) -> None:
        self.set_values({})

    # ---- Private API
    def _date_edit(self, name: str, tip: str) -> QtWidgets.QDateEdit:
        edit = QtWidgets.QDateEdit()
        edit.setObjectName(name)
        edit.setCalendarPopup(True)
        edit.setDisplayFormat("yyyy-MM-dd")
        edit.setMinimumDate(_NO_DATE)
        edit.setSpecialValueText(ANY)  # shown at the minimum date: no bound
        edit.setDate(_NO_DATE)
        edit.setToolTip(tip + "; the earliest date shown as 'any' means no bound")
        edit.dateChanged.connect(self._changed)
        return edit

    @staticmethod
    def _add(layout: QtWidgets.QHBoxLayout, text: str, widget: QtWidgets.QWidget) -> None:
        label = QtWidgets.QLabel(text)
        label.setFont(theme.font(theme.BASE_PT))
        label.setBuddy(widget)
        layout.addWidget(label)
        layout.addWidget(widget)

    def _changed(self, *_args) -> None:
        if self._quiet:
            return
        self._update_clear()
        self.sig_changed.emit()

    def _update_clear(self) -> None:
        self.clear_button.setEnabled(self.active())
