"""Launched by the start-up benchmark: build a window, print 'painted' at its first paint, exit.

Usage: python startup_probe.py bare|console DB_PATH
"""

import sys


def main() -> None:
    mode, db = sys.argv[1], sys.argv[2]
    from PySide6 import QtCore, QtWidgets

    class FirstPaint(QtCore.QObject):
        def eventFilter(self, obj, event):  # noqa: N802 — Qt override
            if event.type() == QtCore.QEvent.Type.Paint:
                print("painted", flush=True)
                QtCore.QTimer.singleShot(0, app.quit)
                self.deleteLater()
            return False

    if mode == "bare":
        app = QtWidgets.QApplication(sys.argv[:1])
        window = QtWidgets.QMainWindow()
        window.resize(1400, 860)
    else:
        from console.ui.app import application, build_main_window

        app = application()
        window = build_main_window(db)
    watcher = FirstPaint()
    window.installEventFilter(watcher)
    window.show()
    app.exec()
    window.close()


if __name__ == "__main__":
    main()
