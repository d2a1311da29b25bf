"""Which machine a run was recorded on, under an id that stays the same across reboots.

Histories from several lab machines get merged; a stable host_id (not the hostname alone, which labs reuse)
keeps "the same box" recognisable while never clashing between boxes.
"""

from __future__ import annotations

import os
import platform
import socket
import sys
import uuid
from pathlib import Path
from typing import Any

from engines.machine.devices import cpu_name

_NAMESPACE = uuid.UUID("5b0f8c3e-9d1a-4f57-8a77-6c2f1d3e4b10")  # Lab Console hosts; never change it
_MACHINE_ID_FILES = ("/etc/machine-id", "/var/lib/dbus/machine-id")


def machine_id() -> str | None:
    """The OS's own per-install id when readable (Linux machine-id, Windows MachineGuid), else None."""
    for name in _MACHINE_ID_FILES:
        try:
            text = Path(name).read_text(encoding="ascii", errors="ignore").strip()
        except OSError:
            continue
        if text:
            return text
    if sys.platform == "win32":
        try:
            import winreg

            with winreg.OpenKey(winreg.HKEY_LOCAL_MACHINE, r"SOFTWARE\Microsoft\Cryptography") as key:
                return str(winreg.QueryValueEx(key, "MachineGuid")[0])
        except OSError:
            return None
    return None


def host_id(hostname: str | None = None) -> str:
    """uuid5 of hostname + machine-id (or hostname + platform.node() where there is no machine-id)."""
    hostname = hostname or socket.gethostname()
    return str(uuid.uuid5(_NAMESPACE, f"{hostname}\n{machine_id() or platform.node()}"))


HOSTNAME_ENV = "LABCONSOLE_HOSTNAME"  # the name runs are recorded under, when not the OS's (lab naming, tests)


def describe() -> dict[str, Any]:
    """The hosts row for this machine (first_seen is filled in by the store)."""
    hostname = os.environ.get(HOSTNAME_ENV) or socket.gethostname()
    return {
        "host_id": host_id(hostname),
        "hostname": hostname,
        "os": platform.platform(),
        "machine": platform.machine(),
        "cpu": cpu_name(),
        "python": platform.python_version(),
    }
