"""Launched by the start-up benchmark: print 'painted' at the window's first paint, 'ready' when its pages
are built and painted, then exit.

Usage: python startup_probe.py bare|console DB_PATH
"""

import sys


def main() -> None:
    mode, db = sys.argv[1], sys.argv[2]
    from PySide6 import QtCore, QtWidgets

    class Paints(QtCore.QObject):
        def __init__(self, window, ready):
            super().__init__()
            self.window, self.ready, self.painted = window, ready, False

        def eventFilter(self, obj, event):  # noqa: N802 — Qt override
            if event.type() == QtCore.QEvent.Type.Paint:
                if not self.painted:
                    self.painted = True
                    print("painted", flush=True)
                if self.ready():
                    print("ready", flush=True)
                    obj.removeEventFilter(self)
                    QtCore.QTimer.singleShot(0, app.quit)
                else:
                    QtCore.QTimer.singleShot(10, obj.update)  # ask for another paint until the pages are in
            return False

    if mode == "bare":
        app = QtWidgets.QApplication(sys.argv[:1])
        window = QtWidgets.QMainWindow()
        window.resize(1400, 860)
        watcher = Paints(window, lambda: True)
        window.installEventFilter(watcher)
        window.show()
    else:
        from console.ui.app import application, launch

        app = application()
        window = launch(db)
        watcher = Paints(window, lambda: window.run_page is not None)
        window.installEventFilter(watcher)
    app.exec()
    window.close()


if __name__ == "__main__":
    main()
