"""Merging another machine's history (console.history.merge): by run UUID, idempotent, hosts kept apart,
conflicts reported and not overwritten, the source never written, bad sources refused and left untouched."""

from __future__ import annotations

import hashlib
import json
import shutil
import sqlite3

import numpy as np
import old_history
import pytest

from console.history import LATEST_VERSION, HistoryError, HistoryStore, host
from console.history import merge as merge_module
from console.history.merge import merge_history

SPEC = {"model": "mlp", "engine": "torch", "target": "cpu", "batch": 1, "scenario": "single-stream",
        "precision": "fp32", "duration_s": 5.0, "name": ""}
VALID = {"valid": True, "latency_ms": {"p50": 1.0, "p99": 2.0}, "throughput_per_s": 100.0, "t0_ns": 0}
TABLES = ("hosts", "runs", "run_facts", "latency_chunks", "samples", "ops", "artifacts", "machine_cards", "sweeps",
          "baselines", "imports")


def _as_host(monkeypatch, hostname):
    row = {"host_id": f"host-{hostname}", "hostname": hostname, "os": "Linux", "machine": "x86_64",
           "cpu": f"{hostname} CPU", "python": "3.11"}
    monkeypatch.setattr(host, "describe", lambda: dict(row))


def _run(store, spec=SPEC, status="completed", summary=VALID, n=100, seed=0):
    rng = np.random.default_rng(seed)
    run_id = store.create_run(spec)
    latency = rng.integers(900_000, 1_100_000, n)
    store.add_latencies(run_id, np.cumsum(latency + 1000), latency)
    store.add_samples(run_id, [(int(t), "psutil", "cpu.util", float(v), "%", "measured")
                               for t, v in zip(range(0, n * 10**6, 10**6), rng.uniform(0, 100, n), strict=True)])
    if status != "running":
        store.finish_run(run_id, status, summary=summary, environment={"engine": {"torch": "2.5"}})
    return run_id


def _history(monkeypatch, path, hostname, runs=2, extras=False):
    """A history written on `hostname`: `runs` completed runs; extras: a profile, an artifact, a machine card,
    a sweep and a baseline."""
    _as_host(monkeypatch, hostname)
    with HistoryStore(path) as store:
        ids = [_run(store, seed=number) for number in range(runs)]
        if extras:
            store.add_ops(ids[0], [{"op": "aten::addmm", "calls": 3, "time_s": 0.01, "flops": 1e6, "bytes": 1e3}])
            store.add_artifact(ids[0], "trace", f"/data/{hostname}/trace.json", 1234)
            store.add_machine_card({"host": hostname, "target": "cpu", "device_name": "cpu", "peak_gflops": 100.0})
            sweep_id = store.create_sweep("batch sweep", {"batch": [1, 2]}, SPEC)
            store.tag_run(ids[1], sweep_id, {"batch": 1})
            store.finish_sweep(sweep_id, "completed")
            store.set_baseline(ids[0])
            store.set_tags(ids[0], ["nightly"])
            store.set_note(ids[0], "driver 550")
    return ids


def _digest(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _counts(path):
    conn = sqlite3.connect(path)
    try:
        return {table: conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0] for table in TABLES}
    finally:
        conn.close()


def _merge(monkeypatch, target, source, hostname="boxA"):
    _as_host(monkeypatch, hostname)
    with HistoryStore(target) as store:
        return merge_history(store, source)


@pytest.fixture
def two(tmp_path, monkeypatch):
    """(target path, its run ids, source path, its run ids): two histories from two lab machines."""
    target, source = tmp_path / "a.db", tmp_path / "b.db"
    mine = _history(monkeypatch, target, "boxA", runs=1)
    theirs = _history(monkeypatch, source, "boxB", runs=2, extras=True)
    return target, mine, source, theirs


# ---- merging
def test_two_histories_merge_with_their_hosts_kept_apart(two, monkeypatch):
    target, mine, source, theirs = two
    report = _merge(monkeypatch, target, source)
    assert report["runs_added"] == 2 and report["runs_skipped"] == 0 and report["conflicts"] == []
    assert report["hosts_added"] == 1 and report["cards_added"] == 1 and report["sweeps_added"] == 1
    assert report["baselines_added"] == 1 and report["ops_added"] == 1 and report["artifacts_added"] == 1
    assert report["iterations_added"] == 200 and report["samples_added"] == 200
    assert report["nothing_new"] is False and report["migrated_copy"] is False
    assert report["source"] == str(source.resolve()) and report["source_schema"] == LATEST_VERSION
    with HistoryStore(source, read_only=True) as original, HistoryStore(target, read_only=True) as merged:
        assert {run["run_id"] for run in merged.list_runs()} == {*mine, *theirs}
        assert {run["hostname"] for run in merged.list_runs()} == {"boxA", "boxB"}
        for run_id in theirs:
            a, b = original.get_run(run_id), merged.get_run(run_id)
            for key in ("spec", "summary", "environment", "status", "fingerprint", "configuration", "tags", "note",
                        "host_id", "started_at", "p50_ms", "sweep_id", "sweep_point"):
                assert a[key] == b[key], key
            for x, y in zip(original.latencies(run_id), merged.latencies(run_id), strict=True):
                assert x.tolist() == y.tolist()
            assert original.samples(run_id) == merged.samples(run_id)
            assert original.ops(run_id) == merged.ops(run_id)
        assert merged.hostname_of(merged.get_run(mine[0])) == "boxA"
        assert merged.baseline_of(merged.get_run(theirs[0])["fingerprint"])["run_id"] == theirs[0]
        assert [card["host"] for card in merged.machine_cards(hostname="boxB")] == ["boxB"]
        assert merged.artifacts(theirs[0])[0]["path"] == "/data/boxB/trace.json"
        assert merged.list_sweeps()[0]["name"] == "batch sweep"
        # each machine's runs are their own configurations: the same spec on two hosts is not one series
        assert merged.get_run(theirs[0])["fingerprint"] != merged.get_run(mine[0])["fingerprint"]
        (logged,) = merged.db.execute("SELECT source, report FROM imports").fetchall()
    assert logged[0] == str(source.resolve()) and json.loads(logged[1])["runs_added"] == 2


def test_a_second_import_adds_nothing_and_says_so(two, monkeypatch):
    target, _, source, theirs = two
    first = _merge(monkeypatch, target, source)
    before = _counts(target)
    again = _merge(monkeypatch, target, source)
    assert again["nothing_new"] is True and again["runs_added"] == 0 and again["runs_skipped"] == len(theirs)
    assert again["conflicts"] == [] and again["imported_before"] is not None and "import_id" not in again
    assert _counts(target) == before
    assert first["import_id"]


def test_the_source_is_never_written(two, monkeypatch):
    target, _, source, _ = two
    digest, beside = _digest(source), sorted(p.name for p in source.parent.iterdir())
    _merge(monkeypatch, target, source)
    assert _digest(source) == digest
    # a closed history is opened immutable: no -wal or -shm file appears next to it
    assert sorted(p.name for p in source.parent.iterdir()) == beside


def test_a_run_that_differs_is_reported_and_not_overwritten(tmp_path, monkeypatch):
    source, target = tmp_path / "b.db", tmp_path / "a.db"
    ids = _history(monkeypatch, source, "boxB", runs=3, extras=True)
    shutil.copy(source, target)  # the same runs in both …
    _as_host(monkeypatch, "boxB")
    with HistoryStore(target) as store:  # … then this copy's records change
        store.set_summary_field(ids[0], "valid", False)
        store.db.execute("UPDATE runs SET status = 'failed' WHERE run_id = ?", [ids[1]])
        store.db.conn.commit()
        kept = store.get_run(ids[0])
    report = _merge(monkeypatch, target, source, hostname="boxB")
    assert {c["run_id"] for c in report["conflicts"]} == {ids[0], ids[1]}
    why = {c["run_id"]: c["why"] for c in report["conflicts"]}
    assert "summary differs" in why[ids[0]]
    assert "status is failed here and completed in the imported file" in why[ids[1]]
    assert report["runs_skipped"] == 1 and report["runs_added"] == 0 and report["nothing_new"] is True
    with HistoryStore(target, read_only=True) as store:
        assert store.get_run(ids[0])["summary"] == kept["summary"]
        assert store.get_run(ids[1])["status"] == "failed"


def test_a_baseline_is_only_taken_where_this_history_has_none(tmp_path, monkeypatch):
    source, target = tmp_path / "b.db", tmp_path / "a.db"
    ids = _history(monkeypatch, source, "boxB", runs=2, extras=True)  # baseline: ids[0]
    shutil.copy(source, target)
    _as_host(monkeypatch, "boxB")
    with HistoryStore(target) as store:
        store.set_baseline(ids[1])  # same configuration, another run chosen here
    report = _merge(monkeypatch, target, source, hostname="boxB")
    assert report["baselines_added"] == 0
    (conflict,) = report["baseline_conflicts"]
    assert conflict["kept_run_id"] == ids[1] and conflict["source_run_id"] == ids[0]
    with HistoryStore(target, read_only=True) as store:
        assert [b["run_id"] for b in store.baselines()] == [ids[1]]


def test_a_run_still_running_in_the_source_is_left_for_a_later_import(tmp_path, monkeypatch):
    source, target = tmp_path / "b.db", tmp_path / "a.db"
    _as_host(monkeypatch, "boxB")
    with HistoryStore(source) as store:
        done = _run(store)
        live = _run(store, status="running")
        # keep the run `running` in the file: a store that opens it later would take it for interrupted
        store.commit()
        report = _merge(monkeypatch, target, source)
    assert report["runs_added"] == 1 and report["runs_in_progress"] == [live]
    with HistoryStore(target, read_only=True) as merged:
        assert [run["run_id"] for run in merged.list_runs()] == [done]


def test_a_failure_leaves_the_target_unchanged(two, monkeypatch):
    target, _, source, _ = two
    before = _counts(target)

    def broken(self):
        raise sqlite3.OperationalError("disk I/O error")

    monkeypatch.setattr(merge_module._Merge, "_copy_baselines", broken)
    with pytest.raises(HistoryError, match="I/O error"):
        _merge(monkeypatch, target, source)
    assert _counts(target) == before


def test_an_older_source_is_upgraded_in_a_copy_and_merged(tmp_path, monkeypatch):
    source, target = tmp_path / "from-oldbox" / "old.db", tmp_path / "a.db"
    source.parent.mkdir()
    runs = [{"summary": VALID, "latencies": [(10, 5), (20, 6), (30, 7)],
             "samples": [(15, "psutil", "cpu.util", 50.0, "%", "measured")]},
            {"summary": {**VALID, "valid": False}, "latencies": [(5, 9)]}]
    old_history.make(source, 3, runs)
    digest, beside = _digest(source), sorted(p.name for p in source.parent.iterdir())
    report = _merge(monkeypatch, target, source)
    assert report["migrated_copy"] is True and report["source_schema"] == 3
    assert report["runs_added"] == 2 and report["iterations_added"] == 4 and report["hosts_added"] == 1
    assert _digest(source) == digest and sorted(p.name for p in source.parent.iterdir()) == beside
    with HistoryStore(target, read_only=True) as merged:
        run = merged.get_run(runs[0]["run_id"])
        assert run["hostname"] == "oldbox" and len(run["fingerprint"]) == 16
        assert [lat.tolist() for lat in merged.latencies(run["run_id"])] == [[10, 20, 30], [5, 6, 7]]
        assert merged.samples(run["run_id"])[0]["value"] == 50.0
        # the migration registered the importing machine in the copy; it ran nothing there and is not copied
        assert {row[0] for row in merged.db.execute("SELECT hostname FROM hosts")} == {"boxA", "oldbox"}
    assert _merge(monkeypatch, target, source)["nothing_new"] is True


# ---- bad sources: refused, left byte-identical, target unchanged
@pytest.mark.parametrize("kind", ["text", "empty", "foreign sqlite", "empty sqlite"])
def test_a_file_that_is_not_a_history_is_refused_and_left_untouched(tmp_path, monkeypatch, kind):
    target, source = tmp_path / "a.db", tmp_path / "other.db"
    _history(monkeypatch, target, "boxA", runs=1)
    if kind == "text":
        source.write_text("run_id,latency\n1,2\n")
    elif kind == "empty":
        source.write_bytes(b"")
    else:
        conn = sqlite3.connect(source)
        if kind == "foreign sqlite":
            conn.execute("CREATE TABLE invoices (id INTEGER, total REAL)")
            conn.execute("INSERT INTO invoices VALUES (1, 9.5)")
        else:
            conn.execute("PRAGMA user_version = 1")
        conn.commit()
        conn.close()
    digest, before = _digest(source), _counts(target)
    with pytest.raises(HistoryError) as caught:
        _merge(monkeypatch, target, source)
    assert "not a Lab Console history" in caught.value.problem and "left untouched" in caught.value.problem
    assert caught.value.fix
    if kind == "foreign sqlite":
        assert "invoices" in caught.value.problem
    assert _digest(source) == digest and _counts(target) == before


def test_a_newer_schema_is_refused_and_left_untouched(two, monkeypatch):
    target, _, source, _ = two
    conn = sqlite3.connect(source)
    conn.execute("INSERT INTO schema_version (version, applied_at) VALUES (?, '2030-01-01')", [LATEST_VERSION + 1])
    conn.commit()
    conn.close()
    digest, before = _digest(source), _counts(target)
    with pytest.raises(HistoryError, match="newer Lab Console") as caught:
        _merge(monkeypatch, target, source)
    assert "upgrade Lab Console" in caught.value.fix
    assert _digest(source) == digest and _counts(target) == before


def test_importing_a_history_into_itself_or_a_missing_file_is_refused(two, monkeypatch):
    target, _, _, _ = two
    before = _counts(target)
    with pytest.raises(HistoryError, match="this history itself"):
        _merge(monkeypatch, target, target)
    with pytest.raises(HistoryError, match="no file"):
        _merge(monkeypatch, target, target.parent / "missing.db")
    with pytest.raises(HistoryError, match="directory"):
        _merge(monkeypatch, target, target.parent)
    assert _counts(target) == before
