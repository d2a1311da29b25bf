"""No lock waits: readers never wait on (or write to) a history being recorded, a write-open that has nothing new
to say takes no lock, the store holds no lock between commits, and consoles racing to create a file all win."""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import stat
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

from console.cli import main
from console.history import LATEST_VERSION, HistoryStore, HistoryWriter, open_reader
from console.history.errors import translate
from console.history.store import _enable_wal

REPO = Path(__file__).resolve().parents[2]
SPEC = {"model": "mlp", "engine": "torch", "target": "cpu", "batch": 1, "scenario": "single-stream"}


@pytest.fixture
def db_path(tmp_path):
    return tmp_path / "history.db"


def _history(path, runs=2):
    """A closed history with `runs` completed runs, each with latencies and samples; their ids."""
    ids = []
    with HistoryStore(path) as store:
        for number in range(runs):
            run_id = store.create_run(SPEC)
            store.add_latencies(run_id, np.arange(50), np.arange(50) * 1000 + 1_000_000 * (number + 1))
            store.add_samples(run_id, [(1, "psutil", "cpu.util", 50.0, "%", "measured")])
            store.finish_run(run_id, "completed", summary={"iterations": 50})
            ids.append(run_id)
    return ids


def _digest(path):
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


@pytest.fixture
def write_lock_held(db_path):
    """Another connection in the middle of a write transaction (as a writer between two of its commits)."""
    ids = _history(db_path)
    holder = sqlite3.connect(db_path, timeout=0)
    holder.execute("BEGIN IMMEDIATE")
    holder.execute("INSERT INTO runs (run_id, status, started_at, spec) VALUES ('uncommitted', 'running', "
                   "'2026-01-01T00:00:00.000000Z', '{}')")
    yield ids
    holder.rollback()
    holder.close()


def test_readers_return_while_a_writer_holds_a_write_transaction(db_path, write_lock_held, capsys):
    with open_reader(db_path) as reader:
        assert sorted(r["run_id"] for r in reader.list_runs()) == sorted(write_lock_held)  # committed runs only
        assert reader.latencies(write_lock_held[0])[1].size == 50
    assert main(["history", "--json", "--db", str(db_path)]) == 0
    assert len(json.loads(capsys.readouterr().out)["runs"]) == 2
    assert main(["compare", *write_lock_held, "--json", "--db", str(db_path)]) == 0
    assert json.loads(capsys.readouterr().out)["verdict"] == "slower"


def test_a_write_open_with_nothing_new_to_write_does_not_wait_for_the_lock(db_path, write_lock_held):
    """A second run's writer opens while the first one writes: the host row is there, nothing is running."""
    writer = HistoryWriter.open(db_path)
    try:
        assert writer.host_id
    finally:
        writer.close()
    with HistoryStore(db_path) as store:
        assert store.host_id == writer.host_id


def test_the_store_holds_no_write_lock_between_commits(db_path):
    with HistoryStore(db_path) as store:
        run_id = store.create_run(SPEC)
        store.add_samples(run_id, [(t, "psutil", "cpu.util", 10.0, "%", "measured") for t in range(100)])
        store.add_latencies(run_id, np.arange(100), np.arange(100))
        other = sqlite3.connect(db_path, timeout=0)  # no waiting: the lock must be free right now
        try:
            other.execute("BEGIN IMMEDIATE")
            other.rollback()
        finally:
            other.close()
        store.commit()
        assert len(store.samples(run_id)) == 100 and store.latency_count(run_id) == 100


def test_data_for_an_unknown_run_is_still_refused_at_once(db_path):
    from console.history import HistoryError

    with HistoryStore(db_path) as store, pytest.raises(HistoryError, match="no such run"):
        store.add_samples("ghost", [(1, "psutil", "cpu.util", 1.0, "%", "measured")])


def test_a_second_console_records_while_the_first_is_recording(db_path):
    first = HistoryWriter.open(db_path, commit_interval_s=0.05)
    stop = threading.Event()
    try:
        busy = first.create_run(SPEC)

        def stream():
            t = 0
            while not stop.is_set():
                first.add_latencies(busy, [t], [1000])
                first.add_samples(busy, [(t, "psutil", "cpu.util", 1.0, "%", "measured")])
                t += 1
                stop.wait(0.005)

        feeder = threading.Thread(target=stream)
        feeder.start()
        for _ in range(3):
            second = HistoryWriter.open(db_path)
            run_id = second.create_run(SPEC)
            second.add_latencies(run_id, [1, 2], [3, 4])
            second.finish_run(run_id, "completed")
            assert second.flush() and second.close()
            with open_reader(db_path) as reader:
                assert reader.get_run(run_id)["status"] == "completed"
                assert reader.get_run(busy)["status"] == "running"  # the live run is not taken for dead
        stop.set()
        feeder.join()
        first.finish_run(busy, "completed")
        assert first.flush()
    finally:
        stop.set()
        first.close()


def test_reading_leaves_the_file_byte_for_byte_unchanged(db_path, capsys):
    ids = _history(db_path)
    assert not Path(f"{db_path}-wal").exists()  # a clean close checkpoints: the file holds everything
    before = _digest(db_path)
    with open_reader(db_path) as reader:
        reader.list_runs()
        reader.run_rows()
        reader.get_run(ids[0][:8])
        reader.latencies(ids[0])
        reader.samples(ids[0])
        reader.configurations()
    assert main(["history", "--json", "--db", str(db_path)]) == 0
    assert main(["compare", *ids, "--json", "--db", str(db_path)]) == 0
    capsys.readouterr()
    assert _digest(db_path) == before


def test_switching_a_new_file_to_wal_waits_for_a_writer_sqlite_answers_busy_at_once(tmp_path):
    """CI failed 1 trial in 3 of the test below: SQLite refuses `journal_mode=wal` with SQLITE_BUSY at once,
    never calling the busy handler, while another console holds the fresh rollback-mode file's write lock."""
    path = tmp_path / "fresh.db"
    writer = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    writer.execute("CREATE TABLE t (x)")
    writer.execute("BEGIN IMMEDIATE")
    writer.execute("INSERT INTO t VALUES (1)")
    late = sqlite3.connect(path, isolation_level=None, timeout=5)
    with pytest.raises(sqlite3.OperationalError, match="locked"):
        late.execute("PRAGMA journal_mode=wal")  # what sqlite-utils' enable_wal did: no wait at all
    threading.Timer(0.3, lambda: writer.execute("COMMIT")).start()
    _enable_wal(late)
    assert late.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    late.close()
    writer.close()


@pytest.mark.parametrize("trial", range(3))
def test_consoles_creating_the_same_new_file_at_once_all_succeed(tmp_path, trial):
    path = tmp_path / f"new-{trial}.db"
    barrier = threading.Barrier(4)
    errors, ids = [], []

    def console():
        barrier.wait()
        try:
            with HistoryStore(path) as store:
                ids.append(store.create_run(SPEC))
        except Exception as exc:  # noqa: BLE001 - collected and shown by the assertion
            errors.append(exc)

    threads = [threading.Thread(target=console) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    with HistoryStore(path) as store:
        versions = [v for (v,) in store.db.execute("SELECT version FROM schema_version ORDER BY version")]
        assert versions == list(range(1, LATEST_VERSION + 1))  # migrated once
        assert sorted(r["run_id"] for r in store.list_runs()) == sorted(ids)


READ_LISTING = """
import json, sys
from console.history import open_reader
with open_reader(sys.argv[1]) as reader:
    print(json.dumps([run["run_id"] for run in reader.list_runs()]))
"""


def _without_root_file_powers():
    """In the child, before exec: drop CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH from the bounding set, so root
    meets file permissions like anyone (PR_CAPBSET_DROP = 24)."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    for capability in (1, 2):
        if libc.prctl(24, capability, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP) refused")


def _read_as_one_bound_by_permissions(path: Path) -> list[str]:
    if os.geteuid() != 0:
        with open_reader(path) as reader:
            return [run["run_id"] for run in reader.list_runs()]
    try:
        done = subprocess.run([sys.executable, "-c", READ_LISTING, str(path)], cwd=REPO, capture_output=True,
                              text=True, timeout=120, preexec_fn=_without_root_file_powers)
    except subprocess.SubprocessError as exc:
        pytest.skip(f"cannot drop root's file permissions here ({exc})")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.mark.skipif(sys.platform != "linux", reason="POSIX permissions; root drops its powers with prctl")
def test_a_history_in_a_read_only_directory_can_be_read(tmp_path):
    folder = tmp_path / "ro"
    folder.mkdir()
    path = folder / "history.db"
    ids = _history(path, runs=1)
    os.chmod(path, 0o444)
    os.chmod(folder, 0o555)
    try:
        names = sorted(os.listdir(folder))
        assert _read_as_one_bound_by_permissions(path) == ids
        assert sorted(os.listdir(folder)) == names  # nothing created beside it
    finally:
        os.chmod(folder, stat.S_IRWXU)
        os.chmod(path, stat.S_IRUSR | stat.S_IWUSR)


def test_the_lock_message_names_the_consoles_own_writer_not_another_program(db_path):
    locked = sqlite3.OperationalError("database is locked")
    store = HistoryStore(db_path)
    store.create_run(SPEC)  # from now on this store is a live writer (it holds the writer lock)
    try:
        err = translate(locked, db_path, "creating a run")
        assert "another program" not in str(err)
        assert "Lab Console" in err.problem and "recording a run" in err.problem and "retry" in err.fix
        assert err.transient
    finally:
        store.close()
    err = translate(locked, db_path, "creating a run")  # nobody of ours holds it now
    assert "another program" in err.problem and "close the other program" in err.fix
