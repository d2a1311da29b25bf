"""A form section built from option descriptions: one editor per option, chosen by its kind.

Why: a backend or scenario plug-in declares its options once (engines.options); the run form shows them
without a line of form code per option. Fed plain dicts (the console converts its OptionFields), so this
view knows nothing of engines: keys path, kind (bool|int|float|str|choice|pairs), label, help, default,
choices, minimum, maximum, unit, optional.
"""

from __future__ import annotations

from typing import Any

from PySide6 import QtCore, QtWidgets

_INT_MAX = 2**31 - 1
_NOT_SET = "not set"  # the plug-in's default applies (not "default": torch.compile has a mode of that name)


class OptionsSection(QtWidgets.QGroupBox):
    """A titled group of option editors; `values()` gives {path: value}, None where left at the default."""

    sig_changed = QtCore.Signal()

    # ---- Public API
    def __init__(self, title: str, parent: QtWidgets.QWidget | None = None):
        super().__init__(title, parent)
        self._layout = QtWidgets.QFormLayout(self)
        self._layout.setFieldGrowthPolicy(QtWidgets.QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)
        self._layout.setLabelAlignment(QtCore.Qt.AlignmentFlag.AlignRight | QtCore.Qt.AlignmentFlag.AlignVCenter)
        self._fields: list[dict[str, Any]] = []
        self._editors: dict[str, QtWidgets.QWidget] = {}
        self._remembered: dict[str, Any] = {}  # values of options no longer shown, for when they come back
        self.setVisible(False)

    def set_fields(self, fields: list[dict[str, Any]]) -> None:
        """Show these options (replacing the others); a value typed before for the same path comes back."""
        self._remembered.update(self.values())
        while self._layout.rowCount():
            self._layout.removeRow(0)
        self._fields, self._editors = list(fields), {}
        for fld in self._fields:
            editor = _editor(fld)
            editor.setToolTip(fld.get("help", ""))
            editor.setObjectName(fld["path"])
            self._editors[fld["path"]] = editor
            _connect(editor, self.sig_changed.emit)
            self._layout.addRow(fld.get("label") or fld["path"], editor)
        self.set_values({p: v for p, v in self._remembered.items() if p in self._editors})
        self.setVisible(bool(self._fields))

    def values(self) -> dict[str, Any]:
        return {fld["path"]: _read(fld, self._editors[fld["path"]]) for fld in self._fields}

    def set_values(self, values: dict[str, Any]) -> None:
        """Fill editors from `values`; unknown paths and values of the wrong type are ignored."""
        for fld in self._fields:
            if fld["path"] in values:
                try:
                    _write(fld, self._editors[fld["path"]], values[fld["path"]])
                except (TypeError, ValueError):
                    pass

    def editor(self, path: str) -> QtWidgets.QWidget:
        return self._editors[path]

    def paths(self) -> list[str]:
        return [fld["path"] for fld in self._fields]


# ---- Private API
def _editor(fld: dict[str, Any]) -> QtWidgets.QWidget:
    kind, optional = fld["kind"], fld.get("optional", False)
    if kind == "bool":
        box = QtWidgets.QCheckBox()
        box.setChecked(bool(fld.get("default")))  # e.g. "Measure until stable", on in the window
        return box
    if kind == "choice":
        combo = QtWidgets.QComboBox()
        if optional:
            combo.addItem(_NOT_SET, None)
        for choice in fld.get("choices", ()):
            combo.addItem(str(choice), choice)
        return combo
    if kind == "int":
        spin = QtWidgets.QSpinBox()
        low = int(fld["minimum"]) if fld.get("minimum") is not None else 1
        high = min(int(fld["maximum"]) if fld.get("maximum") is not None else _INT_MAX, _INT_MAX)
        spin.setRange(low - 1 if optional else low, high)
        spin.setGroupSeparatorShown(True)
        if optional:
            spin.setSpecialValueText(_NOT_SET)
        spin.setValue(spin.minimum() if fld.get("default") is None else int(fld["default"]))
        return spin
    if kind == "float":
        spin = QtWidgets.QDoubleSpinBox()
        spin.setDecimals(3)
        spin.setRange(0.0, float(fld["maximum"]) if fld.get("maximum") is not None else 1e9)
        if optional:
            spin.setSpecialValueText(_NOT_SET)
        if fld.get("unit"):
            spin.setSuffix(f" {fld['unit']}")
        spin.setValue(0.0 if fld.get("default") is None else float(fld["default"]))
        return spin
    line = QtWidgets.QLineEdit()
    line.setPlaceholderText("NAME=VALUE, …" if kind == "pairs" else _NOT_SET)
    if kind != "pairs" and fld.get("default"):
        line.setText(str(fld["default"]))
    return line


def _read(fld: dict[str, Any], editor: QtWidgets.QWidget) -> Any:
    kind, optional = fld["kind"], fld.get("optional", False)
    if isinstance(editor, QtWidgets.QCheckBox):
        return editor.isChecked()
    if isinstance(editor, QtWidgets.QComboBox):
        return editor.currentData()
    if isinstance(editor, QtWidgets.QSpinBox):
        return None if optional and editor.value() == editor.minimum() else editor.value()
    if isinstance(editor, QtWidgets.QDoubleSpinBox):
        return None if optional and editor.value() == editor.minimum() else editor.value()
    text = editor.text().strip()
    if kind == "pairs":
        return [item.strip() for item in text.split(",") if item.strip()] or None
    return text or None


def _write(fld: dict[str, Any], editor: QtWidgets.QWidget, value: Any) -> None:
    if isinstance(editor, QtWidgets.QCheckBox):
        editor.setChecked(bool(value))
    elif isinstance(editor, QtWidgets.QComboBox):
        index = editor.findData(value)
        if index >= 0:
            editor.setCurrentIndex(index)
    elif isinstance(editor, (QtWidgets.QSpinBox, QtWidgets.QDoubleSpinBox)):
        editor.setValue(editor.minimum() if value is None else (int(value) if isinstance(
            editor, QtWidgets.QSpinBox) else float(value)))
    elif fld["kind"] == "pairs":
        items = value.items() if isinstance(value, dict) else None
        editor.setText(", ".join(f"{k}={v}" for k, v in items) if items is not None else
                       ", ".join(value or []))
    else:
        editor.setText("" if value is None else str(value))


def _connect(editor: QtWidgets.QWidget, slot) -> None:
    for signal in ("toggled", "currentIndexChanged", "valueChanged", "textChanged"):
        if hasattr(editor, signal):
            getattr(editor, signal).connect(lambda *_: slot())
            return
