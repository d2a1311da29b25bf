"""A small dialog for one run's tags and note (the History page's "Tags and note…" action).

Tags are typed separated by commas, with the history's other tags offered as completions, so a lab keeps one
spelling ("nightly", not "Nightly" and "night"). The note is free text. A view: the caller reads `tags()` and
`note()` after it was accepted and stores them.
"""

from __future__ import annotations

from collections.abc import Iterable

from PySide6 import QtCore, QtWidgets

from widgets import theme
from widgets.history_table import parse_tags


class TagsNoteDialog(QtWidgets.QDialog):
    def __init__(self, title: str, tags: Iterable[str], note: str, known_tags: Iterable[str] = (),
                 parent: QtWidgets.QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("tags_note_dialog")
        self.setWindowTitle(title)
        self.tags_edit = QtWidgets.QLineEdit(", ".join(tags))
        self.tags_edit.setPlaceholderText("e.g. nightly, driver-555, after-upgrade")
        completer = QtWidgets.QCompleter(sorted(set(known_tags), key=str.lower), self)
        completer.setCaseSensitivity(QtCore.Qt.CaseSensitivity.CaseInsensitive)
        self.tags_edit.setCompleter(completer)
        self.note_edit = QtWidgets.QPlainTextEdit(note or "")
        self.note_edit.setPlaceholderText("what was special about this run (optional)")
        self.note_edit.setMinimumHeight(90)
        hint = QtWidgets.QLabel("Tags are separated by commas; an empty note clears it.")
        hint.setStyleSheet(f"color: {theme.MUTED};")
        form = QtWidgets.QFormLayout()
        form.addRow("&Tags", self.tags_edit)
        form.addRow("&Note", self.note_edit)
        buttons = QtWidgets.QDialogButtonBox(QtWidgets.QDialogButtonBox.StandardButton.Ok
                                             | QtWidgets.QDialogButtonBox.StandardButton.Cancel)
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        layout = QtWidgets.QVBoxLayout(self)
        layout.addLayout(form)
        layout.addWidget(hint)
        layout.addWidget(buttons)
        self.resize(480, 240)

    def tags(self) -> list[str]:
        return parse_tags(self.tags_edit.text())

    def note(self) -> str:
        return self.note_edit.toPlainText().strip()
