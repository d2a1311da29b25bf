"""What this install is: the console's version and those of its engines, Qt and Python, and the bundle's build.

Qt-free and engine-free on purpose: `labconsole --version` and the About dialog read versions from package
metadata (importlib.metadata), never by importing torch or onnxruntime, so the GUI process stays light. A
packaged bundle also carries a small build-info file written at build time (packaging/build.py), which gives
the build date and backs up the metadata should a distribution's dist-info be missing from the bundle.
"""

from __future__ import annotations

import json
import platform
import sys
from importlib import metadata
from pathlib import Path
from typing import Any

from console import __version__

BUILD_INFO_NAME = "labconsole-build.json"  # in the bundle's data directory (sys._MEIPASS)

QT_DISTRIBUTIONS = ("PySide6_Essentials", "PySide6")
NOT_INSTALLED = "not installed"


def distributions() -> dict[str, tuple[str, ...]]:
    """Displayed name → distribution names to try, first match wins: every registered backend, then Qt."""
    from engines import backends

    return {**{info.name: info.distributions or (info.name,) for info in backends.infos()},
            "pyside6": QT_DISTRIBUTIONS}


# ---- Public API
def is_frozen() -> bool:
    return bool(getattr(sys, "frozen", False))


def build_info() -> dict[str, Any]:
    """The bundle's build-info file, or {} in a source checkout (or when the file is missing or unreadable)."""
    base = getattr(sys, "_MEIPASS", None)
    if not is_frozen() or not base:
        return {}
    try:
        return json.loads((Path(base) / BUILD_INFO_NAME).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


def versions() -> dict[str, Any]:
    """Plain data: lab_console, one entry per backend (torch, onnxruntime …), pyside6, qt, python, build
    ("bundle"/"source checkout"), build_date (ISO 8601 UTC for a bundle, else None)."""
    info = build_info()
    recorded = info.get("versions", {})
    found: dict[str, Any] = {"lab_console": __version__}
    for name, dists in distributions().items():
        found[name] = _dist_version(dists) or recorded.get(name) or NOT_INSTALLED
    found["qt"] = _qt_version() or recorded.get("qt") or found["pyside6"]
    found["python"] = platform.python_version()
    found["build"] = "bundle" if is_frozen() else "source checkout"
    found["build_date"] = info.get("build_date") if is_frozen() else None
    return found


def version_text(data: dict[str, Any] | None = None) -> str:
    """The lines `labconsole --version` prints (and the About dialog shows): one per registered engine."""
    from engines import backends

    v = data or versions()
    built = f"bundle built {v['build_date']}" if v["build_date"] else v["build"]
    engines = [f"{info.label} {v.get(info.name, NOT_INSTALLED)}" for info in backends.infos()]
    return "\n".join([
        f"Lab Console {v['lab_console']} ({built})",
        *engines,
        f"Qt {v['qt']} (PySide6 {v['pyside6']})",
        f"Python {v['python']}",
    ])


# ---- Private API
def _dist_version(dists: tuple[str, ...]) -> str | None:
    for dist in dists:
        try:
            return metadata.version(dist)
        except metadata.PackageNotFoundError:
            continue
    return None


def _qt_version() -> str | None:
    """The running Qt's version when Qt is already loaded (the window); never imports Qt itself.

    PySide6 wheels ship the Qt of their own version, so elsewhere the PySide6 version stands for it.
    """
    qtcore = sys.modules.get("PySide6.QtCore")
    return qtcore.qVersion() if qtcore is not None else None
