"""`labconsole analyze` end to end on both engines: a real run, the engine's profile apart, a Chrome trace, and
the op rows kept in the history."""

import json
import os
import socket
import subprocess
import sys

import pytest

from console.history import HistoryStore, HistoryWriter

# A stored card for this host, so analyze does not measure one (console.machine.cards.card_for reuses it).
CARD = {"target": "cpu", "host": socket.gethostname(), "device_name": "test CPU", "measured_at": "2026-01-01T00:00:00Z",
        "peak_flops": {"fp32": 5e10}, "memory_bandwidth_gbs": 8.0, "call_floor_us": {"torch": 8.0, "onnxruntime": 4.0},
        "llc_bytes": 32 << 20, "caches": {"l1d": 32 << 10, "l2": 512 << 10, "l3": 32 << 20}}


def with_card(db):
    writer = HistoryWriter.open(db)
    writer.add_machine_card(CARD)
    assert writer.close()
    return db


def labconsole(*args, db, timeout=300):
    env = dict(os.environ)
    env.pop("LABCONSOLE_DB", None)
    command = [sys.executable, "-m", "console", *args, "--db", str(db)]
    return subprocess.run(command, capture_output=True, text=True, timeout=timeout, env=env)


@pytest.mark.parametrize("engine", ["torch", "onnxruntime"])
def test_analyze_json_gives_an_op_table_a_trace_and_stores_both(tmp_path, engine):
    db, trace = with_card(tmp_path / "history.db"), tmp_path / "copy.json"
    done = labconsole("analyze", "--model", "mlp", "--param", "hidden=64", "--param", "layers=2", "--engine", engine,
                      "--iterations", "30", "--warmup", "0.1", "--profile-iterations", "4", "--trace", str(trace),
                      "--no-telemetry", "--json", db=db)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["status"] == "completed" and report["engine"] == engine
    assert report["iterations"] == 30  # the timed measurement is untouched by the profile
    profile, ops = report["profile"], report["ops"]
    assert profile["engine"] == engine and profile["iterations"] == 4
    assert 0 < profile["op_time_s"] and profile["wall_s"] > 0
    assert ops and sum(op["share"] for op in ops) == pytest.approx(1.0)
    matmuls = [op for op in ops if op["flops"]]
    assert matmuls, ops  # the linear layers (aten::linear / Gemm) carry FLOPs and bytes
    assert all(op["bytes"] > 0 and op["intensity"] == pytest.approx(op["flops"] / op["bytes"]) for op in matmuls)
    # Roofs from the stored card, and the verdict on the profile.
    assert report["machine"]["peak_flops"] == CARD["peak_flops"]
    assert all(op["bound"] in ("compute", "memory") and op["efficiency"] > 0 for op in matmuls)
    verdict = report["bottleneck"]
    assert verdict["class"] and 0 <= verdict["confidence"] <= 1 and verdict["recommendation"] and verdict["evidence"]
    # The trace: kept beside the history, copied where --trace said, valid Chrome-trace JSON.
    kept = profile["trace_path"]
    assert kept.startswith(str(tmp_path / "traces")) and report["trace_file"] == str(trace)
    for path in (kept, trace):
        with open(path, encoding="utf-8") as handle:
            assert json.load(handle)["traceEvents"]
    store = HistoryStore(db)
    try:
        stored = store.ops(report["run_id"])
        assert [op["op"] for op in stored] == [op["op"] for op in ops]
        assert stored[0]["share"] == pytest.approx(ops[0]["share"])
        artifact, = store.artifacts(report["run_id"], kind="trace")
        assert artifact["path"] == kept and artifact["bytes"] == os.path.getsize(kept)
        summary = store.get_run(report["run_id"])["summary"]
        assert summary["profile"]["ops"] == len(ops) and summary["profile"]["trace_path"] == kept
        table = summary["profile"]["per_iteration"]  # kept: the stored verdict can be resampled when re-judged
        assert table["ops"] and len(table["times_s"][0]) == len(table["ops"])
        assert [p for p, _ in summary["phases"]][-2:] == ["profiling", "finishing"]
    finally:
        store.close()


def test_analyze_prints_the_op_table_with_units(tmp_path):
    done = labconsole("analyze", "--model", "mlp", "--param", "hidden=64", "--iterations", "20", "--warmup", "0.1",
                      "--profile-iterations", "2", "--no-telemetry", db=with_card(tmp_path / "history.db"))
    assert done.returncode == 0, done.stderr
    header = next(line for line in done.stdout.splitlines() if line.strip().startswith("op "))
    for column in ("calls", "share %", "time ms", "GFLOP", "MB", "FLOP/B", "GFLOP/s", "GB/s", "eff %", "bound"):
        assert column in header
    assert "aten::linear" in done.stdout and "trace:" in done.stdout and "verdict:" in done.stdout
    assert "measuring the machine card" not in done.stderr  # the stored card was used


def test_analyze_names_a_bad_option_like_run(tmp_path):
    done = labconsole("analyze", "--model", "mlp", "--profile-iterations", "0", db=tmp_path / "history.db")
    assert done.returncode == 2 and "--profile-iterations" in done.stderr
