"""Launched by the start-up benchmark: print 'painted' at the window's first paint, 'ready' at the first paint with
the Run page usable (built, its form enabled), 'plots' at the first paint with the Run page's live plots built too,
then exit. The bare window prints all three at its first paint: it has nothing more to build.

Usage: python startup_probe.py bare|console DB_PATH
"""

import sys


def main() -> None:
    mode, db = sys.argv[1], sys.argv[2]
    from PySide6 import QtCore, QtWidgets

    class Paints(QtCore.QObject):
        """Prints each milestone at the first paint that shows it; asks for paints until the last one."""

        def __init__(self, milestones):
            super().__init__()
            self.milestones = list(milestones)  # (name, reached) in order

        def eventFilter(self, obj, event):  # noqa: N802 — Qt override
            if event.type() == QtCore.QEvent.Type.Paint:
                while self.milestones and self.milestones[0][1]():
                    print(self.milestones.pop(0)[0], flush=True)
                if self.milestones:
                    QtCore.QTimer.singleShot(10, obj.update)  # ask for another paint until the pages are in
                else:
                    obj.removeEventFilter(self)
                    QtCore.QTimer.singleShot(0, app.quit)
            return False

    if mode == "bare":
        app = QtWidgets.QApplication(sys.argv[:1])
        window = QtWidgets.QMainWindow()
        window.resize(1400, 860)
        watcher = Paints([("painted", lambda: True), ("ready", lambda: True), ("plots", lambda: True)])
        window.installEventFilter(watcher)
        window.show()
    else:
        from console.ui.app import application, launch

        app = application()
        window = launch(db)

        def run_page():
            return window.pages.get("run")  # never builds it: only what the window built by itself counts

        watcher = Paints([("painted", lambda: True),
                          ("ready", lambda: run_page() is not None and run_page().form.isEnabled()),
                          ("plots", lambda: run_page().plots_built)])
        window.installEventFilter(watcher)
    app.exec()
    window.close()


if __name__ == "__main__":
    main()
