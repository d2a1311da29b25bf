"""`labconsole storage KIND` end to end: parsed, run in a spawned worker, stored as a run, printed or --json, with
the exit codes of `run`; then `history`, `compare` and `report` read the storage runs. The exit-code paths use the
fake kind (tests/storage_fake_kind.py, registered for the test); one real I/O sweep (the built-in reader, two tiny
points) and one real checkpoint (a 20 MB shard, torch.save and safetensors) run the engines themselves."""

from __future__ import annotations

import json

import pytest

from console.cli import main, storage_cmd
from console.history import open_reader
from console.storage import launch


@pytest.fixture
def fake(monkeypatch):
    monkeypatch.setitem(storage_cmd.KIND_MODULES, "feed", "storage_fake_cli")
    monkeypatch.setattr(launch, "kinds_table", lambda: {"feed": "storage_fake_kind:run"})


def document(capsys, argv, code=0):
    assert main(argv) == code
    return json.loads(capsys.readouterr().out)


def test_exit_codes_and_the_json_document(fake, tmp_path, capsys):
    db = str(tmp_path / "h.db")
    done = document(capsys, ["storage", "feed", "--db", db, "--n", "700", "--json", "--tag", "tmpfs"])
    assert done["schema"] == "labconsole.storage/1" and done["status"] == "completed" and done["cause"] is None
    assert done["result"]["latency_count"] == 700 and "latency_ns" not in done["result"]
    assert done["options"] == {"mode": "ok", "n": 700, "scale": 1, "label": "fake feed on tmpfs", "kind": "feed"}
    assert main(["storage", "feed", "--db", db, "--mode", "raise"]) == 1
    err = capsys.readouterr().err
    assert "storage feed failed: RuntimeError: reader 3 crashed" in err and "Traceback" not in err.splitlines()[0]
    assert main(["storage", "feed", "--db", db, "--mode", "lost"]) == 1  # the result lost data: never completed
    assert "lost data (lost 3)" in capsys.readouterr().err
    assert main(["storage", "feed", "--db", db, "--n", "-1"]) == 2  # refused before anything ran
    assert "Fix: give --n 0 or more" in capsys.readouterr().err
    assert main(["storage", "--db", db]) == 2 and "name a storage benchmark" in capsys.readouterr().err
    assert main(["storage", "feed", "--db", db, "--mode", "hang", "--timeout", "1"]) == 1
    assert "did not finish within 1 s" in capsys.readouterr().err
    with open_reader(db) as store:
        statuses = [run["status"] for run in store.list_runs()]
        tagged = store.list_runs(tag="tmpfs")
    assert statuses == ["failed", "failed", "failed", "completed"] and tagged[0]["run_id"] == done["run_id"]


def test_history_compare_and_report_read_storage_runs(fake, tmp_path, capsys):
    db = str(tmp_path / "h.db")
    a = document(capsys, ["storage", "feed", "--db", db, "--n", "700", "--json"])["run_id"]
    b = document(capsys, ["storage", "feed", "--db", db, "--n", "700", "--scale", "3", "--json"])["run_id"]
    empty = document(capsys, ["storage", "feed", "--db", db, "--n", "0", "--json"])["run_id"]
    listed = document(capsys, ["history", "--db", db, "--json"])["runs"]
    assert [run["scenario"]["name"] for run in listed] == ["storage-feed"] * 3
    assert listed[0]["storage"]["figures"]["read_mb_s"] == 120.0 and listed[0]["engine"] == "storage"
    compared = document(capsys, ["compare", a, b, "--db", db, "--json"])
    assert compared["verdict"] == "slower" and compared["label_a"] == "fake feed on tmpfs · storage-feed"
    rows = {row["name"]: row for row in compared["storage_figures"]["rows"]}
    assert rows["read_mb_s"]["ratio"] == pytest.approx(3.0) and rows["read_mb_s"]["better"] == "higher"
    assert main(["compare", a, empty, "--db", db]) == 0  # no latencies in B: the figures still compare
    out = capsys.readouterr().out
    assert "the latencies cannot be compared: A stored 700 timed reads, B 0" in out and "read (MB/s)" in out
    assert main(["compare", a, empty, "--db", db, "--fail-on", "slower"]) == 3
    capsys.readouterr()
    html = tmp_path / "r.html"
    assert main(["report", a, b, "--db", db, "--out", str(html)]) == 0
    text = html.read_text()
    assert ">Storage<" in text and "Method: a fake kind for tests" in text and "labconsole storage feed" in text


def test_a_real_sweep_and_checkpoint_are_stored_and_compared(tmp_path, capsys):
    db, folder = str(tmp_path / "h.db"), tmp_path / "disk"
    folder.mkdir()
    swept = document(capsys, ["storage", "sweep", "--dir", str(folder), "--block-sizes", "4k,64k", "--queue-depths",
                              "1", "--readers", "1", "--rw", "read", "--pattern", "seq", "--point-seconds", "0.2",
                              "--file-size", "8m", "--engine", "built-in", "--db", db, "--json"])
    assert swept["status"] == "completed", swept["cause"]
    assert swept["result"]["heatmap"]["read/seq"]["y"] == [4096, 65536]
    saved = document(capsys, ["storage", "checkpoint", "--size", "1b", "--shard-gb", "0.02", "--formats",
                              "torch,safetensors", "--dir", str(folder), "--db", db, "--json"])
    assert saved["status"] == "completed", saved["cause"]
    assert set(saved["result"]["formats"]) == {"torch", "safetensors"}
    with open_reader(db) as store:
        runs = {run["spec"]["scenario"]: run for run in store.list_runs()}
        kept = runs["storage-sweep"]["summary"]["storage_telemetry"]
        metrics = store.metrics(swept["run_id"])
    assert set(runs) == {"storage-sweep", "storage-checkpoint"}
    # the devices were sampled in their own process while it ran, stored with the run (or it says why not)
    assert kept["rows"] == 0 and kept["problem"] or any(name.startswith("storage.") for name in metrics)
    assert runs["storage-checkpoint"]["summary"]["figures"]["torch_save_gb_s"] > 0
    assert main(["compare", swept["run_id"], saved["run_id"], "--db", db]) in (0, 3)
    assert "only figures of the same name" in capsys.readouterr().out
    assert list(folder.iterdir()) == []  # each kind removed its test files


def test_ctrl_c_cancels_the_benchmark_stores_it_cancelled_and_leaves_no_test_file(tmp_path):
    """A real `labconsole storage sweep` in its own process, interrupted mid-point: exit 130, the run stored as
    cancelled, and the kind's clean-up ran (the worker got SIGINT first), so its test file is gone."""
    import os
    import signal
    import subprocess
    import sys
    import time

    db, folder = str(tmp_path / "h.db"), tmp_path / "disk"
    folder.mkdir()
    command = [sys.executable, "-m", "console", "storage", "sweep", "--dir", str(folder), "--block-sizes", "64k",
               "--queue-depths", "1", "--readers", "1", "--rw", "read", "--pattern", "seq", "--point-seconds", "30",
               "--file-size", "8m", "--engine", "built-in", "--no-telemetry", "--db", db]
    # As from a terminal: a test run started in the background by a script has SIGINT ignored, and a child would
    # inherit that (the CLI then ignores Ctrl+C as any background job does)
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               env={**os.environ, "PYTHONUNBUFFERED": "1"},
                               preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not any(folder.iterdir()):
        time.sleep(0.2)  # the worker has written its test file: the sweep is under way
    time.sleep(1.0)
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=60)
    assert process.returncode == 130, (out, err)
    assert "cancelled" in err and list(folder.iterdir()) == []
    with open_reader(db) as store:
        runs = store.list_runs()
    assert [run["status"] for run in runs] == ["cancelled"] and runs[0]["spec"]["scenario"] == "storage-sweep"
