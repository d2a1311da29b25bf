"""The workspace's modules are imported on a thread while the shell paints (console.ui.preload): the thread is
joined before the workspace opens, an import that fails there is left for the GUI thread to raise, and only Qt-free
modules are imported off the GUI thread."""

import sys
from pathlib import Path

import tomllib

from console.ui import app as console_app
from console.ui.preload import MODULES, Preload


def test_preload_imports_on_a_thread_and_join_waits():
    sys.modules.pop("colorsys", None)
    preload = Preload(["colorsys"])
    assert not preload.done
    preload.start().join()
    assert preload.done and "colorsys" in sys.modules and preload.failed == {}


def test_a_failed_import_is_recorded_not_raised():
    preload = Preload(["console.no_such_module_for_preload", "colorsys"]).start()
    preload.join()
    assert set(preload.failed) == {"console.no_such_module_for_preload"}
    assert "ModuleNotFoundError" in preload.failed["console.no_such_module_for_preload"]


def test_the_workspace_opens_only_after_the_preload_is_joined(monkeypatch):
    calls = []

    class Recorder:
        def join(self):
            calls.append("join")

    monkeypatch.setattr(console_app, "attach_workspace", lambda window, **kw: calls.append(("attach", window, kw)))
    console_app._attach_after(Recorder(), "window")
    assert calls == ["join", ("attach", "window", {"warm_workers": True})]


def test_preloaded_modules_are_qt_free():
    """No Qt object may be made off the GUI thread: every preloaded module is the standard library's or in the
    console core that import-linter keeps Qt-free (pyproject.toml), imports included."""
    contracts = tomllib.loads((Path(__file__).parents[2] / "pyproject.toml").read_text())["tool"]["importlinter"]
    qt_free = next(c for c in contracts["contracts"] if c["name"].startswith("console core is Qt-free"))
    assert "PySide6" in qt_free["forbidden_modules"]
    for name in MODULES:
        assert name.split(".")[0] in sys.stdlib_module_names or any(
            name == core or name.startswith(core + ".") for core in qt_free["source_modules"]), name
    assert "console.history" in MODULES
