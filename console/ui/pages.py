"""The window's pages as plug-ins: one module per page plus one line in `PAGES`.

The main window derives everything else from this list: the tab (in list order), its shortcut (Ctrl+1, Ctrl+2 …
by position) and its View-menu entry. The light shell paints a placeholder per entry before any page module is
imported (this module imports only the standard library), then `build()` makes the real page.

A factory is a callable taking a `PageContext`, or "package.module:attribute" naming one, imported only when the
page is built (when the page is first shown, or first asked for). A new page whose class takes the context is one
line:
    PageInfo("report", "Report", "console.ui.report_page:ReportPage")
A page that talks to other pages declares it in `links` (console.ui.page_links): the connection is made when both
exist, so the window names no page-to-page wiring.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from console.ui.page_links import Link

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
    links: tuple[Link, ...] = ()  # what this page hears from other pages, or asks of them

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


def links(infos: list[PageInfo]) -> list[Link]:
    """Every link the pages declare."""
    return [link for info in infos for link in info.links]


# ---- The built-in pages (their constructors predate the context; each factory wires one)
def _run(context: PageContext) -> QtWidgets.QWidget:
    from console.ui.run_page import RunPage

    return RunPage()


def _history(context: PageContext) -> QtWidgets.QWidget:
    from console.ui.history_page import HistoryPage

    page = HistoryPage(context.workspace.store, measuring=lambda: context.workspace.measuring)
    page.reload()
    return page


def _sweeps(context: PageContext) -> QtWidgets.QWidget:
    from console.ui.sweep_page import SweepPage

    page = SweepPage(context.workspace, base_values=context.base_values, targets=context.targets,
                     cluster_address=context.cluster_address, is_code=context.is_code,
                     trusts_code=context.trusts_code)
    page.reload()
    return page


def _system(context: PageContext) -> QtWidgets.QWidget:
    from console.ui.system_page import SystemPage

    return SystemPage(context.workspace.hub, measuring=lambda: context.workspace.measuring)


# ---- What the built-in pages do for each other (console.ui.page_links)
def _reload(page: Any, *_signal_arguments: Any) -> None:
    """A page that lists stored runs reads the history again."""
    page.reload()


def _noise_report(run: Any, report: dict[str, Any]) -> None:
    """The Machine page's noise check feeds the Run page's banner, which warns before a run when something is off."""
    run.noise_banner.set_report(report)


def _open_sweep(sweeps: Any, sweep_id: str) -> None:
    sweeps.open_sweep(sweep_id)


def _compare(compare: Any, run_ids: list[str]) -> None:
    compare.compare(run_ids)


def _shown(_page: Any, *_signal_arguments: Any) -> None:
    """Nothing more: being brought to the front was the request."""


_RUNS_DELETED = "sig_runs_deleted"  # the History page deleted runs: the pages that list stored runs read again

PAGES: list[PageInfo] = [
    PageInfo("run", "Run", _run, links=(
        Link("machine", "sig_doctor_report", "run", _noise_report),
        Link("run", "noise_banner.sig_details_requested", "machine", _shown, opens=True))),
    PageInfo("history", "History", _history, links=(
        Link("sweeps", "sig_sweep_finished", "history", _reload),
        Link("storage", "sig_stored", "history", _reload),  # a stored storage benchmark is a run too
        Link("history", "sig_sweep_activated", "sweeps", _open_sweep, opens=True),
        Link("history", "sig_compare_requested", "compare", _compare, opens=True))),
    PageInfo("sweeps", "Sweeps", _sweeps, links=(Link("history", _RUNS_DELETED, "sweeps", _reload),)),
    PageInfo("system", "System", _system),
    PageInfo("machine", "Machine", "console.ui.machine_page:MachinePage"),
    PageInfo("compare", "Compare", "console.ui.compare_page:ComparePage"),
    PageInfo("storage", "Storage", "console.ui.storage_page:StoragePage",
             links=(Link("history", _RUNS_DELETED, "storage", _reload),)),
    PageInfo("topology", "Topology", "console.ui.topology_page:TopologyPage"),
    PageInfo("scaling", "Scaling", "console.ui.scaling_page:ScalingPage",
             links=(Link("history", _RUNS_DELETED, "scaling", _reload),)),
]
