"""Ranks in the window, offscreen, nothing run: with a lab cluster joined, a run with Ranks > 1 (and a sweep's
data-parallel points) has Ray place its ranks there while the worker stays here (engine_options.torch.ranks_cluster);
a lab node's target, or the Lab nodes axis, names one node and is refused beside Ranks; the Sweeps page offers the
four data-parallel axes."""

from __future__ import annotations

from types import SimpleNamespace

from console.history import HistoryWriter
from console.ui.main_window import MainWindow
from console.ui.sweep_page import SweepPage
from console.ui.workspace import Workspace
from engines.spec import RunSpec


def spec(ranks):
    options = {"torch": {"ranks": ranks}} if ranks else {}
    return RunSpec(model="mlp", mode="training", batch=4, engine_options=options).validate()


def window_with(address):
    return SimpleNamespace(_cluster=SimpleNamespace(address=address) if address is not None else None)


def test_ranks_with_a_joined_cluster_are_placed_by_ray():
    placed = spec(2)
    assert MainWindow._place_ranks(window_with("10.0.0.5:6379"), placed, None) == ""
    assert placed.options_for("torch").ranks_cluster == "10.0.0.5:6379"
    for address, ranks in ((None, 2), ("", 2), ("10.0.0.5:6379", 1), ("10.0.0.5:6379", None)):
        here = spec(ranks)  # no cluster joined, one rank (the baseline stays here), or no DDP at all
        assert MainWindow._place_ranks(window_with(address), here, None) == ""
        assert here.options_for("torch").ranks_cluster is None


def test_a_lab_nodes_target_is_refused_beside_ranks():
    refused = MainWindow._place_ranks(window_with("10.0.0.5:6379"), spec(2), remote=object())
    assert "with Ranks Ray places the ranks" in refused and "pick a target of this machine" in refused
    assert MainWindow._place_ranks(window_with("10.0.0.5:6379"), spec(None), remote=object()) == ""


def test_the_sweeps_page_places_data_parallel_points_and_refuses_lab_nodes_beside_them(qtbot, tmp_path):
    writer = HistoryWriter.open(tmp_path / "h.db")
    workspace = Workspace(tmp_path / "h.db", writer, telemetry_hz=None)
    address = {"now": "10.0.0.5:6379"}
    page = SweepPage(workspace, base_values=lambda: {"model": "mlp", "mode": "training", "batch": 4},
                     cluster_address=lambda: address["now"])
    qtbot.addWidget(page)
    for axis in ("ranks", "bucket_mb", "grad_accum", "loader_workers"):
        assert page.field(axis).objectName() == f"sweep_{axis}"
    from console.sweep import SweepGrid

    base = {"model": "mlp"}
    assert page._remote_for(SweepGrid.parse(ranks="1,2"), base) is None
    assert base["engine_options"]["torch"] == {"ranks_cluster": "10.0.0.5:6379"}
    address["now"] = ""
    alone = {"model": "mlp"}
    assert page._remote_for(SweepGrid.parse(ranks="1,2"), alone) is None and alone == {"model": "mlp"}
    page.set_fields(batch="", ranks="1,2", on="host=lab-a")
    assert page.start_sweep() is False and "clear Lab nodes" in page._error.text()
    assert workspace.measuring is None
    writer.close()
