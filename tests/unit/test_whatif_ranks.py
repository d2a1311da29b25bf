"""whatif --ranks: a data-parallel run's step projected onto another rank count from its measured parts."""

from __future__ import annotations

import json
import socket

import pytest
from ddp_samples import MS, ddp_block, ddp_run, steps

from console.analysis.whatif_ranks import project_ranks
from console.cli import main
from console.history import HistoryWriter
from engines.ddp.breakdown import summarize


def _ddp(ranks=2, scaling="strong", batch=8, **kw):
    bd = summarize(steps(ranks, noise_ms=0.0, **kw), hosts=None, scaling=scaling, global_batch=batch)
    return ddp_block(ranks, bd, scaling=scaling, global_batch=batch, bucket_bytes=[4_000_000])


def test_strong_scaling_halves_compute_keeps_the_optimizer_and_grows_the_all_reduce():
    # busy 8 ms, exposed 2 ms: 6 ms hidden behind backward
    p = project_ranks(_ddp(), 4)
    parts = p["parts"]
    assert parts["forward_s"]["to_s"] == pytest.approx(5 * MS) and parts["backward_compute_s"]["to_s"] == pytest.approx(10 * MS)
    assert parts["data_wait_s"]["to_s"] == pytest.approx(1 * MS)
    assert parts["optimizer_s"]["to_s"] == pytest.approx(3 * MS)
    # the measured busbw kept: all-reduce × (2·3/4) ÷ (2·1/2) = 12 ms; hidden shrinks with backward to 3 ms
    assert parts["exposed_comm_s"]["to_s"] == pytest.approx(12 * MS - 3 * MS)
    assert p["step_s"] == pytest.approx(sum(part["to_s"] for part in parts.values()))
    assert p["samples_per_s"] == pytest.approx(8 / p["step_s"]) and p["global_batch"] == 8
    assert "projection, not a measurement" in p["method"] and "reached" in p["notes"][0]


def test_busbw_rows_at_the_new_rank_count_give_the_formula():
    rows = [{"size_bytes": 4_000_000, "busbw_gbs": 2.0}]
    p = project_ranks(_ddp(), 4, busbw_rows=rows, rows_source="collectives run abcd1234")
    comm = 1.5 * 4_000_000 / 2.0e9
    assert p["parts"]["exposed_comm_s"]["to_s"] == pytest.approx(max(0.0, comm - 3 * MS))
    assert "collectives run abcd1234" in p["parts"]["exposed_comm_s"]["how"]


def test_weak_scaling_keeps_compute_and_a_card_ratio_scales_it():
    weak = project_ranks(_ddp(scaling="weak"), 8)
    assert weak["parts"]["forward_s"]["to_s"] == pytest.approx(10 * MS) and weak["global_batch"] == 32
    faster = project_ranks(_ddp(scaling="weak"), 8, compute_ratio=0.5)
    assert faster["parts"]["forward_s"]["to_s"] == pytest.approx(5 * MS)
    assert faster["parts"]["data_wait_s"]["to_s"] == pytest.approx(2 * MS)  # storage is not the card's roofs
    assert faster["step_s"] < weak["step_s"]


def test_down_to_one_rank_drops_communication_and_the_straggler():
    p = project_ranks(_ddp(slow={1: 10.0}), 1)
    assert p["parts"]["exposed_comm_s"]["to_s"] == 0.0 and p["parts"]["straggler_s"]["to_s"] == 0.0
    assert p["parts"]["forward_s"]["to_s"] == pytest.approx(20 * MS)


def test_what_cannot_be_projected_says_how_to_fix_it():
    with pytest.raises(ValueError, match="does not split over 3 ranks"):
        project_ranks(_ddp(), 3)
    with pytest.raises(ValueError, match="labconsole collectives --ranks 4"):
        project_ranks(_ddp(ranks=1), 4)
    with pytest.raises(ValueError, match="no DDP breakdown"):
        project_ranks({"ranks": 2}, 4)
    with pytest.raises(ValueError, match="positive"):
        project_ranks(_ddp(), 4, compute_ratio=0.0)


def _history(path):
    writer = HistoryWriter.open(path)
    block = _ddp()
    run = ddp_run(block)
    run_id = writer.create_run(run["spec"])
    writer.finish_run(run_id, "completed", {**run["summary"], "latency_ms": {"p50": 35.0}})
    plain = writer.create_run({**run["spec"], "engine_options": {}})
    writer.finish_run(plain, "completed", {"latency_ms": {"p50": 10.0}})
    card = {"target": "cpu", "host": socket.gethostname(), "measured_at": "2026-12-01T00:00:00Z",
            "peak_flops": {"fp32": 50e9}, "memory_bandwidth_gbs": 10, "call_floor_us": {"torch": 20.0},
            "llc_bytes": 8 << 20, "threads": 2}
    writer.add_machine_card(card)
    writer.add_machine_card({**card, "host": "big-box", "peak_flops": {"fp32": 200e9}})
    assert writer.close()
    return run_id, plain


def test_cli_projects_ranks_without_analyze_and_names_the_ratio(tmp_path, capsys):
    db = str(tmp_path / "h.db")
    run_id, plain = _history(tmp_path / "h.db")
    assert main(["whatif", run_id[:8], "--ranks", "4", "--db", db, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["projection"] == "ranks" and report["ranks_to"] == 4 and report["compute_ratio"] == 1.0
    assert "same card" in report["compute_ratio_applied"]
    assert main(["whatif", run_id[:8], "--ranks", "4", "--onto", "big-box", "--db", db, "--json"]) == 0
    onto = json.loads(capsys.readouterr().out)
    assert onto["compute_ratio"] == pytest.approx(0.25) and "big-box" in onto["compute_ratio_applied"]
    assert onto["step_s"] < report["step_s"]
    assert main(["whatif", run_id[:8], "--ranks", "4", "--db", db]) == 0
    assert "a projection, not a measurement" in capsys.readouterr().out
    assert main(["whatif", plain[:8], "--ranks", "4", "--db", db]) == 2
    assert "no data-parallel breakdown" in capsys.readouterr().err
