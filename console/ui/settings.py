"""Remembered settings (QSettings): the last run setup, window geometry, the open page."""

from __future__ import annotations

import json
from typing import Any

from PySide6 import QtCore, QtWidgets

ORGANIZATION = "LabConsole"
APPLICATION = "Lab Console"


class Settings:
    def __init__(self) -> None:
        self._qs = QtCore.QSettings(ORGANIZATION, APPLICATION)

    def form_values(self) -> dict[str, Any]:
        try:
            return json.loads(self._qs.value("run/form", "{}"))
        except (TypeError, ValueError):
            return {}

    def save_form_values(self, values: dict[str, Any]) -> None:
        self._qs.setValue("run/form", json.dumps(values))

    def model_files(self) -> list[str]:
        try:
            files = json.loads(self._qs.value("run/model_files", "[]"))
        except (TypeError, ValueError):
            return []
        return [f for f in files if isinstance(f, str)]

    def save_model_files(self, files: list[str]) -> None:
        self._qs.setValue("run/model_files", json.dumps(files))

    def tab_index(self) -> int:
        try:
            return int(self._qs.value("window/tab", 0))
        except (TypeError, ValueError):
            return 0

    def save_tab_index(self, index: int) -> None:
        self._qs.setValue("window/tab", index)

    def restore_window(self, window: QtWidgets.QMainWindow) -> None:
        geometry = self._qs.value("window/geometry")
        if geometry is None or not window.restoreGeometry(geometry):
            window.resize(1400, 860)

    def save_window(self, window: QtWidgets.QMainWindow) -> None:
        self._qs.setValue("window/geometry", window.saveGeometry())
        self._qs.sync()
