"""Where engines keep files they can rebuild: exported ONNX models, quantized copies and their checks.

A cache, not data: deleting it costs a re-export, nothing else. Kept apart from the history (console/paths.py)
so that clearing one never touches the other.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

CACHE_ENV = "LABCONSOLE_CACHE"


# ---- Public API
def cache_dir() -> Path:
    """$LABCONSOLE_CACHE, else the platform's per-user cache folder + /labconsole.

    Linux and others: $XDG_CACHE_HOME or ~/.cache; macOS: ~/Library/Caches; Windows: %LOCALAPPDATA%.
    The folder is not created here; writers create the sub-folder they need.
    """
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV]).expanduser()
    if sys.platform == "win32":
        base = Path(os.environ.get("LOCALAPPDATA") or Path.home() / "AppData" / "Local")
    elif sys.platform == "darwin":
        base = Path.home() / "Library" / "Caches"
    else:
        base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "labconsole"


def subdir(name: str) -> Path:
    """cache_dir()/name, created when missing."""
    path = cache_dir() / name
    path.mkdir(parents=True, exist_ok=True)
    return path


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write via a temporary file in the same folder and rename, so readers never see half a file."""
    tmp = temp_path(path)
    try:
        with open(tmp, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()


def temp_path(path: Path) -> Path:
    """A unique sibling name for writing `path` before an atomic os.replace (same folder, same filesystem)."""
    return path.with_name(f".{path.name}.{os.getpid()}.{os.urandom(4).hex()}.tmp")
