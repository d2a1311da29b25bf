"""Demo mode in the window: `open_demo` puts a DemoWindow full screen over (or beside) the main window.

The demo window is a child window of the main window: it uses the main window's RunController (so its runs are
stored, shown on the Run page and exclusive with sweeps like any other), and closes with it. On a machine with
two screens it goes to the screen the main window is not on (the projector); on one screen the main window is
hidden meanwhile, so its own plots do not redraw behind the demo on a machine that is also measuring.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from PySide6 import QtGui, QtWidgets

from console.demo.playlist import Playlist, PlaylistError, load
from console.ui.demo.window import DemoWindow
from widgets import theme

__all__ = ["DemoWindow", "open_demo", "ask_playlist"]


def open_demo(window: Any, playlist: Playlist | None = None, theme_mode: str | None = None,
              full_screen: bool = True, ask: bool = False) -> DemoWindow | None:
    """Open demo mode over `window` (a MainWindow); `ask`: pick a playlist file first. None when it cannot
    open (no usable history, or the file dialog was cancelled / the file refused, which was said)."""
    if window.controller is None:
        _warn(window, "Demo mode needs the history to record its runs: " + (window.startup_error or
                                                                           "the history is not open."))
        return None
    existing = window.findChild(DemoWindow)
    if existing is not None and existing.isVisible():
        existing.raise_()
        existing.activateWindow()
        return existing
    if ask:
        playlist = ask_playlist(window, window.settings)
        if playlist is None:
            return None
    if theme_mode in ("light", "dark"):
        window.settings.save_demo_theme(theme_mode)
    scheme = theme_mode or window.settings.demo_theme() or theme.current().name
    if playlist is not None and Path(playlist.source).is_file():
        window.settings.save_demo_playlist(str(Path(playlist.source).resolve()))
    demo = DemoWindow(window.controller, playlist, scheme, window.settings, parent=window)
    screen = _screen_for(window)
    if full_screen and (screen is None or screen == window.screen()) and window.isVisible():
        window.hide()  # before the demo shows: hiding the parent afterwards drops the child's full-screen state
    if full_screen:
        if screen is not None:
            demo.setScreen(screen)
            demo.move(screen.geometry().topLeft())  # not setGeometry: it would keep showFullScreen from taking
        demo.showFullScreen()
    else:
        demo.show()
    demo.sig_closed.connect(lambda: _back_to(window))
    demo.start()
    demo.activateWindow()
    return demo


def ask_playlist(parent: QtWidgets.QWidget, settings: Any) -> Playlist | None:
    """A file dialog for a playlist; a refused file is explained (problem and fix) and None returned."""
    last = settings.demo_playlist()
    path, _ = QtWidgets.QFileDialog.getOpenFileName(parent, "Open demo playlist", str(Path(last).parent) if last
                                                    else "", "Demo playlists (*.json);;All files (*)")
    if not path:
        return None
    try:
        return load(path)
    except PlaylistError as exc:
        _warn(parent, str(exc), "Cannot play this playlist")
        return None


def _screen_for(window: QtWidgets.QWidget) -> QtGui.QScreen | None:
    """Another screen than the main window's when there is one (the projector), else the main window's."""
    current = window.screen() or QtGui.QGuiApplication.primaryScreen()
    others = [s for s in QtGui.QGuiApplication.screens() if s != current]
    return others[0] if others and window.isVisible() else current


def _back_to(window: QtWidgets.QWidget) -> None:
    if not window.isVisible():
        window.show()
    window.activateWindow()


def _warn(parent: QtWidgets.QWidget, message: str, title: str = "Demo mode") -> None:
    box = QtWidgets.QMessageBox(QtWidgets.QMessageBox.Icon.Warning, title, message,
                                QtWidgets.QMessageBox.StandardButton.Ok, parent)
    box.setObjectName("error_dialog")
    box.open()
