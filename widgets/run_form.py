"""Run setup panel: what to run, where, for how long, plus the Run, Analyze and Stop buttons.

The form only collects choices and says why an option is unavailable (an engine not installed, a target not
present); the main window owns keyboard shortcuts and turns ``values()`` into a run spec. ``values()`` is keyed by
the spec's option paths ("batch", "scenario_options.qps", "torch.compile" …): the scenario's and the engine's own
options come from their plug-ins as plain descriptions, shown in two sections (widgets.options_form).
"""

from __future__ import annotations

from PySide6 import QtCore, QtGui, QtWidgets

from widgets import theme
from widgets.options_form import OptionsSection

CHOICE_FIELDS = ("model", "engine", "target", "precision", "mode", "scenario")
_VALUE_ROLE = QtCore.Qt.ItemDataRole.UserRole
ANALYZE_TIP = ("Run, then profile with the engine's own profiler, apart from the timed measurement: the op table "
               "and its Chrome trace (Ctrl+Shift+R). The first time on a machine, its machine card (roofs, caches) "
               "is measured first, as labconsole analyze does")


class RunForm(QtWidgets.QWidget):
    """Model, engine, target, batch, duration, iterations and run name, with Run / Analyze / Stop."""

    sig_run_requested = QtCore.Signal()
    sig_analyze_requested = QtCore.Signal()  # a run, then the engine's profile taken apart (the op table)
    sig_stop_requested = QtCore.Signal()
    # (field, value) when the user picks another model, engine or target, e.g. to narrow the other lists.
    sig_choice_changed = QtCore.Signal(str, str)
    sig_open_model_requested = QtCore.Signal()  # "Open model file…" beside the model list

    def __init__(self, parent: QtWidgets.QWidget | None = None):
        super().__init__(parent)
        self._running = False
        self.setFont(theme.font(theme.BASE_PT))

        self._combos: dict[str, QtWidgets.QComboBox] = {}
        for field in CHOICE_FIELDS:
            combo = QtWidgets.QComboBox()
            combo.setSizeAdjustPolicy(QtWidgets.QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
            combo.setMinimumContentsLength(18)
            combo.currentIndexChanged.connect(lambda _i, f=field: self._on_choice_changed(f))
            self._combos[field] = combo

        self._batch = QtWidgets.QSpinBox()
        self._batch.setRange(1, 4096)
        self._batch.setValue(1)
        self._batch.setToolTip("Samples per inference call")

        self._duration = QtWidgets.QDoubleSpinBox()
        self._duration.setRange(0.1, 3600.0)
        self._duration.setDecimals(1)
        self._duration.setSingleStep(1.0)
        self._duration.setValue(5.0)
        self._duration.setSuffix(" s")
        self._duration.setToolTip("How long to measure after warm-up")

        self._iterations = QtWidgets.QSpinBox()
        self._iterations.setRange(0, 100_000_000)
        self._iterations.setSingleStep(100)
        self._iterations.setSpecialValueText("auto (use duration)")
        self._iterations.setGroupSeparatorShown(True)
        self._iterations.setToolTip("Measured iterations; at 0 the run measures for the duration instead")

        self._threads = QtWidgets.QSpinBox()
        self._threads.setRange(0, 4096)
        self._threads.setSpecialValueText("auto (the worker's cores)")
        self._threads.setToolTip("Intra-op threads of the engine; auto lets the engine decide")

        self._open_model = QtWidgets.QToolButton()
        self._open_model.setText("Open…")
        self._open_model.setToolTip("Open a model file (.onnx, .pt2, .pt/.jit TorchScript) — or drop one on the "
                                    "window")
        self._open_model.clicked.connect(self.sig_open_model_requested)
        model_row = QtWidgets.QHBoxLayout()
        model_row.setContentsMargins(0, 0, 0, 0)
        model_row.addWidget(self._combos["model"], 1)
        model_row.addWidget(self._open_model)

        self._name = QtWidgets.QLineEdit()
        self._name.setPlaceholderText("optional")
        self._name.setToolTip("A name to find this run again in the history")

        form = QtWidgets.QFormLayout()
        form.setFieldGrowthPolicy(QtWidgets.QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)
        form.setLabelAlignment(QtCore.Qt.AlignmentFlag.AlignRight | QtCore.Qt.AlignmentFlag.AlignVCenter)
        form.addRow("Model", model_row)
        form.addRow("Engine", self._combos["engine"])
        form.addRow("Target", self._combos["target"])
        form.addRow("Precision", self._combos["precision"])
        form.addRow("Mode", self._combos["mode"])
        form.addRow("Scenario", self._combos["scenario"])
        form.addRow("Batch (samples)", self._batch)
        form.addRow("Threads", self._threads)
        form.addRow("Duration", self._duration)
        form.addRow("Iterations (count)", self._iterations)
        form.addRow("Run name", self._name)

        self._run_button = QtWidgets.QPushButton("Run")
        self._run_button.setFont(theme.font(theme.AXIS_LABEL_PT, bold=True))
        self._run_button.setToolTip("Start the run (Ctrl+R)")
        self._run_button.setMinimumHeight(36)
        self._run_button.clicked.connect(self.sig_run_requested)
        self._analyze_button = QtWidgets.QPushButton("Analyze")
        self._analyze_button.setFont(theme.font(theme.AXIS_LABEL_PT))
        self._analyze_button.setToolTip(ANALYZE_TIP)
        self._analyze_button.setMinimumHeight(36)
        self._analyze_button.clicked.connect(self.sig_analyze_requested)
        self._stop_button = QtWidgets.QPushButton("Stop")
        self._stop_button.setFont(theme.font(theme.AXIS_LABEL_PT))
        self._stop_button.setToolTip("Stop the run; what was measured so far is kept")
        self._stop_button.setMinimumHeight(36)
        self._stop_button.clicked.connect(self.sig_stop_requested)
        buttons = QtWidgets.QHBoxLayout()
        buttons.addWidget(self._run_button, 2)
        buttons.addWidget(self._analyze_button, 2)
        buttons.addWidget(self._stop_button, 1)

        self.scenario_section = OptionsSection("Scenario options")
        self.engine_section = OptionsSection("Engine options")
        self.engine_section.setCheckable(True)  # collapsed by default: most runs keep the engine's defaults
        self.engine_section.setChecked(False)
        self.engine_section.toggled.connect(self._show_engine_options)

        layout = QtWidgets.QVBoxLayout(self)
        layout.addLayout(form)
        layout.addWidget(self.scenario_section)
        layout.addWidget(self.engine_section)
        layout.addSpacing(6)
        layout.addLayout(buttons)
        layout.addStretch(1)

        self._update_buttons()

    # ---- Public API
    def set_choices(self, field: str, items: list[tuple[str, str, bool, str]]) -> None:
        """Fill ``model``, ``engine`` or ``target`` with (value, label, enabled, tooltip) items.

        A disabled item stays visible, greyed, with its tooltip saying why, and cannot be chosen. The current choice
        is kept when still offered and enabled; otherwise the first enabled item is chosen.
        """
        combo = self._combo(field)
        previous = combo.currentData(_VALUE_ROLE)
        model = combo.model()
        combo.blockSignals(True)
        try:
            combo.clear()
            for value, label, enabled, tooltip in items:
                combo.addItem(label, value)
                index = combo.count() - 1
                if tooltip:
                    combo.setItemData(index, tooltip, QtCore.Qt.ItemDataRole.ToolTipRole)
                if not enabled and isinstance(model, QtGui.QStandardItemModel):
                    model.item(index).setEnabled(False)
            index = self._enabled_index(combo, previous)
            if index < 0:
                index = next((i for i in range(combo.count()) if self._is_enabled(combo, i)), -1)
            combo.setCurrentIndex(index)
        finally:
            combo.blockSignals(False)
        self._sync_combo_tooltip(combo)
        self._update_buttons()
        current = combo.currentData(_VALUE_ROLE)
        if current != previous and current is not None:
            self.sig_choice_changed.emit(field, current)

    def values(self) -> dict:
        """The current choices by option path; None where left at auto / empty / the default."""
        iterations = self._iterations.value()
        name = self._name.text().strip()
        return {
            **{field: self._combos[field].currentData(_VALUE_ROLE) for field in CHOICE_FIELDS},
            "batch": self._batch.value(),
            "threads": self._threads.value() or None,
            "duration_s": round(self._duration.value(), 1),
            "iterations": iterations or None,
            "name": name or None,
            **self.scenario_section.values(),
            **self.engine_section.values(),
        }

    def set_option_fields(self, scenario: list[dict], engine: list[dict]) -> None:
        """Show the options of the chosen scenario and engine (plain descriptions, see widgets.options_form)."""
        self.scenario_section.set_fields(scenario)
        self.engine_section.set_fields(engine)
        self._show_engine_options(self.engine_section.isChecked())

    def set_values(self, values: dict) -> None:
        """Fill the form from ``values`` (e.g. a past run); unknown keys, unknown or disabled choices and values
        of the wrong type are ignored, leaving that field as it was."""
        for field in CHOICE_FIELDS:
            if field in values:
                combo = self._combos[field]
                index = self._enabled_index(combo, values[field])
                if index >= 0:
                    combo.setCurrentIndex(index)
        for key, spin in (("batch", self._batch), ("iterations", self._iterations), ("threads", self._threads)):
            if key in values:
                value = values[key]
                if value is None and key in ("iterations", "threads"):
                    value = 0
                try:
                    spin.setValue(int(value))
                except (TypeError, ValueError):
                    pass
        if "duration_s" in values:
            try:
                self._duration.setValue(float(values["duration_s"]))
            except (TypeError, ValueError):
                pass
        if "name" in values:
            name = values["name"]
            self._name.setText("" if name is None else str(name))
        self.scenario_section.set_values(values)
        self.engine_section.set_values(values)

    def set_running(self, running: bool) -> None:
        """While running: inputs locked, Run disabled, Stop enabled; and the other way round."""
        self._running = bool(running)
        for widget in self._inputs():
            widget.setEnabled(not self._running)
        self._update_buttons()

    def is_running(self) -> bool:
        return self._running

    def combo(self, field: str) -> QtWidgets.QComboBox:
        """The combo box of ``model``, ``engine`` or ``target`` (for tests and the main window's focus order)."""
        return self._combo(field)

    @property
    def run_button(self) -> QtWidgets.QPushButton:
        return self._run_button

    @property
    def analyze_button(self) -> QtWidgets.QPushButton:
        return self._analyze_button

    @property
    def stop_button(self) -> QtWidgets.QPushButton:
        return self._stop_button

    # ---- Private API
    def _combo(self, field: str) -> QtWidgets.QComboBox:
        try:
            return self._combos[field]
        except KeyError:
            raise ValueError(f"field must be one of {', '.join(CHOICE_FIELDS)}, got {field!r}") from None

    def _inputs(self) -> list[QtWidgets.QWidget]:
        return [*self._combos.values(), self._open_model, self._batch, self._threads, self._duration,
                self._iterations, self._name, self.scenario_section, self.engine_section]

    def _show_engine_options(self, shown: bool) -> None:
        """The engine section folds to its title when unticked; its values still count (the defaults)."""
        for path in self.engine_section.paths():
            editor = self.engine_section.editor(path)
            editor.setVisible(shown)
            label = self.engine_section.layout().labelForField(editor)
            if label is not None:
                label.setVisible(shown)

    @staticmethod
    def _is_enabled(combo: QtWidgets.QComboBox, index: int) -> bool:
        model = combo.model()
        return bool(model.flags(model.index(index, 0)) & QtCore.Qt.ItemFlag.ItemIsEnabled)

    def _enabled_index(self, combo: QtWidgets.QComboBox, value) -> int:
        if value is None:
            return -1
        index = combo.findData(value, _VALUE_ROLE)
        return index if index >= 0 and self._is_enabled(combo, index) else -1

    def _sync_combo_tooltip(self, combo: QtWidgets.QComboBox) -> None:
        tip = combo.currentData(QtCore.Qt.ItemDataRole.ToolTipRole)
        combo.setToolTip(tip or "")

    def _on_choice_changed(self, field: str) -> None:
        combo = self._combos[field]
        self._sync_combo_tooltip(combo)
        self._update_buttons()
        value = combo.currentData(_VALUE_ROLE)
        if value is not None:
            self.sig_choice_changed.emit(field, value)

    def _update_buttons(self) -> None:
        missing = [f for f in CHOICE_FIELDS if self._combos[f].currentData(_VALUE_ROLE) is None]
        self._run_button.setEnabled(not self._running and not missing)
        self._analyze_button.setEnabled(not self._running and not missing)
        if missing and not self._running:
            self._run_button.setToolTip(f"Choose a {', '.join(missing)} first")
            self._analyze_button.setToolTip(f"Choose a {', '.join(missing)} first")
        else:
            self._run_button.setToolTip("Start the run (Ctrl+R)")
            self._analyze_button.setToolTip(ANALYZE_TIP)
        self._stop_button.setEnabled(self._running)
