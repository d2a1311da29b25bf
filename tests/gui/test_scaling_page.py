"""The Scaling page on a temporary history of fixture runs (summary.scenario.ddp of the contract's shape): the
picker lists the scaling sweep, the curve has its points, clicking N = 2 shows that point's waterfall whose chain
ends at the measured step (unattributed hatched), the straggler and prediction lines, the wait while something
measures, and an empty history saying how to make a scaling run."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from PySide6 import QtCore

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "unit"))
from scaling_samples import fake_waterfall, store_run  # noqa: E402

from console.history import HistoryStore  # noqa: E402
from console.ui.pages import PAGES, PageContext  # noqa: E402
from console.ui.scaling_page import EMPTY_TEXT, ScalingPage, read_series  # noqa: E402
from console.ui.workspace import RUN, Workspace  # noqa: E402


def fixture_history(path: Path) -> str:
    """A ranks 1,2,4 sweep; the 2-rank run carries an injected straggler of 20 ms."""
    with HistoryStore(path) as store:
        sweep = store.create_sweep("scaling", {"ranks": [1, 2, 4]})
        store_run(store, 1, 0.100, sweep=sweep, seed=1)
        store_run(store, 2, 0.080, sweep=sweep, seed=2, straggler_s=0.020, exposed_s=0.006,
                  injected={"rank": 1, "ms": 20.0})
        store_run(store, 4, 0.040, sweep=sweep, seed=3, exposed_s=0.008)
    return sweep


def make_page(qtbot, tmp_path, fill: bool = True) -> tuple[ScalingPage, Workspace]:
    if fill:
        fixture_history(tmp_path / "history.db")
    workspace = Workspace.open(tmp_path / "history.db", worker_entry=lambda *_: None, telemetry_hz=None)
    page = ScalingPage(PageContext(workspace, base_values=dict, targets=list),
                       series_reader=lambda db, kind, ident: read_series(db, kind, ident, waterfall=fake_waterfall))
    qtbot.addWidget(page)
    page.resize(1300, 740)
    return page, workspace


@pytest.fixture
def page_and_workspace(qtbot, tmp_path):
    page, workspace = make_page(qtbot, tmp_path)
    yield page, workspace
    workspace.close()


def shown(qtbot, page) -> None:
    page.show()
    qtbot.waitUntil(lambda: page.series is not None and not page.busy, timeout=10000)


def test_the_page_is_registered():
    assert any(info.name == "scaling" and info.title == "Scaling" for info in PAGES)


def test_the_curve_has_the_points_and_clicking_n2_shows_its_waterfall(qtbot, page_and_workspace):
    page, _ = page_and_workspace
    shown(qtbot, page)
    assert page.picker.count() == 1 and page.picker.item(0).text().startswith("sweep ")
    scatter = page.curve.scatters["E(N)"]
    assert sorted(round(2 ** x) for x in scatter.data["x"]) == [1, 2, 4]
    assert page.point["ranks"] == 4  # the largest N is shown first
    assert len(page.curve.error_bars) == 1 and page.curve.ideal_line.value() == 1.0
    position = page.curve.point_position("E(N)", 2)
    qtbot.mouseClick(page.curve.plot_widget.viewport(), QtCore.Qt.MouseButton.LeftButton, pos=position)
    qtbot.waitUntil(lambda: page.point["ranks"] == 2, timeout=3000)
    bars = page.waterfall.bars
    assert [b["name"] for b in bars] == ["ideal", "compute", "data wait", "optimizer", "straggler",
                                         "exposed communication", "unattributed", "measured"]
    assert bars[0]["y0_s"] == 0 and bars[0]["y1_s"] == pytest.approx(0.050)  # T(1) ÷ 2
    assert bars[-2]["y1_s"] == pytest.approx(0.080) and bars[-1]["y1_s"] == pytest.approx(0.080)
    assert [b["hatched"] for b in bars] == [False] * 6 + [True, False]
    assert bars[4]["color"] != bars[1]["color"]
    assert "N = 2" in page.waterfall.title.text()
    assert "Parts add up to 98.8% of the measured step" in page.waterfall.caption.text()
    assert page.straggler.text().startswith("Straggler: rank 1 on labhost, 20 ms")
    assert "injected: rank 1 sleeps 20.0 ms" in page.straggler.text()
    assert "predicted 10.8 ms (busbw: probe in this run) vs measured 12 ms" in page.prediction.text()
    assert "E 0.625" in page.figures.text()
    page.hide()
    page.show()  # shown again: the history is read again, the chosen point kept
    qtbot.waitUntil(lambda: not page.busy, timeout=10000)
    assert page.point["ranks"] == 2 and page.waterfall.bars[-1]["y1_s"] == pytest.approx(0.080)


def test_the_samples_axis_is_drawn_on_demand(qtbot, page_and_workspace):
    page, _ = page_and_workspace
    shown(qtbot, page)
    assert not page.curve.rate_lines
    page.curve.rate_box.setChecked(True)
    line = page.curve.rate_lines["E(N)"]
    assert list(line.yData) == pytest.approx([80.0, 100.0, 200.0])  # global samples/s = 8 ÷ step
    assert page.curve.marker is not None  # the chosen point stays marked


def test_nothing_is_read_while_something_measures(qtbot, page_and_workspace):
    page, workspace = page_and_workspace
    workspace.claim(RUN)
    page.show()
    assert page.series is None and "run is measuring" in page.message.text()
    page._retry()
    assert not page.busy
    workspace.release(RUN)
    page._retry()
    qtbot.waitUntil(lambda: page.series is not None and not page.busy, timeout=10000)


def test_an_empty_history_says_how_to_make_a_scaling_run(qtbot, tmp_path):
    page, workspace = make_page(qtbot, tmp_path, fill=False)
    try:
        page.show()
        qtbot.waitUntil(lambda: not page.busy and page.message.text() == EMPTY_TEXT, timeout=10000)
        assert "labconsole sweep --mode training --ranks 1,2" in page.curve.caption.text()
        assert page.waterfall.bars == []
    finally:
        workspace.close()
