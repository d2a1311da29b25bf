"""HistoryWriter: batching thread, commit cadence, error reporting, and surviving a SIGKILL."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from console.history import INTERRUPTED_ERROR, HistoryError, HistoryStore, HistoryWriter

REPO = Path(__file__).resolve().parents[2]
SPEC = {"model": "mlp", "engine": "torch", "target": "cpu", "batch": 1, "scenario": "single-stream"}


@pytest.fixture
def db_path(tmp_path):
    return tmp_path / "history.db"


class Errors:
    """An on_error handler that remembers what it got, and from which thread."""

    def __init__(self):
        self.got: list[HistoryError] = []
        self.threads: set[str] = set()

    def __call__(self, err):
        self.got.append(err)
        self.threads.add(threading.current_thread().name)


def _count(path, table, run_id):
    """Committed rows of a run as another connection sees them (latencies: iterations in its chunks)."""
    conn = sqlite3.connect(path)
    try:
        if table == "latencies":
            return conn.execute("SELECT COALESCE(SUM(n), 0) FROM latency_chunks WHERE run_id = ?",
                                (run_id,)).fetchone()[0]
        return conn.execute(f"SELECT COUNT(*) FROM {table} WHERE run_id = ?", (run_id,)).fetchone()[0]
    finally:
        conn.close()


def _wait_for(predicate, timeout=3.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return predicate()


def test_writer_round_trip(db_path):
    errors = Errors()
    writer = HistoryWriter.open(db_path, on_error=errors)
    assert writer.daemon and writer.is_alive() and writer.host_id
    run_id = writer.create_run(SPEC)
    assert len(run_id) == 32
    env = {"torch": "2.3", "threads": 8}
    writer.set_environment(run_id, env)
    env["torch"] = "mutated after the call"  # the writer must have taken a copy
    for start in range(0, 10_000, 1_000):
        writer.add_latencies(run_id, list(range(start, start + 1_000)), np.arange(start, start + 1_000) * 3)
    writer.add_samples(run_id, [(i, "psutil", "cpu.util", float(i), "%", "measured") for i in range(50)])
    writer.finish_run(run_id, "completed", summary={"p50_ms": 1.5})
    assert writer.flush(timeout=10)
    assert writer.close(timeout=10)
    assert not writer.is_alive()
    assert errors.got == []

    with HistoryStore(db_path) as store:
        run = store.get_run(run_id)
        assert run["status"] == "completed" and run["summary"] == {"p50_ms": 1.5}
        assert run["environment"] == {"torch": "2.3", "threads": 8}
        t_ns, lat = store.latencies(run_id)
        assert t_ns.tolist() == list(range(10_000)) and lat.tolist() == [3 * i for i in range(10_000)]
        assert [row["value"] for row in store.samples(run_id)] == [float(i) for i in range(50)]


def test_open_failure_is_raised_in_the_caller(tmp_path):
    blocker = tmp_path / "afile"
    blocker.write_text("x")
    with pytest.raises(HistoryError, match="cannot write"):
        HistoryWriter.open(blocker / "x.db")
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"\x00\x01junk" * 100)
    writer = HistoryWriter(junk)
    with pytest.raises(HistoryError, match="not an SQLite database"):
        writer.start()
    assert not _wait_for(writer.is_alive, timeout=0.5)


def test_writer_commits_within_a_second_without_flush(db_path):
    writer = HistoryWriter.open(db_path)
    try:
        run_id = writer.create_run(SPEC)
        writer.add_latencies(run_id, np.arange(500), np.arange(500))
        writer.add_samples(run_id, [(1, "psutil", "mem.used", 1.0, "GiB", "measured")])
        # A second connection sees only committed data; give it up to 3 s (the writer promises ~1 s).
        assert _wait_for(lambda: _count(db_path, "latencies", run_id) == 500, timeout=3.0)
        assert _count(db_path, "samples", run_id) == 1
    finally:
        writer.close()


def test_caller_side_validation_is_immediate(db_path):
    writer = HistoryWriter.open(db_path)
    try:
        with pytest.raises(ValueError, match="status must be one of"):
            writer.finish_run("x", "done")
        with pytest.raises(ValueError, match="equally long"):
            writer.add_latencies("x", [1, 2], [1])
        with pytest.raises(ValueError, match="method must be one of"):
            writer.add_samples("x", [(1, "s", "m", 1.0, "W", "guessed")])
        with pytest.raises(ValueError, match="JSON"):
            writer.create_run({"model": object()})
    finally:
        writer.close()
    with pytest.raises(RuntimeError, match="closed"):
        writer.add_latencies("x", [1], [1])


def test_disk_full_is_reported_once_and_the_data_written_when_it_clears(db_path, monkeypatch):
    errors = Errors()
    writer = HistoryWriter.open(db_path, on_error=errors, commit_interval_s=0.1)
    try:
        run_id = writer.create_run(SPEC)
        assert writer.flush()
        real = HistoryStore.add_latencies
        full = threading.Event()
        full.set()

        def add_latencies(self, *args):
            if full.is_set():
                raise sqlite3.OperationalError("database or disk is full")
            return real(self, *args)

        monkeypatch.setattr(HistoryStore, "add_latencies", add_latencies)
        writer.add_latencies(run_id, [1, 2], [10, 20])
        writer.add_latencies(run_id, [3], [30])
        assert not writer.flush(timeout=5)  # cannot commit while the disk is "full"
        assert _wait_for(lambda: errors.got, timeout=3)
        time.sleep(0.3)  # several retry rounds
        assert len(errors.got) == 1  # reported once, not every retry
        err = errors.got[0]
        assert isinstance(err, HistoryError) and "free disk space" in err.fix and err.transient
        assert errors.threads == {"history-writer"}
        assert writer.is_alive() and writer.backlog_rows == 3
        assert _count(db_path, "runs", run_id) == 1  # what was committed stays

        full.clear()  # space freed
        writer.add_latencies(run_id, [4], [40])
        assert writer.flush(timeout=5)
        assert writer.backlog_rows == 0
    finally:
        writer.close()
    with HistoryStore(db_path) as store:
        assert store.latencies(run_id)[1].tolist() == [10, 20, 30, 40]


def test_real_sqlite_full_in_the_writer_thread_recovers_without_a_gap(db_path, monkeypatch):
    """SQLITE_FULL from SQLite itself (max_page_count), raised mid-transaction in the writer thread."""
    limit = {"full": True}
    real = HistoryStore.add_latencies

    def add_latencies(self, *args):  # runs on the writer thread, which owns the connection
        pages = self.db.execute("PRAGMA page_count").fetchone()[0] if limit["full"] else 1_073_741_823
        self.db.execute(f"PRAGMA max_page_count = {pages}")
        return real(self, *args)

    errors = Errors()
    writer = HistoryWriter.open(db_path, on_error=errors, commit_interval_s=0.1)
    try:
        run_id = writer.create_run(SPEC)
        assert writer.flush()
        monkeypatch.setattr(HistoryStore, "add_latencies", add_latencies)
        durations = np.random.default_rng(0).integers(0, 1 << 40, 50_000)  # incompressible: it needs new pages
        for start in range(0, 50_000, 10_000):
            writer.add_latencies(run_id, np.arange(start, start + 10_000), durations[start:start + 10_000])
        assert not writer.flush(timeout=5)
        assert len(errors.got) == 1 and "free disk space" in errors.got[0].fix
        limit["full"] = False
        assert writer.flush(timeout=5)
    finally:
        writer.close()
    with HistoryStore(db_path) as store:
        t_ns, latency_ns = store.latencies(run_id)
        assert t_ns.tolist() == list(range(50_000)) and latency_ns.tolist() == durations.tolist()
        assert store.integrity_check() == "ok"


def test_a_refused_write_is_reported_and_the_writer_keeps_going(db_path):
    errors = Errors()
    writer = HistoryWriter.open(db_path, on_error=errors)
    try:
        writer.finish_run("no-such-run", "completed")
        writer.add_latencies("no-such-run", [1], [1])
        run_id = writer.create_run(SPEC)
        writer.add_latencies(run_id, [1], [2])
        assert writer.flush()
        assert len(errors.got) == 2
        assert "no run no-such-run" in str(errors.got[0]) and "refused" in str(errors.got[1])
        assert all(err.fix for err in errors.got)
    finally:
        writer.close()
    assert _count(db_path, "latencies", run_id) == 1


def test_a_faulty_error_handler_does_not_stop_the_writer(db_path):
    def handler(err):
        raise RuntimeError("handler bug")

    writer = HistoryWriter.open(db_path, on_error=handler)
    try:
        writer.finish_run("ghost", "failed")
        run_id = writer.create_run(SPEC)
        assert writer.flush()
        assert writer.is_alive() and isinstance(writer.last_error, HistoryError)
    finally:
        writer.close()
    assert _count(db_path, "runs", run_id) == 1


CHILD = textwrap.dedent("""
    import sys, time
    import numpy as np
    from console.history import HistoryWriter

    path, run_id = sys.argv[1], sys.argv[2]
    writer = HistoryWriter.open(path)
    writer.create_run({"model": "mlp", "name": "killed"}, run_id)
    writer.add_latencies(run_id, np.arange(5000), np.arange(5000) + 1000)
    writer.add_latencies(run_id, np.arange(5000, 8000), np.arange(5000, 8000) + 1000)
    assert writer.flush(timeout=10), "flush failed"
    writer.add_latencies(run_id, np.arange(8000, 9000), np.arange(8000, 9000) + 1000)
    print("flushed", flush=True)
    time.sleep(300)
""")


@pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL is POSIX")
def test_killed_console_leaves_an_interrupted_run_with_flushed_data(db_path):
    run_id = "feedface" * 4
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(db_path), run_id], cwd=REPO,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = child.stdout.readline()
        assert line.strip() == "flushed", child.stderr.read() if child.poll() is not None else line
        with HistoryStore(db_path) as reader:  # the child is alive: its run must stay `running`
            assert reader.get_run(run_id)["status"] == "running"
        os.kill(child.pid, signal.SIGKILL)
        child.wait(timeout=10)
        assert child.returncode == -signal.SIGKILL
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        child.stdout.close()
        child.stderr.close()

    with HistoryStore(db_path) as store:
        run = store.get_run(run_id)
        assert run["status"] == "interrupted" and run["error"] == INTERRUPTED_ERROR and run["ended_at"]
        t_ns, lat = store.latencies(run_id)
        assert len(t_ns) in (8000, 9000)  # the last batch may or may not have reached its 1 s commit
        assert t_ns[:8000].tolist() == list(range(8000))
        assert (lat - t_ns == 1000).all()
        assert store.integrity_check() == "ok"
