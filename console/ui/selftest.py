"""`labconsole self-test`: proves an install works — window, a real run per engine, history — honestly.

A lab machine runs this after install. Every check is performed for real through the same code
the window uses, and `ok` is true only when all of them passed.
"""

from __future__ import annotations

import json
import os
import sys
import time
import traceback
from pathlib import Path
from typing import Any

from console import __version__

HEAVY_MODULES = ("torch", "onnxruntime")
RUN_TIMEOUT_S = 240.0


def self_test(out_dir: str | os.PathLike, db: str | None = None) -> int:
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    db_path = Path(db) if db else out / "selftest-history.db"
    result: dict[str, Any] = {"ok": False, "version": __version__, "frozen": bool(getattr(sys, "frozen", False)),
                              "python": sys.version.split()[0], "db": str(db_path), "engines": {}, "errors": []}
    _builds(result)
    try:
        _check(result, out, db_path)
    except Exception as exc:  # noqa: BLE001 — the report must be written whatever broke
        result["errors"].append(f"{type(exc).__name__}: {exc}\n{traceback.format_exc()}")
    result["gui_heavy_imports"] = [name for name in HEAVY_MODULES if name in sys.modules]
    result["ok"] = (not result["errors"] and not result["gui_heavy_imports"] and result.get("db_integrity") == "ok"
                    and bool(result["engines"]) and all(e["ok"] for e in result["engines"].values())
                    and bool(result.get("screenshot")))
    (out / "result.json").write_text(json.dumps(result, indent=2))
    print(json.dumps({k: result[k] for k in ("ok", "frozen", "builds", "build_warnings", "engines",
                                               "gui_heavy_imports", "db_integrity", "screenshot", "errors")
                      if k in result}, indent=2))
    return 0 if result["ok"] else 1


def _builds(result: dict[str, Any]) -> None:
    """Which torch and ONNX Runtime builds answer here (package metadata, nothing imported): in result.json, and
    each warning (two ONNX Runtime builds shadowing each other …) with its fix. Information: `ok` does not use it."""
    from engines import installed_builds

    try:
        found = installed_builds.report()
    except Exception as exc:  # noqa: BLE001 — the builds are information; the checks below still run
        result["builds"] = f"not available ({type(exc).__name__}: {exc})"
        return
    result["install"] = found
    result["builds"] = installed_builds.summary_line(found)
    warnings = [f"{c['label']}: {c['reading']}" + (f" Fix: {c['fix']}" if c.get("fix") else "")
                for c in found["checks"] if c["status"] != "ok"]
    if warnings:
        result["build_warnings"] = warnings


def _check(result: dict[str, Any], out: Path, db_path: Path) -> None:
    from PySide6 import QtCore

    from console.history import HistoryStore
    from console.ui.app import application, build_main_window
    from engines import backends
    from engines.spec import RunSpec

    app = application()
    window = build_main_window(db_path, discover_targets=False)
    window.resize(1400, 860)
    window.show()
    app.processEvents()
    if window.controller is None:
        raise RuntimeError(f"the window cannot run: history database unusable: {window.startup_error}")
    run_ids = {}
    for engine in backends.names():
        spec = RunSpec(model="mlp", engine=engine, target="cpu", batch=1, duration_s=1.0, warmup_s=0.3,
                       name=f"self-test {engine}")
        started = time.monotonic()
        run_ids[engine] = window.controller.start(spec)
        while window.controller.busy and time.monotonic() - started < RUN_TIMEOUT_S:
            app.processEvents(QtCore.QEventLoop.ProcessEventsFlag.AllEvents, 50)
            time.sleep(0.01)
        record = window.controller.wait(5.0)
        app.processEvents()
        summary = (record or {}).get("summary") or {}
        result["engines"][engine] = {
            "ok": bool(record) and record["status"] == "completed" and summary.get("iterations", 0) > 0,
            "status": (record or {}).get("status", "timed out"), "message": (record or {}).get("message", ""),
            "iterations": summary.get("iterations"), "p50_ms": (summary.get("latency_ms") or {}).get("p50"),
            "run_id": run_ids[engine]}
    window.run_page.plots.refresh()
    app.processEvents()
    shot = out / "selftest-window.png"
    image = window.grab().toImage()
    if image.isNull() or not image.save(str(shot)) or _is_blank(image):
        result["errors"].append("the window screenshot is empty or could not be saved")
    else:
        result["screenshot"] = str(shot)
    with HistoryStore(db_path) as store:
        result["db_integrity"] = store.integrity_check()
        for engine, run_id in run_ids.items():
            run = store.get_run(run_id)
            stored = len(store.latencies(run_id)[0])
            entry = result["engines"][engine]
            entry["stored_latencies"] = stored
            if run is None or run["status"] != entry["status"] or stored != entry["iterations"]:
                entry["ok"] = False
                result["errors"].append(f"{engine}: history does not match the run (stored {stored} latencies)")
    window.close()
    app.processEvents()


def _is_blank(image) -> bool:
    """A screenshot of one colour means nothing was painted."""
    first = image.pixel(0, 0)
    step_x, step_y = max(1, image.width() // 40), max(1, image.height() // 40)
    return all(image.pixel(x, y) == first for x in range(0, image.width(), step_x)
               for y in range(0, image.height(), step_y))
