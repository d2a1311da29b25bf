"""The window's pages as plug-ins: one module per page plus one line in `PAGES`.

The main window derives everything else from this list: the tab (in list order), its shortcut (Ctrl+1, Ctrl+2 …
by position) and its View-menu entry. The light shell paints a placeholder per entry before any page module is
imported (this module imports only the standard library), then `build()` makes the real page.

A factory is a callable taking a `PageContext`, or "package.module:attribute" naming one, imported only when the
page is built. A new page whose class takes the context is one line:
    PageInfo("report", "Report", "console.ui.report_page:ReportPage")
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from PySide6 import QtWidgets

    from console.ui.workspace import Workspace

MAX_SHORTCUTS = 9  # Ctrl+1 … Ctrl+9


@dataclass(frozen=True)
class PageContext:
    """What a page may use: the shared workspace, and what the window offers from its other pages."""

    workspace: Workspace
    base_values: Callable[[], dict[str, Any]]  # the Run page's current setup and model inputs
    targets: Callable[[], list[dict[str, Any]]]  # the targets discovered so far
    cluster_address: Callable[[], str] = lambda: ""  # the lab cluster joined ("" when none)
    is_code: Callable[[str], bool] = lambda path: False  # this model file is code (TorchScript), from its inspection
    trusts_code: Callable[[str], bool] = lambda path: False  # the window asks: does the user trust that code?


@dataclass(frozen=True)
class PageInfo:
    name: str  # stable key: remembered as the open page, `MainWindow.page(name)`
    title: str  # the tab's text; the View menu says "<title> page"
    factory: Callable[[PageContext], QtWidgets.QWidget] | str

    def build(self, context: PageContext) -> QtWidgets.QWidget:
        factory = self.factory
        if isinstance(factory, str):
            module, _, attribute = factory.partition(":")
            if not attribute:
                raise ValueError(f"page {self.name!r}: factory {factory!r} must be 'package.module:attribute'")
            factory = getattr(importlib.import_module(module), attribute)
        return factory(context)


def shortcut(position: int) -> str | None:
    """Ctrl+N for the N-th page (from 1); pages after the ninth have none."""
    return f"Ctrl+{position + 1}" if position < MAX_SHORTCUTS else None


# ---- The built-in pages (their constructors predate the context; each factory wires one)
def _run(context: PageContext) -> QtWidgets.QWidget:
    from console.ui.run_page import RunPage

    return RunPage()


def _history(context: PageContext) -> QtWidgets.QWidget:
    from console.ui.history_page import HistoryPage

    return HistoryPage(context.workspace.store, measuring=lambda: context.workspace.measuring)


def _sweeps(context: PageContext) -> QtWidgets.QWidget:
    from console.ui.sweep_page import SweepPage

    return SweepPage(context.workspace, base_values=context.base_values, targets=context.targets,
                     cluster_address=context.cluster_address, is_code=context.is_code,
                     trusts_code=context.trusts_code)


def _system(context: PageContext) -> QtWidgets.QWidget:
    from console.ui.system_page import SystemPage

    return SystemPage(context.workspace.hub)


PAGES: list[PageInfo] = [
    PageInfo("run", "Run", _run),
    PageInfo("history", "History", _history),
    PageInfo("sweeps", "Sweeps", _sweeps),
    PageInfo("system", "System", _system),
    PageInfo("machine", "Machine", "console.ui.machine_page:MachinePage"),
    PageInfo("compare", "Compare", "console.ui.compare_page:ComparePage"),
    PageInfo("storage", "Storage", "console.ui.storage_page:StoragePage"),
    PageInfo("topology", "Topology", "console.ui.topology_page:TopologyPage"),
    PageInfo("scaling", "Scaling", "console.ui.scaling_page:ScalingPage"),
]
