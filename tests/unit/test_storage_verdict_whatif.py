"""`labconsole whatif RUN --storage-onto CARD_ID|MB_S`: a storage-fed run's AU and samples/s projected onto another
device's measured read, step = max(compute, bytes per step / MB/s), stated as a projection."""

from __future__ import annotations

import json
import socket

import pytest

from console.analysis.whatif import project_storage
from console.cli import main
from console.history import HistoryWriter

SPEC = {"model": "synth-mlp", "engine": "torch", "target": "cpu", "batch": 8, "precision": "fp32",
        "scenario": "input-pipeline"}
SUMMARY = {"latency_ms": {"mean": 10.0, "p50": 9.8}, "throughput_per_s": 800.0,
           "scenario": {"wait_fraction": 0.6, "batch": 8, "sample_bytes": 150_000, "samples_per_s": 800.0,
                        "disk_read_mb_s": 120.0, "loader_workers": 2, "loader_busy_fraction": 0.4,
                        "data_files": 100, "cache_state": "cold", "data_dir": "/data"}}


def _history(path):
    writer = HistoryWriter.open(path)
    run_id = writer.create_run(SPEC)
    writer.finish_run(run_id, "completed", SUMMARY)
    other = writer.create_run({**SPEC, "scenario": "single-stream"})
    writer.finish_run(other, "completed", {"latency_ms": {"p50": 1.0}})
    card = {"target": "cpu", "measured_at": "2026-12-01T00:00:00Z", "storage": {"dir": "/data"}}
    writer.add_machine_card({**card, "host": socket.gethostname(), "storage_read_gbs": 0.15})
    writer.add_machine_card({**card, "host": "nvme-box", "storage_read_gbs": 2.0})
    writer.add_machine_card({**card, "host": "no-storage", "storage_read_gbs": None,
                             "not_available": {"storage_read_gbs": "no storage directory chosen (--storage DIR)"}})
    assert writer.close()
    return run_id, other


def _card_id(db, host):
    from console.history import open_reader

    with open_reader(db) as store:
        return next(c["card_id"] for c in store.machine_cards() if c["host"] == host)


def test_onto_a_faster_cards_device_the_run_becomes_compute_bound(tmp_path, capsys):
    db = tmp_path / "h.db"
    run_id, _ = _history(db)
    card = _card_id(db, "nvme-box")
    assert main(["whatif", run_id[:8], "--storage-onto", card[:8], "--db", str(db), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    # compute = 10 ms × (1 − 0.6) = 4 ms; 8 × 150 kB = 1.2 MB per step at 2000 MB/s = 0.6 ms → step 4 ms
    assert report["projection"] is True and report["step_ms"] == pytest.approx(4.0)
    assert report["au_percent"] == pytest.approx(100.0) and report["samples_per_s"] == pytest.approx(2000.0)
    assert report["bound_by"].startswith("compute") and "not a measurement" in report["method"]
    assert report["measured"]["au_percent"] == pytest.approx(40.0)
    # the model on the run's own device (150 MB/s: 8 ms per step → 1000 samples/s) against the measured 800
    assert report["model_check"]["error"] == pytest.approx(0.25)


def test_onto_typed_in_mb_s_and_the_text_says_projection(tmp_path, capsys):
    db = tmp_path / "h.db"
    run_id, _ = _history(db)
    assert main(["whatif", run_id[:8], "--storage-onto", "100", "--db", str(db)]) == 0
    out = capsys.readouterr().out
    assert "projected: AU 33.3%" in out and "666.7 samples/s" in out and "a projection, not a measurement" in out
    assert "bound by the device's read rate" in out


def test_bad_targets_and_runs_are_refused_with_the_fix(tmp_path, capsys):
    db = tmp_path / "h.db"
    run_id, other = _history(db)
    assert main(["whatif", run_id[:8], "--storage-onto", "zzzz", "--db", str(db)]) != 0
    assert "is no stored card id nor a number of MB/s" in capsys.readouterr().err
    card = _card_id(db, "no-storage")
    assert main(["whatif", run_id[:8], "--storage-onto", card, "--db", str(db)]) != 0
    assert "labconsole machine --storage DIR" in capsys.readouterr().err
    assert main(["whatif", other[:8], "--storage-onto", "100", "--db", str(db)]) != 0
    assert "neither an input-pipeline nor a storage feed run" in capsys.readouterr().err


def test_a_feed_result_with_several_accelerators_shares_the_device():
    facts = {"compute_ms": 10.0, "batch": 4, "sample_bytes": 1_000_000, "accelerators": 8, "au_percent": 50.0,
             "samples_per_s": 1600.0}
    got = project_storage(facts, 1600.0, "an array")
    # 8 × 4 × 1 MB = 32 MB per step at 1600 MB/s = 20 ms > 10 ms compute: AU 50%, 8 × 4 / 20 ms = 1600 samples/s
    assert got["au_percent"] == pytest.approx(50.0) and got["samples_per_s"] == pytest.approx(1600.0)
    with pytest.raises(ValueError, match="sample bytes"):
        project_storage({"compute_ms": 1.0, "batch": 1}, 100.0, "x")


def test_the_bytes_a_sample_cost_the_device_and_the_verdicts_lever_are_used():
    facts = {"compute_ms": 100.0, "batch": 256, "sample_bytes": 2176, "storage_bytes_per_sample": 4096,
             "lever": "more-readers"}
    slow = project_storage(facts, 2.0, "a slow disk")
    assert slow["bytes_per_step"] == 256 * 4096 and "measured cold" in slow["method"]
    assert slow["au_percent"] == pytest.approx(100.0 * 100.0 / (256 * 4096 / 2e6 * 1e3))
    fast = project_storage(facts, 2000.0, "a fast disk")
    assert fast["au_percent"] == pytest.approx(100.0) and "'more readers' as its lever" in fast["notes"][0]
