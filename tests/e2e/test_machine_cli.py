"""`labconsole machine` end to end: a real worker measures a quick card, the history keeps it, the next call reads
it back; bad requests exit 2 with the fix. Quick sizes: the machinery is under test, not the ceilings."""

import json
import os
import subprocess
import sys

import pytest


def labconsole(*args, timeout=300):
    env = dict(os.environ)
    env.pop("LABCONSOLE_DB", None)
    return subprocess.run([sys.executable, "-m", "console", *args], capture_output=True, text=True, timeout=timeout,
                          env=env)


@pytest.fixture(scope="module")
def measured(tmp_path_factory):
    folder = tmp_path_factory.mktemp("machine")
    storage = folder / "disk"
    storage.mkdir()
    db = folder / "history.db"
    done = labconsole("machine", "--json", "--quick", "--repeats", "2", "--storage", str(storage), "--db", str(db))
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout), db, storage


def test_machine_json_is_the_card_with_its_spread(measured):
    card, _, storage = measured
    for key in ("target", "peak_flops", "memory_bandwidth_gbs", "call_floor_us", "llc_bytes", "storage_read_gbs",
                "spread", "measured_at", "method", "not_available", "card_id"):
        assert key in card, key
    assert card["target"] == "cpu" and card["quick"] is True
    assert card["peak_flops"]["fp32"] > 0 and card["memory_bandwidth_gbs"] > 0
    assert card["call_floor_us"]["torch"] > 0 and card["call_floor_us"]["onnxruntime"] > 0
    assert card["storage"]["dir"] == str(storage.resolve()) and list(storage.iterdir()) == []
    assert all(s["n"] >= 2 for s in card["spread"].values())  # at least --repeats; more until precise or capped
    assert "no GPU" in card["not_available"]["h2d_gbs"]


def test_the_stored_card_is_shown_until_refresh(measured):
    card, db, _ = measured
    again = labconsole("machine", "--json", "--quick", "--db", str(db))
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["card_id"] == card["card_id"]
    table = labconsole("machine", "--quick", "--db", str(db))
    assert table.returncode == 0, table.stderr
    assert "Peak FLOP/s fp32" in table.stdout and "GFLOP/s" in table.stdout and "cv " in table.stdout
    assert "torch.matmul 256×256 fp32" in table.stdout and "quick sizes" in table.stdout
    assert "Host→device, pinned: no GPU on this target (cpu)" in table.stdout


def test_bad_requests_exit_2_with_the_fix(tmp_path):
    db = tmp_path / "history.db"
    missing = labconsole("machine", "--quick", "--storage", str(tmp_path / "missing"), "--db", str(db))
    assert missing.returncode == 2 and "choose another with --storage DIR" in missing.stderr
    target = labconsole("machine", "--target", "mps", "--db", str(db))
    assert target.returncode == 2 and "supported targets are cpu, cuda, cuda:N" in target.stderr
    repeats = labconsole("machine", "--repeats", "0", "--db", str(db))
    assert repeats.returncode == 2 and "argument --repeats: must be a whole number from 1" in repeats.stderr
