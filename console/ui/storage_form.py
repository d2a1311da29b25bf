"""A storage kind's form, built from the same argparse flags as `labconsole storage KIND` (the kind's
console/cli/storage_<kind>.py `add_arguments`), and read back through the same `options_from`.

Why from the CLI's flags: the kind's owner declares its options once; the window then offers exactly the flags the
command line takes, validates them the same way (argparse's types and choices, then the kind's `options_from`,
whose StorageError names the problem and the fix), and a value typed here means what it means there. A flag with
choices is a combo box, a switch (store_true) a check box, anything else a line whose placeholder is the default;
a directory or file flag gets a Choose… button. Values are kept as the text typed (remembered per kind).
"""

from __future__ import annotations

import argparse
from typing import Any

from PySide6 import QtWidgets

SHARED_DESTS = {"help", "json", "db", "tag", "timeout", "no_telemetry"}  # added by storage_cmd for every kind: not the form's
_PATH_WORDS = ("dir", "path", "file", "folder")  # a dest ending so names a path: a Choose… button
DEFAULT_CHOICE = "(default)"  # a choice flag given no default: leave it out, the kind decides


class FormError(ValueError):
    """The form's values are refused; the message names the field and, from the kind, the fix."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # noqa: D401 — argparse's name; raise instead of exiting the window
        raise FormError(message)


class StorageForm(QtWidgets.QWidget):
    """Fields for one kind's flags; `options()` returns its validated options dict or raises FormError."""

    # ---- Public API
    def __init__(self, kind: str, module: Any, parent: QtWidgets.QWidget | None = None):
        super().__init__(parent)
        self.kind, self.module = kind, module
        self.parser = _Parser(prog=f"labconsole storage {kind}", add_help=False)
        module.add_arguments(self.parser)
        self.parser.set_defaults(json=False, db=None, tag=None, timeout=3600.0)
        self.fields: dict[str, tuple[argparse.Action, QtWidgets.QWidget]] = {}
        layout = QtWidgets.QFormLayout(self)
        layout.setFieldGrowthPolicy(QtWidgets.QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)
        for action in self.parser._actions:  # argparse keeps no public list of its actions
            if action.dest in SHARED_DESTS or action.help == argparse.SUPPRESS:
                continue
            widget, editor = self._field(action)
            name = action.option_strings[-1] if action.option_strings else action.dest
            label = QtWidgets.QLabel(name)
            label.setToolTip(_help(action))
            layout.addRow(label, widget)
            self.fields[name] = (action, editor)

    def values(self) -> dict[str, Any]:
        """The form as typed: flag → text (or bool for a switch)."""
        out: dict[str, Any] = {}
        for name, (_action, editor) in self.fields.items():
            if isinstance(editor, QtWidgets.QCheckBox):
                out[name] = editor.isChecked()
            elif isinstance(editor, QtWidgets.QComboBox):
                out[name] = editor.currentText()
            else:
                out[name] = editor.text()
        return out

    def set_values(self, values: dict[str, Any]) -> None:
        """Fill the fields from remembered values (unknown or stale ones are skipped)."""
        for name, value in (values or {}).items():
            if name not in self.fields:
                continue
            editor = self.fields[name][1]
            if isinstance(editor, QtWidgets.QCheckBox):
                editor.setChecked(bool(value))
            elif isinstance(editor, QtWidgets.QComboBox):
                if editor.findText(str(value)) >= 0:
                    editor.setCurrentText(str(value))
            elif isinstance(value, str):
                editor.setText(value)

    def argv(self) -> list[str]:
        """The command line these values make (flags left empty are not given: the kind's defaults apply)."""
        args: list[str] = []
        positionals: list[str] = []
        for name, (action, editor) in self.fields.items():
            if isinstance(editor, QtWidgets.QCheckBox):
                if editor.isChecked():
                    args.append(name)
                continue
            text = editor.currentText() if isinstance(editor, QtWidgets.QComboBox) else editor.text().strip()
            if text in ("", DEFAULT_CHOICE) or (isinstance(editor, QtWidgets.QComboBox)
                                                and text == _default_text(action)):
                continue
            parts = text.split() if action.nargs in ("+", "*") or isinstance(action.nargs, int) else [text]
            if not action.option_strings:
                positionals += parts
            else:
                args += [name, *parts]
        return [*positionals, *args]

    def options(self) -> dict[str, Any]:
        """The kind's validated options, or FormError naming the problem (and the kind's fix)."""
        from engines.storage.errors import StorageError

        argv = self.argv()
        try:
            args = self.parser.parse_args(argv)
        except FormError:
            raise
        except SystemExit as exc:  # an action that exits (a custom --list, say) must not close the window
            raise FormError(f"these values are refused ({' '.join(argv)}): exit {exc.code}") from None
        try:
            return dict(self.module.options_from(args))
        except StorageError as exc:
            raise FormError(f"{exc.message}. Fix: {exc.fix}" if exc.fix else exc.message) from None

    # ---- Private API
    def _field(self, action: argparse.Action) -> tuple[QtWidgets.QWidget, QtWidgets.QWidget]:
        """(what the form shows, the editor that holds the value)."""
        tip = _help(action)
        if action.nargs == 0:  # a switch: store_true / store_const / count
            box = QtWidgets.QCheckBox()
            box.setToolTip(tip)
            return box, box
        if action.choices:
            combo = QtWidgets.QComboBox()
            default = _default_text(action) or DEFAULT_CHOICE
            items = [str(choice) for choice in action.choices]
            if default not in items:
                items.insert(0, default)
            combo.addItems(items)
            combo.setCurrentText(default)
            combo.setToolTip(tip)
            return combo, combo
        line = QtWidgets.QLineEdit()
        line.setToolTip(tip)
        default = _default_text(action)
        line.setPlaceholderText(f"default: {default}" if default else (action.metavar or "") if
                                isinstance(action.metavar, str) else "")
        if not action.dest.lower().endswith(_PATH_WORDS):
            return line, line
        holder = QtWidgets.QWidget()
        row = QtWidgets.QHBoxLayout(holder)
        row.setContentsMargins(0, 0, 0, 0)
        row.addWidget(line, 1)
        choose = QtWidgets.QPushButton("Choose…")
        wants_file = "file" in action.dest.lower() or "path" in action.dest.lower()
        choose.clicked.connect(lambda: self._choose(line, wants_file))
        row.addWidget(choose)
        return holder, line

    def _choose(self, line: QtWidgets.QLineEdit, wants_file: bool) -> None:
        if wants_file:
            chosen, _ = QtWidgets.QFileDialog.getOpenFileName(self, "Choose a file", line.text())
        else:
            chosen = QtWidgets.QFileDialog.getExistingDirectory(self, "Choose a directory", line.text())
        if chosen:
            line.setText(chosen)


def _default_text(action: argparse.Action) -> str:
    default = action.default
    if default is None or default is argparse.SUPPRESS:
        return ""
    if isinstance(default, (list, tuple)):
        return " ".join(str(item) for item in default)
    return str(default)


def _help(action: argparse.Action) -> str:
    text = action.help or ""
    if text and "%(default)" in text:
        try:
            text = text % {"default": action.default}
        except (TypeError, ValueError, KeyError):
            pass
    return text.replace("%%", "%")
