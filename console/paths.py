"""Where Lab Console keeps its files: the history database, per platform, overridable."""

from __future__ import annotations

import os
import sys
from pathlib import Path

DB_ENV = "LABCONSOLE_DB"


def data_dir() -> Path:
    """The per-user data directory (XDG on Linux, Application Support on macOS, %APPDATA% on Windows)."""
    if sys.platform == "win32":
        base = Path(os.environ.get("APPDATA") or Path.home() / "AppData" / "Roaming")
    elif sys.platform == "darwin":
        base = Path.home() / "Library" / "Application Support"
    else:
        base = Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share")
    return base / "labconsole"


def history_db(explicit: str | os.PathLike | None = None) -> Path:
    """--db PATH wins, then LABCONSOLE_DB, then the default file in the user's data directory."""
    if explicit:
        return Path(explicit).expanduser()
    if os.environ.get(DB_ENV):
        return Path(os.environ[DB_ENV]).expanduser()
    return data_dir() / "history.db"


def asset_path(name: str) -> Path:
    """A file from assets/: the checkout's folder, or the bundle's copy when frozen (PyInstaller's sys._MEIPASS)."""
    bundle = getattr(sys, "_MEIPASS", None) if getattr(sys, "frozen", False) else None
    base = Path(bundle) if bundle else Path(__file__).resolve().parents[1]
    return base / "assets" / name
