"""The History page's Delete reaches the Sweeps page through the window's page links: a sweep that lost some runs
shows the rest, and a sweep deleted with its last run (console.history deletes it in the same transaction) is no
longer shown, in the list or open."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from PySide6 import QtCore

from console.history import HistoryStore, HistoryWriter
from console.ui import history_page
from console.ui.history_page import HistoryPage
from console.ui.page_links import PageLinks
from console.ui.pages import PAGES
from console.ui.sweep_page import SweepPage
from console.ui.workspace import Workspace

SPEC = {"model": "mlp", "engine": "torch", "target": "cpu", "batch": 1, "scenario": "single-stream"}


@pytest.fixture
def pages(qtbot, tmp_path, monkeypatch):
    """The History and Sweeps pages on one history holding a sweep of three runs and one lone run, linked as
    the window links them; the sweep is open on the Sweeps page."""
    monkeypatch.setattr(history_page, "confirm_delete", lambda _parent, _count: True)
    path = tmp_path / "history.db"
    writer = HistoryWriter.open(path)
    store = HistoryStore(path)
    sweep_id = store.create_sweep("deleted", {"batch": [1, 2, 4]}, SPEC)
    run_ids = []
    for batch in (1, 2, 4):
        run_id = store.create_run({**SPEC, "batch": batch})
        store.finish_run(run_id, "completed", summary={
            "iterations": 20, "latency_ms": {"p50": float(batch), "p99": 2.0 * batch},
            "throughput_per_s": 100.0 * batch, "valid": True})
        store.tag_run(run_id, sweep_id, {"batch": batch})
        run_ids.append(run_id)
    store.finish_sweep(sweep_id, "completed")
    lone = store.create_run(SPEC)
    store.finish_run(lone, "completed", summary={"iterations": 20})
    history = HistoryPage(store)
    sweeps = SweepPage(Workspace(path, writer, store, telemetry_hz=None))
    for page in (history, sweeps):
        qtbot.addWidget(page)
    built = {"history": history, "sweeps": sweeps}
    links = PageLinks(SimpleNamespace(pages=built, page=built.get, show_page=lambda _name: None),
                      [link for info in PAGES for link in info.links if {link.source, link.target} <= set(built)])
    for name, page in built.items():
        links.built(name, page)
    history.reload()
    sweeps.reload()
    assert sweeps.open_sweep(sweep_id) is not None and sweeps.table.rowCount() == 3
    yield SimpleNamespace(history=history, sweeps=sweeps, sweep_id=sweep_id, run_ids=run_ids, lone=lone)
    store.close()
    writer.close()


def _listed(sweeps: SweepPage) -> list[str]:
    return [sweeps.sweeps_list.item(i).data(QtCore.Qt.ItemDataRole.UserRole) for i in range(sweeps.sweeps_list.count())]


def _delete(history: HistoryPage, run_ids: list[str]) -> None:
    history.table.select_run_ids(run_ids)
    assert sorted(history.delete_selected()) == sorted(run_ids)


def test_a_sweep_that_lost_some_runs_shows_the_rest(pages):
    _delete(pages.history, pages.run_ids[:1])
    assert pages.sweeps.record["sweep_id"] == pages.sweep_id
    assert [p["run_id"] for p in pages.sweeps.record["points"]] == pages.run_ids[1:]
    assert pages.sweeps.table.rowCount() == 2
    assert _listed(pages.sweeps) == [pages.sweep_id] and "2/2 runs" in pages.sweeps.sweeps_list.item(0).text()


def test_a_sweep_deleted_with_its_last_run_is_no_longer_shown(pages):
    _delete(pages.history, pages.run_ids)
    assert _listed(pages.sweeps) == []
    assert pages.sweeps.record is None and pages.sweeps.table.rowCount() == 0
    assert pages.sweeps.chart.plotted() == {}
    assert f"Sweep {pages.sweep_id[:8]} is no longer in the history" in pages.sweeps.knee_label.text()


def test_deleting_other_runs_leaves_the_open_sweep_as_it_is(pages):
    shown = pages.sweeps.record
    _delete(pages.history, [pages.lone])
    assert pages.sweeps.record is shown and pages.sweeps.table.rowCount() == 3


def test_a_sweep_opened_by_a_prefix_of_its_id_shows_its_runs(pages):
    """The CLI prints 8-character ids; the history finds the sweep by one, and its runs must come with it."""
    record = pages.sweeps.open_sweep(pages.sweep_id[:8])
    assert record["sweep_id"] == pages.sweep_id and pages.sweeps.table.rowCount() == 3
