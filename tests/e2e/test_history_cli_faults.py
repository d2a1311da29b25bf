"""`labconsole run` when the history fails under it: a real worker measures, the disk "fills up" mid-run, and the
run is reported `failed` with the cause and exit 1 — never `completed` with exit 0."""

from __future__ import annotations

import json
import sqlite3
import threading

import pytest

from console.cli import main
from console.history import HistoryStore, v4_upgrade
from console.run import session as session_module


def test_a_disk_that_fills_up_mid_run_fails_the_run_and_keeps_what_was_stored(tmp_path, monkeypatch, capsys):
    db = tmp_path / "history.db"
    full = threading.Event()
    real_insert, real_event = v4_upgrade.insert_chunks, session_module.RunSession._on_worker_event

    def insert_chunks(*args, **kwargs):
        if full.is_set():
            raise sqlite3.OperationalError("database or disk is full")
        return real_insert(*args, **kwargs)

    def on_worker_event(self, event):
        real_event(self, event)
        if event["type"] == "latencies" and not full.is_set():
            assert self._writer.flush()  # the first batch reaches the disk, then the disk is full
            full.set()

    monkeypatch.setattr(v4_upgrade, "insert_chunks", insert_chunks)
    monkeypatch.setattr(session_module.RunSession, "_on_worker_event", on_worker_event)
    code = main(["run", "--model", "mlp", "--duration", "1.5", "--warmup", "0.1", "--no-telemetry", "--json",
                 "--db", str(db)])
    captured = capsys.readouterr()
    assert code == 1, captured.err
    report = json.loads(captured.out)
    storage = report["storage"]
    assert report["status"] == "failed" and report["iterations"] > 0  # what was measured is still reported
    assert "missing" in report["message"] and "full" in report["message"] and "free disk space" in report["message"]
    assert storage["complete"] is False and storage["missing_iterations"] > 0 and storage["stored_iterations"] > 0
    assert storage["stored_iterations"] + storage["missing_iterations"] == report["iterations"]

    full.clear()
    monkeypatch.setattr(session_module.RunSession, "_on_worker_event", real_event)
    with HistoryStore(db) as store:  # the next write-open (the next run, the window) recovers it
        run = store.get_run(report["run_id"])
        assert run["status"] == "interrupted"
        assert store.latency_count(run["run_id"]) == storage["stored_iterations"]
        assert run["summary"]["iterations"] == storage["stored_iterations"]
        assert run["summary"]["valid"] is False
    assert main(["history", "--json", "--db", str(db)]) == 0
    listed = json.loads(capsys.readouterr().out)["runs"]
    assert [(r["run_id"], r["status"]) for r in listed] == [(report["run_id"], "interrupted")]


def test_a_name_that_cannot_be_stored_exits_1_naming_it_and_stores_nothing(tmp_path, capsys):
    db = tmp_path / "history.db"
    code = main(["run", "--model", "mlp", "--iterations", "3", "--warmup", "0", "--name", "bench-\udcff",
                 "--db", str(db)])
    err = capsys.readouterr().err
    assert code == 1
    assert "name" in err and "\\udcff" in err and "--name" in err and "Traceback" not in err
    with HistoryStore(db) as store:
        assert store.list_runs() == []


@pytest.mark.parametrize("command", [["history"], ["compare", "abcd1234", "dcba4321"]])
def test_read_commands_on_a_missing_history_do_not_create_it(tmp_path, command, capsys):
    db = tmp_path / "none.db"
    main([*command, "--db", str(db)])
    capsys.readouterr()
    assert not db.exists()
