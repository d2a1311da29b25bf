"""Start-up of the frozen bundle against the source checkout, in the same run: launch → first painted window.

    python packaging/measure_startup.py [--bundle dist/labconsole] [--rounds 7] [--drop-caches]

A frozen bundle cannot run tests/benchmarks/startup_probe.py, so both sides are the real `labconsole` started
with LABCONSOLE_EXIT_AFTER_PAINT=1: the window prints "painted <s since process start>" at its first paint and
quits (console/ui/app.py). Time is measured here, from spawning the process to reading that line. Launches
alternate so machine noise hits both alike; the first launch of each warms the OS file cache and is reported
apart. With --drop-caches (root), the page cache is dropped before one extra launch of each: a truly cold start.
Goal: frozen ≤ 1.5× the source checkout.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GOAL = 1.5


def launch(cmd: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(seconds to the first paint as seen from here, as the process itself saw it)."""
    started = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
    inside = None
    for line in proc.stderr:
        if line.startswith("painted "):
            inside = float(line.split()[1])
            break
    outside = time.perf_counter() - started
    proc.stderr.close()
    proc.wait(timeout=60)
    if inside is None:
        raise RuntimeError(f"{cmd[0]} exited ({proc.returncode}) without painting")
    return outside, inside


def drop_caches() -> bool:
    try:
        subprocess.run(["sync"], check=True)
        Path("/proc/sys/vm/drop_caches").write_text("3\n")
        return True
    except (OSError, subprocess.CalledProcessError):
        return False


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--bundle", type=Path, default=ROOT / "dist" / "labconsole")
    parser.add_argument("--source", default=str(ROOT / ".venv" / "bin" / "labconsole"),
                        help="the non-frozen labconsole (default: the checkout's .venv)")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--drop-caches", action="store_true", help="also one launch each after dropping the page "
                                                                   "cache (root)")
    args = parser.parse_args()
    sides = {"frozen": [str(args.bundle / "labconsole")], "source": [args.source]}
    with tempfile.TemporaryDirectory(prefix="labconsole-startup-") as tmp:
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "QT_PLUGIN_PATH", "LD_LIBRARY_PATH")}
        env.update(QT_QPA_PLATFORM="offscreen", LABCONSOLE_EXIT_AFTER_PAINT="1", HOME=tmp,
                   XDG_CONFIG_HOME=f"{tmp}/config", XDG_DATA_HOME=f"{tmp}/data", LABCONSOLE_DB=f"{tmp}/history.db")
        report: dict = {"rounds": args.rounds}
        if args.drop_caches:
            cold = {}
            for name, cmd in sides.items():
                if not drop_caches():
                    cold = {"error": "cannot drop the page cache (needs root, not in every container)"}
                    break
                cold[name] = round(launch(cmd, env)[0], 3)
            report["cold_after_drop_caches_s"] = cold
        report["first_launch_s"] = {name: round(launch(cmd, env)[0], 3) for name, cmd in sides.items()}
        runs: dict[str, list[tuple[float, float]]] = {name: [] for name in sides}
        for _ in range(args.rounds):
            for name, cmd in sides.items():
                runs[name].append(launch(cmd, env))
    for name, values in runs.items():
        report[name] = {"median_s": round(statistics.median(v[0] for v in values), 3),
                        "in_process_median_s": round(statistics.median(v[1] for v in values), 3),
                        "all_s": [round(v[0], 3) for v in values]}
    report["ratio"] = round(report["frozen"]["median_s"] / report["source"]["median_s"], 2)
    report["goal"] = GOAL
    print(json.dumps(report, indent=2))
    print(f"start-up to first paint: frozen {report['frozen']['median_s'] * 1000:.0f} ms, source "
          f"{report['source']['median_s'] * 1000:.0f} ms, ratio {report['ratio']}× (goal ≤ {GOAL}×)", file=sys.stderr)
    return 0 if report["ratio"] <= GOAL else 1


if __name__ == "__main__":
    sys.exit(main())
