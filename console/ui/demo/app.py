"""`labconsole demo PLAYLIST`: the whole window (history, telemetry, pages) with demo mode on top; Esc leaves
demo mode into the ordinary window, where every run of the playlist is in the history."""

from __future__ import annotations

from console import paths
from console.demo.playlist import Playlist


def run_demo(playlist: Playlist, db: str | None = None, theme_mode: str | None = None,
             full_screen: bool = True) -> int:
    from console.ui.app import application, attach_workspace
    from console.ui.main_window import MainWindow

    app = application()
    window = MainWindow(paths.history_db(db))
    attach_workspace(window)
    if window.enter_demo_mode(playlist, theme_mode=theme_mode, full_screen=full_screen) is None:
        window.show()  # the history is unusable: the window says why
    return app.exec()
