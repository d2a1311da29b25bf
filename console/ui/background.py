"""Runs a slow call (target discovery, model inspection) on a thread; the result arrives as a Qt signal."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from PySide6 import QtCore


class BackgroundCall(QtCore.QObject):
    sig_done = QtCore.Signal(object)  # the result, on the GUI thread
    sig_failed = QtCore.Signal(str)  # "ExceptionType: message", on the GUI thread

    def __init__(self, parent: QtCore.QObject | None = None, done: Callable[[Any], None] | None = None,
                 failed: Callable[[str], None] | None = None):
        """`done` and `failed`, when given, are connected to sig_done and sig_failed."""
        super().__init__(parent)
        self._stopped = False
        if done is not None:
            self.sig_done.connect(done)
        if failed is not None:
            self.sig_failed.connect(failed)

    def start(self, function: Callable[..., Any], *args: Any) -> None:
        threading.Thread(target=self._call, args=(function, args), name="background-call", daemon=True).start()

    def stop(self) -> None:
        """Drop any result still to come (the window is closing)."""
        self._stopped = True

    def _call(self, function: Callable[..., Any], args: tuple) -> None:
        try:
            result = function(*args)
        except Exception as exc:  # noqa: BLE001 — reported to the window, which says what went wrong
            if not self._stopped:
                self.sig_failed.emit(f"{type(exc).__name__}: {exc}")
            return
        if not self._stopped:
            self.sig_done.emit(result)
