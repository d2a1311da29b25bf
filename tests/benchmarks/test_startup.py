"""Start-up: launch → first painted main window, against a bare PySide6 QMainWindow in the same run.

Goal ≤ 1.5×. Launches alternate (bare, console, bare, …) so machine noise hits both alike.
"""

import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

PROBE = Path(__file__).with_name("startup_probe.py")
ROUNDS = 7
GOAL = 1.5


def launch(mode: str, db: Path) -> float:
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen")
    started = time.perf_counter()
    proc = subprocess.Popen([sys.executable, str(PROBE), mode, str(db)], stdout=subprocess.PIPE, text=True, env=env)
    line = proc.stdout.readline()
    elapsed = time.perf_counter() - started
    proc.wait(timeout=60)
    assert line.strip() == "painted", f"{mode} window never painted"
    return elapsed


def test_startup_ratio_against_bare_qt(tmp_path):
    db = tmp_path / "history.db"
    launch("console", db)  # first launch creates the database and warms the OS file cache for both
    launch("bare", db)
    bare, console = [], []
    for _ in range(ROUNDS):
        bare.append(launch("bare", db))
        console.append(launch("console", db))
    ratio = statistics.median(console) / statistics.median(bare)
    print(f"\n[benchmark] start-up to first paint: console {statistics.median(console) * 1000:.0f} ms, "
          f"bare QMainWindow {statistics.median(bare) * 1000:.0f} ms, ratio {ratio:.2f}× (goal ≤ {GOAL}×)")
    assert ratio <= GOAL
