"""Demo mode's Qt-free core: the playlist file (`playlist`) and the figures shown on the big screen (`figures`).

The window side (full-screen views, the playlist director) lives in `console.ui.demo`; this package imports no
Qt, so `labconsole demo --check` validates a playlist without opening a window and the unit tests need no display.
"""
