"""Start-up: launch → first painted main window, against a bare PySide6 QMainWindow in the same run.

Goal ≤ 1.5× for the first paint. The console paints its shell (menus, tabs, status bar) first and builds the
pages (pyqtgraph, SQLite, the runner) right after; the time until those pages are painted ("ready") is
reported beside it, so neither number hides the other. Launches alternate (and so does who goes first in a
pair) so machine noise hits both alike; the figure is the median per-pair ratio with its distribution-free 95%
interval, judged by the shared rule (bench_verdict).
"""

import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from bench_stats import median_with_interval, paired_ratios
from bench_verdict import Goal, judge

PROBE = Path(__file__).with_name("startup_probe.py")
ROUNDS = 11  # 11 pairs bound a median between the 2nd and 10th values at 95%
GOAL = Goal.at_most(1.5)


def launch(mode: str, db: Path) -> tuple[float, float]:
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen")
    started = time.perf_counter()
    proc = subprocess.Popen([sys.executable, str(PROBE), mode, str(db)], stdout=subprocess.PIPE, text=True, env=env)
    assert proc.stdout.readline().strip() == "painted", f"{mode} window never painted"
    painted = time.perf_counter() - started
    assert proc.stdout.readline().strip() == "ready", f"{mode} window never became ready"
    ready = time.perf_counter() - started
    proc.wait(timeout=60)
    return painted, ready


def test_startup_ratio_against_bare_qt(tmp_path, bench):
    db = tmp_path / "history.db"
    launch("console", db)  # creates the database and warms the OS file cache for both
    launch("bare", db)
    bare, console = [], []
    for k in range(ROUNDS):
        for mode in ("bare", "console") if k % 2 == 0 else ("console", "bare"):
            (bare if mode == "bare" else console).append(launch(mode, db))
    bare_paint = statistics.median(p for p, _ in bare)
    console_paint = statistics.median(p for p, _ in console)
    console_ready = statistics.median(r for _, r in console)
    ratio, interval = median_with_interval(paired_ratios([p for p, _ in console], [p for p, _ in bare]))
    print(f"\n[benchmark] start-up to first paint: console {console_paint * 1000:.0f} ms, bare QMainWindow "
          f"{bare_paint * 1000:.0f} ms; console pages ready {console_ready * 1000:.0f} ms "
          f"({console_ready / bare_paint:.2f}× bare)")
    bench.record(judge("start-up: console/bare Qt first paint", ratio, interval, GOAL, samples=ROUNDS,
                       console_paint_ms=console_paint * 1000, bare_paint_ms=bare_paint * 1000,
                       console_ready_ms=console_ready * 1000))
