"""The Run page's setup, the main window's part that fills the form (mixed into MainWindow): the model list (the
catalog and the model files opened or dropped), the targets found in the background, the choices that fit the model
and target, the model file's inputs read in the background, and the question before a model file that is code."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from PySide6 import QtGui, QtWidgets


class RunSetupWindow:
    """Expects the window's `run_page`, `settings`, `status`, `_targets`, `_code_files`, `_cluster`, `_all_targets`
    and `_show_error` (console.ui.main_window)."""

    # ---- Public API (refresh_targets, open_model_dialog, add_model_file; attach() calls _attach_run_setup)
    def _attach_run_setup(self) -> None:
        """Called by attach() once the Run page is built: background discovery and inspection, the form's choices
        and its remembered values."""
        from console.ui.background import BackgroundCall

        self._discovery = BackgroundCall(self)
        self._discovery.sig_done.connect(self._set_targets)
        self._discovery.sig_failed.connect(lambda text: self.status.showMessage(f"Target discovery failed: {text}"))
        self._inspection = BackgroundCall(self)
        self._inspection.sig_done.connect(self._show_model_inputs)
        self._inspection.sig_failed.connect(self._model_unreadable)
        self._model_files: list[str] = self.settings.model_files()
        self._updating_choices = False
        self.run_page.form.sig_choice_changed.connect(self._choice_changed)
        self.run_page.form.sig_open_model_requested.connect(self.open_model_dialog)
        saved = self.settings.form_values()
        self._updating_choices = True  # the refresh below covers every choice these fills change
        try:
            self._fill_choices()
            self.run_page.form.set_values(saved)
        finally:
            self._updating_choices = False
        self._refresh_choices()
        self.run_page.form.set_values(saved)
        self.setAcceptDrops(True)

    def refresh_targets(self, refresh: bool = True) -> None:
        """Find targets in the background (cached per host unless `refresh`)."""
        from console.machine.targets import discover_targets

        self.status.showMessage("Discovering targets…" if refresh else self.status.currentMessage())
        self._discovery.start(discover_targets, refresh)
        if refresh and self._cluster is not None and self._cluster.address:
            self._cluster.connect_to(self._cluster.address)  # the nodes' targets too

    def open_model_dialog(self) -> None:
        from engines import backends

        path, _ = QtWidgets.QFileDialog.getOpenFileName(
            self, "Open model file", str(Path(self._model_files[0]).parent) if self._model_files else "",
            f"Model files ({' '.join('*' + ext for ext in backends.file_engines())});;All files (*)")
        if path:
            self.add_model_file(path)

    def add_model_file(self, path: str) -> bool:
        """Offer a model file in the model list and select it; a file type we refuse is explained, not added."""
        from engines import backends
        from engines.spec import RunSpec, SpecError

        path = str(Path(path).resolve())
        # the backend that reads this file type (an unknown type is refused by validate, whatever the engine)
        engine = backends.file_engines().get(Path(path).suffix.lower(), backends.names()[0])
        try:
            RunSpec(model=path, engine=engine).validate()
        except SpecError as exc:
            if exc.field == "model":
                self._show_error(f"{exc}", "Cannot open this model file")
                return False
        self._model_files = [path] + [f for f in self._model_files if f != path][:9]
        self.settings.save_model_files(self._model_files)
        self._fill_choices()
        self.run_page.form.set_values({"model": path})
        self._refresh_choices()
        self._inspect_current_model()
        return True

    def dragEnterEvent(self, event: QtGui.QDragEnterEvent) -> None:  # noqa: N802 — Qt override
        if event.mimeData().hasUrls() and any(url.isLocalFile() for url in event.mimeData().urls()):
            event.acceptProposedAction()

    def dropEvent(self, event: QtGui.QDropEvent) -> None:  # noqa: N802 — Qt override
        files = [url.toLocalFile() for url in event.mimeData().urls() if url.isLocalFile()]
        if files and self.run_page is not None:
            event.acceptProposedAction()
            self.show_page("run")
            self.add_model_file(files[0])

    def _fill_choices(self) -> None:
        from console.spec.choices import model_choices
        from engines import catalog

        self.run_page.form.set_choices("model", model_choices(catalog.describe(), self._model_files))
        if not self._targets:
            self.run_page.form.set_choices("target", [("cpu", "cpu — host CPU", True, "discovering targets…")])

    def _set_targets(self, targets: list[dict[str, Any]]) -> None:
        from console.spec.choices import target_choices

        self._targets = targets
        current = self.run_page.form.values().get("target")
        self.run_page.form.set_choices("target", target_choices(self._all_targets()))
        self.run_page.form.set_values({"target": current})
        self._refresh_choices()
        cached = targets[0].get("cached_at") if targets else None
        self.status.showMessage(f"{sum(t['available'] for t in targets)} of {len(targets)} targets usable"
                                + (f" (cached {cached}; Run ▸ Refresh targets to rediscover)" if cached else ""))

    def _choice_changed(self, field: str, _value: str) -> None:
        if field in ("model", "engine", "target", "scenario") and not self._updating_choices:
            self._refresh_choices()
        if field == "model":
            self._inspect_current_model()

    def _refresh_choices(self) -> None:
        """Offer only the engines, precisions, modes and scenarios usable for this model on this target, and
        the options of the chosen scenario and engine (from their plug-ins)."""
        import dataclasses

        from console.spec.build import engine_fields, form_field, scenario_fields
        from console.spec.choices import engine_choices, mode_choices, precision_choices, scenario_choices
        from engines import backends

        form = self.run_page.form
        self._updating_choices = True
        try:
            values = form.values()
            target = next((t for t in self._all_targets() if t["id"] == values["target"]), None)
            form.set_choices("engine", engine_choices(backends.names(), values["model"], target))
            engine = form.values()["engine"]
            form.set_choices("precision", precision_choices(engine, target))
            form.set_choices("mode", mode_choices(engine, values["model"]))
            form.set_choices("scenario", scenario_choices(values["model"]))
            scenario = form.values()["scenario"]
            form.set_option_fields(
                scenario=[form_field(f) for f in scenario_fields(scenario)] if scenario else [],
                engine=[dataclasses.asdict(f) for f in engine_fields(engine)] if engine else [])
        finally:
            self._updating_choices = False

    def _inspect_current_model(self) -> None:
        from console.spec.model_info import inspect_model
        from engines.spec import is_model_path

        model = self.run_page.form.values().get("model") or ""
        self.run_page.inputs.clear()
        if is_model_path(model) and Path(model).is_file():
            self.status.showMessage(f"Reading the inputs of {Path(model).name}…")
            self._inspection.start(inspect_model, model)

    def _show_model_inputs(self, info: dict[str, Any]) -> None:
        if info.get("path") != self.run_page.form.values().get("model"):
            return  # the user picked another model meanwhile
        self.run_page.inputs.set_inputs(info.get("inputs") or [])
        self._code_files[info["path"]] = bool(info.get("runs_code"))
        self.status.showMessage(f"{Path(info['path']).name}: {info.get('format', '')}, "
                                f"{len(info.get('inputs') or [])} inputs, sha256 {str(info.get('sha256', ''))[:12]}…")

    def _model_unreadable(self, message: str) -> None:
        self.run_page.inputs.clear()
        self._show_error(f"Cannot read the model file: {message}", "Model file problem")

    def _confirm_code(self, spec, is_code: bool) -> bool:
        """A model file that is code (its inspection said so, or `is_code`) runs only when the user says Yes now;
        `spec.trust_code` is then set for this run only — never taken from the form or a stored spec."""
        spec.trust_code = False
        if not (spec.is_file and (is_code or self._code_files.get(spec.model))):
            return True
        if not self._trusts_code(spec.model):
            self.status.showMessage(f"Not started: {Path(spec.model).name} is code and was not trusted")
            return False
        spec.trust_code = True
        return True

    def _trusts_code(self, path: str) -> bool:
        """Ask before running a model file that is code (TorchScript): why it is code, what the sandbox does."""
        from engines.sandbox import available

        abi, why = available()
        confined = (f"The worker that runs it is sandboxed here (Landlock ABI {abi}): it can write only in its own "
                    "temporary folder and cannot open TCP connections; it can still read your files."
                    if abi else f"This machine offers no sandbox ({why}): it would run with all your rights.")
        text = (f"{Path(path).name} is TorchScript, and TorchScript is code: its forward and __setstate__ run as "
                "whoever made the file wrote them, and can create and write files.\n\n"
                f"{confined}\n\nRun it only if you trust where it came from. Run it this time?")
        buttons = QtWidgets.QMessageBox.StandardButton
        answer = QtWidgets.QMessageBox.question(self, "This model file is code", text, buttons.Yes | buttons.No,
                                                buttons.No)
        return answer == buttons.Yes
