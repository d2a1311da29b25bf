"""The Machine page's card table shows the thread gains: a new card's as a ratio with its interval, a card measured
on one core or a busy machine as "not available" with why, and a card from before the gains says it predates them."""

from console.machine.table import view_columns
from widgets.machine_card_view import NOT_AVAILABLE, MachineCardView


def _card(host: str, **extra) -> dict:
    return {"target": "cpu", "host": host, "device_name": "AMD EPYC", "measured_at": "2026-12-03T14:00:00Z",
            "repeats": 5, "peak_flops": {"fp32": 9.1e10}, "memory_bandwidth_gbs": 12.0, "spread": {}, "method": {},
            "not_available": {}, **extra}


def test_the_card_table_shows_each_gain_or_why_it_is_missing(qtbot):
    new = _card("lab-1", compute_thread_gain=1.93, stream_thread_gain=1.12,
                spread={"stream_thread_gain": {"min": 1.05, "max": 1.2, "cv": 0.04, "n": 7, "interval": [1.1, 1.15],
                                               "half_width": 0.022, "level": 0.98}},
                method={"compute_thread_gain": "torch.matmul 2048×2048 fp32, rate at 2 intra-op threads ÷ at 1"})
    busy = _card("vm", compute_thread_gain=None, stream_thread_gain=None,
                 not_available={"compute_thread_gain": "measured ×1.05 while other processes used 1.56 of a core",
                                "stream_thread_gain": "measured ×0.85 while other processes used 1.62 of a core"})
    old = _card("old-box")
    view = MachineCardView()
    qtbot.addWidget(view)
    view.set_cards(*view_columns([new, busy, old]))
    labels = [view.table.verticalHeaderItem(r).text() for r in range(view.table.rowCount())]
    row = {label: r for r, label in enumerate(labels)}
    gemm, memory = row["Gain from 2nd thread, GEMM"], row["Gain from 2nd thread, memory"]
    assert view.table.item(gemm, 0).text() == "×1.93"
    assert view.table.item(memory, 0).text().startswith("×1.12\n×1.1–×1.15 (98% CI, ±2.2%)")
    assert view.table.item(gemm, 1).text() == NOT_AVAILABLE
    assert view.table.item(memory, 1).toolTip().startswith("measured ×0.85 while other processes used")
    assert view.table.item(gemm, 2).toolTip().startswith("this card predates the thread gains")
    view.table.setCurrentCell(gemm, 0)
    assert "rate at 2 intra-op threads ÷ at 1" in view.detail.text()
