"""Input editor: a model file's inputs, with a field for each dynamic shape and each scalar value.

Fixed inputs are shown for information; a dynamic dimension other than the batch, or a scalar input (a sample
rate, say), needs a value from the user — the engine fills the batch from the form. An input whose shape the file
does not record (`"shape": None`: a TorchScript Tensor argument, an ONNX tensor of unknown rank) needs a whole
shape; a TorchScript int/float/bool argument (also `None`) needs a number.

A named dim the entered shapes give two sizes (`seq` 16 in one input, 8 in another) is shown as a warning under
the table, not an error: the run starts, and ONNX Runtime's own check decides (engines.inputs.symbol_warnings —
the same words the run's notes carry).
"""

from __future__ import annotations

import numpy as np
from PySide6 import QtCore, QtGui, QtWidgets

from engines.inputs import symbol_warnings
from widgets import theme

_COLUMNS = ("Input", "dtype", "Declared shape", "Value")
_NUMBER_KINDS = ("int", "float", "bool")  # TorchScript argument types the engine feeds as Python numbers
SHAPE, NUMBER, FIXED, NOT_FED = "shape", "number", "fixed", "not fed"


def input_kind(spec: dict) -> str:
    """What an input needs from the user: SHAPE, NUMBER, FIXED (nothing) or NOT_FED (a type the engine does
    not feed, e.g. an ONNX sequence or a TorchScript List[int]; the model's default applies)."""
    shape, dtype = spec.get("shape"), str(spec.get("dtype", ""))
    if shape is None:  # the file records no shape
        if dtype in _NUMBER_KINDS:
            return NUMBER
        return SHAPE if dtype == "Tensor" or _is_array_dtype(dtype) else NOT_FED
    if not shape:
        return NUMBER
    return SHAPE if any(_is_dynamic(d) for d in shape[1:]) else FIXED  # the first dynamic dimension is the batch


def _is_array_dtype(dtype: str) -> bool:
    try:
        np.dtype(dtype)
    except (TypeError, ValueError):
        return False
    return True


def _is_dynamic(dim) -> bool:
    return not isinstance(dim, int) or dim < 1


def _shape_text(shape) -> str:
    if shape is None:
        return "not recorded"
    return "scalar" if not shape else " × ".join("?" if d is None else str(d) for d in shape)


def _parse_shape(text: str) -> list[int] | None:
    parts = [p.strip() for p in text.lower().replace("×", "x").split("x")]
    try:
        dims = [int(p) for p in parts]
    except ValueError:
        return None
    return dims if dims and all(d >= 1 for d in dims) else None


class InputEditor(QtWidgets.QWidget):
    """Rows of (name, dtype, declared shape, value). `values()` returns what the user entered, `errors()` why not."""

    sig_changed = QtCore.Signal()

    def __init__(self, parent: QtWidgets.QWidget | None = None):
        super().__init__(parent)
        self._table = QtWidgets.QTableWidget(0, len(_COLUMNS))
        self._table.setHorizontalHeaderLabels(_COLUMNS)
        self._table.verticalHeader().setVisible(False)
        self._table.horizontalHeader().setStretchLastSection(True)
        self._table.setFont(theme.font(theme.BASE_PT))
        self._table.itemChanged.connect(self._validate)
        self._title = QtWidgets.QLabel("Model inputs")
        self._title.setFont(theme.font(theme.BASE_PT, bold=True))
        layout = QtWidgets.QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self._title)
        layout.addWidget(self._table)
        self._warning = QtWidgets.QLabel()  # named dims given two sizes: the run starts, the engine decides
        self._warning.setWordWrap(True)
        self._warning.setStyleSheet(f"color: {theme.STATUS_COLORS['interrupted']};")
        self._warning.setVisible(False)
        layout.addWidget(self._warning)
        self._inputs: list[dict] = []
        self.setVisible(False)

    # ---- Public API
    def set_inputs(self, inputs: list[dict], values: dict | None = None) -> None:
        """Show a model's inputs ({name, dtype, shape}); `values` pre-fills earlier entries (shapes or numbers)."""
        values = values or {}
        self._inputs = list(inputs)
        self._table.blockSignals(True)
        self._table.setRowCount(len(self._inputs))
        for row, spec in enumerate(self._inputs):
            cells = [spec["name"], str(spec.get("dtype", "")), _shape_text(spec.get("shape"))]
            for column, text in enumerate(cells):
                item = QtWidgets.QTableWidgetItem(text)
                item.setFlags(item.flags() & ~QtCore.Qt.ItemFlag.ItemIsEditable)
                self._table.setItem(row, column, item)
            value = QtWidgets.QTableWidgetItem(self._initial_text(spec, values.get(spec["name"])))
            if not self._needs_value(spec):
                value.setFlags(value.flags() & ~QtCore.Qt.ItemFlag.ItemIsEditable)
            value.setToolTip(self._tooltip(spec))
            self._table.setItem(row, 3, value)
        self._table.blockSignals(False)
        self._table.resizeColumnsToContents()
        self.setVisible(bool(self._inputs))
        self._validate()

    def clear(self) -> None:
        self.set_inputs([])

    def values(self) -> tuple[dict[str, list[int]], dict[str, float]]:
        """(input shapes, scalar values) for every input the user filled in correctly."""
        shapes, scalars = {}, {}
        for row, spec in enumerate(self._inputs):
            if not self._needs_value(spec):
                continue
            text = self._table.item(row, 3).text().strip()
            if input_kind(spec) == NUMBER:
                try:
                    number = float(text) if "." in text else int(text)
                except ValueError:
                    continue
                if spec.get("dtype") != "bool" or number in (0, 1):
                    scalars[spec["name"]] = number
            elif (dims := _parse_shape(text)) is not None:
                shapes[spec["name"]] = dims
        return shapes, scalars

    def errors(self) -> list[str]:
        """Why the run cannot start yet: each input still missing a valid value, with what to type."""
        shapes, scalars = self.values()
        missing = []
        for spec in self._inputs:
            if self._needs_value(spec) and spec["name"] not in shapes and spec["name"] not in scalars:
                missing.append(f"input {spec['name']!r} needs {self._ask(spec)}")
        return missing

    def warnings(self) -> list[str]:
        """Named dims that the entered shapes give different sizes: a warning, not a reason to refuse the run."""
        shapes, _ = self.values()
        declared = [spec for spec in self._inputs if isinstance(spec.get("shape"), list)]
        return symbol_warnings(declared, shapes)

    # ---- Private API
    @staticmethod
    def _needs_value(spec: dict) -> bool:
        return input_kind(spec) in (SHAPE, NUMBER)

    @staticmethod
    def _ask(spec: dict) -> str:
        """What the user must type, in words (for the error and the cell's tooltip)."""
        kind = input_kind(spec)
        if kind == NUMBER:
            return "0 or 1" if spec.get("dtype") == "bool" else "a number"
        if kind == SHAPE:
            if spec.get("shape") is None:
                return "a shape such as 1x3x224x224 (the file records none)"
            return f"a shape for {_shape_text(spec['shape'])}"
        return kind

    @staticmethod
    def _tooltip(spec: dict) -> str:
        kind = input_kind(spec)
        if kind == FIXED:
            return "fixed by the model (the batch comes from the form)"
        if kind == NOT_FED:
            return "Lab Console feeds tensors and numbers only; the model's default value applies"
        if kind == SHAPE:
            return f"{InputEditor._ask(spec)}; first dimension = batch"
        return InputEditor._ask(spec)

    @staticmethod
    def _initial_text(spec: dict, value) -> str:
        if isinstance(value, (list, tuple)):
            return "x".join(str(d) for d in value)
        if isinstance(value, (int, float)):
            return str(value)
        if input_kind(spec) == NOT_FED:
            return "(default)"
        return "" if InputEditor._needs_value(spec) else _shape_text(spec.get("shape") or [])

    def _validate(self, *_args) -> None:
        shapes, scalars = self.values()
        self._table.blockSignals(True)
        for row, spec in enumerate(self._inputs):
            item = self._table.item(row, 3)
            ok = not self._needs_value(spec) or spec["name"] in shapes or spec["name"] in scalars
            item.setBackground(QtGui.QBrush() if ok else QtGui.QBrush(theme.tint(theme.BAD, 0.25)))  # readable light or dark
        self._table.blockSignals(False)
        warnings = self.warnings()
        self._warning.setText("\n".join(f"⚠ {text}" for text in warnings))
        self._warning.setVisible(bool(warnings))
        self.sig_changed.emit()
