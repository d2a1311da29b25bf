"""The History page on a history with damaged rows (issue 19, case 2): it lists, opens and marks them instead of
failing — a run whose tags are damaged is marked in the table at once, one whose summary is damaged when it is
opened (its latencies are still plotted, the card says which field and why), a sweep whose grid is damaged is
still listed — and it writes nothing."""

import hashlib
import sqlite3

import numpy as np
import pytest
from PySide6 import QtCore

from console.history import HistoryStore
from console.ui.history_page import HistoryPage
from widgets.history_table import COL_STATUS

SPEC = {"model": "mlp", "engine": "torch", "target": "cpu", "batch": 1, "scenario": "single-stream",
        "precision": "fp32"}
SUMMARY = {"valid": True, "iterations": 50, "latency_ms": {"p50": 1.0}, "throughput_per_s": 1000.0, "t0_ns": 0}


@pytest.fixture
def damaged(tmp_path):
    path = tmp_path / "history.db"
    ids = []
    with HistoryStore(path) as store:
        for _ in range(3):
            run_id = store.create_run(SPEC)
            latency = np.full(50, 1_000_000)
            store.add_latencies(run_id, np.cumsum(latency), latency)
            store.finish_run(run_id, "completed", summary=SUMMARY, environment={"engine": {"torch": "2.5"}})
            ids.append(run_id)
        sweep_id = store.create_sweep("batch sweep", {"batch": [1, 2]}, SPEC)
        store.finish_sweep(sweep_id, "completed")
    conn = sqlite3.connect(path)
    conn.execute("UPDATE sweeps SET grid = '{\"batch\": [1,' WHERE sweep_id = ?", [sweep_id])
    conn.execute("UPDATE runs SET summary = '[1,2', environment = 'nan' WHERE run_id = ?", [ids[1]])
    conn.execute("UPDATE run_facts SET tags = '{\"x\": NaN}' WHERE run_id = ?", [ids[2]])
    conn.commit()
    conn.close()
    return path, ids


def _digest(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _status(page, run_id):
    for row in range(page.table.row_count()):
        if page.table.run_id_at(row) == run_id:
            index = page.table._proxy.index(row, COL_STATUS)  # noqa: SLF001 — the cell as the view shows it
            return index.data(), index.data(QtCore.Qt.ItemDataRole.ToolTipRole)
    raise AssertionError(f"run {run_id} is not listed")


def test_the_history_page_lists_opens_and_marks_damaged_runs(qtbot, damaged):
    path, ids = damaged
    before = _digest(path)
    store = HistoryStore(path, read_only=True)
    page = HistoryPage(store)
    qtbot.addWidget(page)
    errors = []
    page.sig_error.connect(errors.append)
    page.show()
    page.reload()
    assert page.table.row_count() == 3 and not errors
    assert page.sections.tabText(1) == "Sweeps (1)"  # a sweep whose grid is damaged is still listed
    text, tip = _status(page, ids[2])  # damaged tags: marked as soon as it is listed
    assert text == "completed · damaged" and "its tag list is not strict JSON" in tip
    assert _status(page, ids[1])[0] == "completed"  # a damaged summary is found when the run is opened

    page.open_run(ids[1])
    assert not errors and page.opened_run_id == ids[1]
    message = page.summary._message.text()  # noqa: SLF001
    assert f"Run {ids[1][:8]} is damaged" in message and "summary" in message and "environment" in message
    text, tip = _status(page, ids[1])
    assert text == "completed · damaged" and "its summary is not JSON" in tip
    page.reload()  # the mark survives a reload (the listing does not read the summary)
    assert _status(page, ids[1])[0] == "completed · damaged"

    page.open_run(ids[0])  # a sound run opens as before
    assert not errors and page.opened_run_id == ids[0] and not page.summary._message.isVisible()  # noqa: SLF001
    store.close()
    assert _digest(path) == before
