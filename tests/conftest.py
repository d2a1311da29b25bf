"""Shared test set-up: offscreen Qt, and settings/data dirs kept out of the user's home."""

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
# Ray test clusters on this one machine bind every node to 127.0.0.1 (Ray otherwise takes the address of the
# machine's network interface): a test's traffic stays on loopback. Read by Ray when it picks a node address.
os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")

import pytest  # noqa: E402


@pytest.fixture(autouse=True)
def _isolated_home(tmp_path_factory, monkeypatch):
    """Each test gets its own XDG dirs, so QSettings and the default database never touch the real ones."""
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / "config"))
    monkeypatch.setenv("XDG_DATA_HOME", str(home / "data"))
    monkeypatch.delenv("LABCONSOLE_DB", raising=False)
    # Qt reads XDG_CONFIG_HOME once per process: point QSettings at this test's directory explicitly, or a
    # test would inherit the run setup another test saved (a model file that disables engines, say).
    from PySide6 import QtCore

    for scope in (QtCore.QSettings.Scope.UserScope, QtCore.QSettings.Scope.SystemScope):
        QtCore.QSettings.setPath(QtCore.QSettings.Format.NativeFormat, scope, str(home / "config" / scope.name))
    yield home
