"""Finds hardware targets in the background (a worker process imports torch, never the GUI)."""

from __future__ import annotations

import threading

from PySide6 import QtCore

from console.targets import discover_targets


class TargetDiscovery(QtCore.QObject):
    sig_targets = QtCore.Signal(object)  # list of target dicts, delivered on the GUI thread

    def __init__(self, parent: QtCore.QObject | None = None):
        super().__init__(parent)
        self._thread: threading.Thread | None = None
        self._stopped = False

    def start(self) -> None:
        self._thread = threading.Thread(target=self._discover, name="target-discovery", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stopped = True

    def _discover(self) -> None:
        targets = discover_targets()
        if not self._stopped:
            self.sig_targets.emit(targets)
