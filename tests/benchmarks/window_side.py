"""Launched by the window-vs-headless benchmark (test_window_vs_headless.py): one run in a real window, in a fresh
process, as a user would make it; prints one JSON line with the run's record and what the window did meanwhile.

Usage:
  python window_side.py window VALUES_JSON DB   the Run page: a MainWindow (live plots on screen, offscreen Qt)
                                                starts the run from these form values
  python window_side.py demo PLAYLIST DB        `labconsole demo PLAYLIST --once --windowed --db DB`, through the
                                                CLI's own entry point; the process quits when the playlist is done

A fresh process per run: the window side pays its own start-up (outside the measured phase, as the headless side
does), and nothing the window did in one run (caches, a busy hub) is still running beside the next headless one.

Besides the record, the script measures the window process's own CPU time over the measuring phase
(time.process_time between the `measuring` phase event and the next phase event, as the GUI thread sees them)
and counts the Run page's latency-plot frames in that phase, so the benchmark has both figures even where the run
summary has no console_cpu of its own.
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any


class PhaseWatch:
    """The window process's CPU time and the live latency plot's frames between the measuring phase's start and
    the next phase (or the run's end)."""

    def __init__(self, frames=lambda: 0):
        self._frames = frames
        self._start: tuple[float, float, int] | None = None
        self.figure: dict[str, Any] | None = None

    def event(self, event: dict[str, Any]) -> None:
        kind = event.get("type")
        if kind == "phase" and event.get("phase") == "measuring":
            self._start = (time.process_time(), time.perf_counter(), self._frames())
        elif self._start is not None and self.figure is None and kind in ("phase", "finished"):
            cpu0, wall0, frames0 = self._start
            wall = time.perf_counter() - wall0
            self.figure = {"percent_of_core": 100.0 * (time.process_time() - cpu0) / wall if wall > 0 else None,
                           "wall_s": wall, "latency_frames": self._frames() - frames0,
                           "method": "time.process_time() of the window process between the measuring phase's "
                                     "start and end events on the GUI thread (the telemetry sampler not counted)"}


def window_run(values: dict[str, Any], db: str) -> dict[str, Any]:
    from PySide6 import QtCore

    from console.ui.app import application, build_main_window

    app = application()
    window = build_main_window(db, discover_targets=False)
    window.resize(1400, 860)
    window.show()
    window.show_page("run")
    plots = window.run_page.plots
    watch = PhaseWatch(lambda: plots.latency.frames)
    out: dict[str, Any] = {}
    window.controller.sig_event.connect(watch.event)

    def finished(record: dict[str, Any]) -> None:
        out["record"] = record
        QtCore.QTimer.singleShot(0, app.quit)

    def start() -> None:
        if window.start_run(dict(values)) is None:
            out["error"] = "the window refused to start the run (a dialog said why)"
            app.quit()

    window.controller.sig_finished.connect(finished)
    QtCore.QTimer.singleShot(300, start)  # once the window has painted, as a user's click would come
    app.exec()
    out["watch"] = watch.figure
    out["frames_total"] = plots.latency.frames
    window.close()
    return out


def demo_run(playlist: str, db: str) -> dict[str, Any]:
    from PySide6 import QtCore, QtWidgets

    from console.cli import main as cli_main
    from console.ui.demo import window as demo_window

    out: dict[str, Any] = {"records": []}
    watch = PhaseWatch()
    cls = demo_window.DemoWindow
    original_event, original_finished, original_done = cls._event, cls._run_finished, cls._playlist_done

    def on_event(self, event):
        watch.event(event)
        original_event(self, event)

    def on_finished(self, info):
        watch.event({"type": "finished"})
        out["records"].append(info["record"])
        original_finished(self, info)

    def on_done(self, counts):
        original_done(self, counts)
        out["counts"] = counts
        QtCore.QTimer.singleShot(0, QtWidgets.QApplication.quit)

    # Before the demo window is made: its signals connect to these at construction.
    cls._event, cls._run_finished, cls._playlist_done = on_event, on_finished, on_done
    out["exit_code"] = cli_main(["demo", playlist, "--once", "--windowed", "--db", db])
    out["watch"] = watch.figure
    return out


def main() -> None:
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    mode, arg, db = sys.argv[1], sys.argv[2], sys.argv[3]
    if mode == "window":
        out = window_run(json.loads(arg), db)
    elif mode == "demo":
        out = demo_run(arg, db)
    else:
        raise SystemExit(f"window_side.py: unknown mode {mode!r} (window or demo)")
    print("RESULT " + json.dumps(out, default=_plain), flush=True)


def _plain(value: Any) -> Any:
    """numpy scalars and arrays in a record, as JSON."""
    if hasattr(value, "tolist"):
        return value.tolist()
    return str(value)


if __name__ == "__main__":
    main()
