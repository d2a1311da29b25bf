"""`labconsole whatif`: an analysed run projected onto another host's card or typed-in ceilings, with its method,
and its error when the history holds a measured run of the same configuration there."""

from __future__ import annotations

import json
import socket

from console.cli import main
from console.history import HistoryWriter

SPEC = {"model": "synth-gemm", "engine": "torch", "target": "cpu", "batch": 1, "precision": "fp32",
        "scenario": "single-stream", "model_params": {"rows": 64}, "threads": 1}


def _card(host: str, gflops: float, gbs: float) -> dict:
    return {"target": "cpu", "host": host, "measured_at": "2026-11-30T00:00:00Z", "peak_flops": {"fp32": gflops * 1e9},
            "memory_bandwidth_gbs": gbs, "call_floor_us": {"torch": 20.0, "onnxruntime": 20.0},
            "llc_bytes": 8 << 20, "threads": 2}


def _history(path) -> str:
    writer = HistoryWriter.open(path)
    run_id = writer.create_run(SPEC)
    writer.add_ops(run_id, [{"op": "aten::mm", "calls": 10, "time_s": 0.1, "flops": 5e9, "bytes": 4e7}])
    writer.finish_run(run_id, "completed", {"latency_ms": {"p50": 10.0}, "throughput_per_s": 100.0,
                                            "profile": {"iterations": 10, "wall_s": 0.11, "op_time_s": 0.1}})
    writer.add_machine_card(_card(socket.gethostname(), 50, 10))
    writer.add_machine_card(_card("faster-box", 200, 40))
    assert writer.close()
    return run_id


def test_onto_another_hosts_card_with_method_and_no_measured_error(tmp_path, capsys):
    run_id = _history(tmp_path / "h.db")
    assert main(["whatif", run_id[:8], "--onto", "faster-box", "--db", str(tmp_path / "h.db"), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["latency_ms"] < 10.0 and "compute" in report["method"]
    assert report["error"] is None and "no measured run" in report["error_note"]


def test_typed_in_ceilings_and_clear_errors(tmp_path, capsys):
    db = str(tmp_path / "h.db")
    run_id = _history(tmp_path / "h.db")
    assert main(["whatif", run_id, "--peak-gflops", "25", "--db", db, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["latency_ms"] > 10.0  # half the peak: slower
    assert main(["whatif", run_id, "--onto", "nowhere", "--db", db]) == 2
    assert "cards kept" in capsys.readouterr().err
    assert main(["whatif", run_id, "--db", db]) == 2
    assert "nothing to project onto" in capsys.readouterr().err
    assert main(["whatif", "ffffffff", "--db", db]) == 2
