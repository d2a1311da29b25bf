"""Damaged rows in the history (issue 19, case 2): a run whose stored JSON is cut off, holds NaN or is the wrong
kind of value is shown as damaged (which run, which field, why) by `history`, skipped with a one-line note by the
commands that list runs, refused with a one-line message naming the run and field when it is named, and refused
at import — and no command reading the history changes a byte of it. The rows are damaged with sqlite3 directly,
as another tool or a bad disk would."""

from __future__ import annotations

import hashlib
import json
import sqlite3

import numpy as np
import old_history
import pytest

from console.cli import main
from console.history import HistoryError, HistoryStore, damage, open_reader

SPEC = {"model": "mlp", "engine": "torch", "target": "cpu", "batch": 1, "scenario": "single-stream",
        "precision": "fp32", "duration_s": 5.0, "name": ""}
ENVIRONMENT = {"engine": {"torch": "2.5"}}
BROKEN = {"spec": "{not json", "summary": "[1,2", "environment": "nan"}  # the row


def _summary(p50_ms: float) -> dict:
    return {"valid": True, "iterations": 100, "latency_ms": {"p50": p50_ms, "p99": p50_ms * 1.2},
            "throughput_per_s": 1000.0 / p50_ms, "t0_ns": 0}


def _history(path, runs: int = 3, baseline: bool = False) -> list[str]:
    """`runs` completed, valid runs of one configuration (100 iterations each), oldest first."""
    ids = []
    with HistoryStore(path) as store:
        for number in range(runs):
            run_id = store.create_run(SPEC)
            latency = np.random.default_rng(number).integers(900_000, 1_100_000, 100)
            store.add_latencies(run_id, np.cumsum(latency + 1000), latency)
            store.finish_run(run_id, "completed", summary=_summary(1.0), environment=ENVIRONMENT)
            ids.append(run_id)
        if baseline:
            store.set_baseline(ids[0])
    return ids


def _damage(path, run_id: str, table: str = "runs", **columns: str) -> None:
    conn = sqlite3.connect(path)
    try:
        assignments = ", ".join(f"{column} = ?" for column in columns)
        conn.execute(f"UPDATE {table} SET {assignments} WHERE run_id = ?", [*columns.values(), run_id])
        conn.commit()
    finally:
        conn.close()


def _digest(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _one_line_error(err: str) -> str:
    assert "Traceback" not in err and "JSONDecodeError" not in err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    return lines[0]


@pytest.fixture
def damaged(tmp_path):
    """A history of three runs whose middle one has the issue's broken spec, summary and environment."""
    path = tmp_path / "history.db"
    ids = _history(path, baseline=True)
    _damage(path, ids[1], **BROKEN)
    return path, ids


# ---- The decoding layer
@pytest.mark.parametrize(("field", "text", "why"), [
    ("summary", "[1,2", "is not JSON"),
    ("spec", "{not json", "is not JSON"),
    ("environment", "nan", "is not JSON"),
    ("summary", '{"x": NaN}', "NaN is not a JSON value"),
    ("summary", '{"x": -Infinity}', "-Infinity is not a JSON value"),
    ("summary", "[1, 2]", "holds a list where an object belongs"),
    ("spec", '"mlp"', "holds a string where an object belongs"),
    ("tags", '{"a": 1}', "holds an object where a list belongs"),
    ("tags", '["ok", 3]', "something other than text"),
    ("summary", "[" * 100_000, "nested too deeply"),
    ("summary", b'{"x": 1}', "binary data"),
])
def test_a_damaged_column_is_named_with_why_instead_of_raising(field, text, why):
    value, reason = damage.decode(field, text)
    assert value is None and why in reason and "\n" not in reason


def test_healthy_columns_decode_as_before():
    assert damage.decode("summary", '{"p50": 1.5, "ok": null}') == ({"p50": 1.5, "ok": None}, None)
    assert damage.decode("tags", '["nightly"]') == (["nightly"], None)
    assert damage.decode("summary", None) == (None, None) and damage.decode("summary", "null") == (None, None)


def test_listings_skip_a_damaged_run_and_remember_it_get_run_refuses_it(damaged):
    path, ids = damaged
    with open_reader(path) as store:
        listed = store.list_runs()
        assert [run["run_id"] for run in listed] == [ids[2], ids[0]]
        assert set(store.skipped_damaged) == {ids[1]}
        assert [item["field"] for item in store.skipped_damaged[ids[1]]] == ["spec", "summary", "environment"]
        shown = store.list_runs(include_damaged=True)
        assert [run["run_id"] for run in shown] == ids[::-1]
        assert shown[1]["summary"] is None and shown[1]["damaged"][1]["reason"].startswith("is not JSON")
        assert [run["run_id"] for run in store.series(listed[0]["fingerprint"])] == [ids[0], ids[2]]
        with pytest.raises(damage.DamagedRunError) as refused:
            store.get_run(ids[1][:8])
        assert ids[1][:8] in str(refused.value) and "summary" in str(refused.value) and "backup" in str(refused.value)
        assert store.get_run(ids[1], include_damaged=True)["damaged"]


def test_a_damaged_sweep_is_listed_and_refused_when_opened(tmp_path):
    path = tmp_path / "history.db"
    with HistoryStore(path) as store:
        sweep_id = store.create_sweep("batch sweep", {"batch": [1, 2]}, SPEC)
        store.finish_sweep(sweep_id, "completed", summary={"knee": None})
    conn = sqlite3.connect(path)
    conn.execute("UPDATE sweeps SET grid = '{\"batch\": [1, NaN]}', summary = '[]' WHERE sweep_id = ?", [sweep_id])
    conn.commit()
    conn.close()
    with open_reader(path) as store:
        (listed,) = store.list_sweeps()
        assert listed["grid"] is None and [item["field"] for item in listed["damaged"]] == ["grid", "summary"]
        assert listed["base"]["model"] == "mlp"
        with pytest.raises(HistoryError, match=f"sweep {sweep_id[:8]} is damaged.*its grid is not strict JSON"):
            store.get_sweep(sweep_id[:8])


def test_a_running_run_with_a_damaged_spec_is_still_recovered_as_interrupted(tmp_path):
    path = tmp_path / "history.db"
    with HistoryStore(path) as store:
        run_id = store.create_run(SPEC)
        store._lock.close()  # noqa: SLF001 — the console that recorded it is gone
        store._lock = None  # noqa: SLF001
        store._conn.close()  # noqa: SLF001
        store._conn = None  # noqa: SLF001
    _damage(path, run_id, spec="[1]")
    with HistoryStore(path) as store:  # a write-open recovers it: a list where the spec belongs must not stop it
        run = store.get_run(run_id, include_damaged=True)
    assert run["status"] == "interrupted" and run["damaged"][0]["field"] == "spec"


def test_a_summary_field_is_not_merged_into_a_damaged_summary(damaged):
    path, ids = damaged
    before = _digest(path)
    with HistoryStore(path) as store, pytest.raises(damage.DamagedRunError, match="summary"):
        store.set_summary_field(ids[1], "baseline", {"verdict": "faster"})
    assert _digest(path) == before


# ---- The commands
def test_history_lists_a_damaged_run_as_damaged(damaged, capsys):
    path, ids = damaged
    before = _digest(path)
    assert main(["history", "--db", str(path)]) == 0
    out = capsys.readouterr().out
    line = next(line for line in out.splitlines() if line.startswith(ids[1][:8]))
    assert line.endswith("DAMAGED")
    assert "damaged: its summary is not JSON" in out and "damaged: its environment is not JSON" in out
    assert sum(line.endswith("VALID") for line in out.splitlines()) == 2
    assert main(["history", "--json", "--db", str(path)]) == 0
    runs = json.loads(capsys.readouterr().out)["runs"]
    assert [run["run_id"] for run in runs] == ids[::-1]
    assert [item["field"] for item in runs[1]["damaged"]] == ["spec", "summary", "environment"]
    assert runs[1]["valid"] is None and runs[0]["damaged"] == [] and runs[0]["valid"] is True
    assert _digest(path) == before


def test_a_damaged_tag_list_matches_no_tag_instead_of_failing_the_listing(damaged, capsys):
    path, ids = damaged
    with HistoryStore(path) as store:
        store.set_tags(ids[2], ["nightly"])
    _damage(path, ids[0], table="run_facts", tags='["nightly",')
    before = _digest(path)
    assert main(["history", "--tag", "nightly", "--json", "--db", str(path)]) == 0
    assert [run["run_id"] for run in json.loads(capsys.readouterr().out)["runs"]] == [ids[2]]
    assert main(["history", "--db", str(path)]) == 0
    assert "damaged: its tag list is not JSON" in capsys.readouterr().out
    with open_reader(path) as store:
        rows = {row["run_id"]: row for row in store.run_rows(tag="nightly")}
        assert list(rows) == [ids[2]]
        marked = {row["run_id"]: row.get("damaged") for row in store.run_rows()}
        assert marked[ids[0]][0]["field"] == "tags" and marked[ids[2]] is None
    assert _digest(path) == before


def test_report_refuses_a_named_damaged_run_and_skips_a_damaged_sweep_point(damaged, tmp_path, capsys):
    path, ids = damaged
    with HistoryStore(path) as store:
        sweep_id = store.create_sweep("batch sweep", {"batch": [1, 2, 4]}, SPEC)
        for batch, run_id in zip((1, 2, 4), ids, strict=True):
            store.tag_run(run_id, sweep_id, {"batch": batch})
        store.finish_sweep(sweep_id, "completed")
    before = _digest(path)
    out = tmp_path / "report.html"
    assert main(["report", ids[1][:8], "--out", str(out), "--db", str(path)]) == 1
    line = _one_line_error(capsys.readouterr().err)
    assert ids[1][:8] in line and "summary" in line and "Fix:" in line
    assert not out.exists()
    assert main(["report", "--sweep", sweep_id[:8], "--out", str(out), "--json", "--db", str(path)]) == 0
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err and f"skipped run {ids[1][:8]}" in captured.err and out.exists()
    assert ids[1] not in out.read_text() and ids[0] in out.read_text()
    assert _digest(path) == before


def test_compare_with_a_damaged_run_cannot_judge_and_says_which(damaged, capsys):
    """3, not 1: for `compare --fail-on`, 1 means "yes, slower" — a damaged run must never read as a verdict."""
    path, ids = damaged
    before = _digest(path)
    assert main(["compare", ids[0], ids[1][:8], "--fail-on", "slower", "--db", str(path)]) == 3
    line = _one_line_error(capsys.readouterr().err)
    assert ids[1][:8] in line and "spec" in line and "Fix:" in line
    assert main(["compare", ids[0], ids[2], "--db", str(path)]) == 0
    capsys.readouterr()
    assert _digest(path) == before


def test_regressions_skip_a_damaged_run_with_a_note(damaged, capsys):
    path, ids = damaged
    before = _digest(path)
    assert main(["regressions", "--db", str(path)]) == 0
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    notes = [line for line in captured.err.splitlines() if line.strip()]
    assert len(notes) == 1 and f"skipped run {ids[1][:8]}" in notes[0] and "summary" in notes[0]
    assert "no step change" in captured.out
    assert _digest(path) == before


def test_whatif_refuses_a_named_damaged_run(damaged, capsys):
    path, ids = damaged
    before = _digest(path)
    assert main(["whatif", ids[1][:8], "--peak-gflops", "25", "--db", str(path)]) == 1
    line = _one_line_error(capsys.readouterr().err)
    assert ids[1][:8] in line and "environment" in line
    assert _digest(path) == before


def test_baseline_set_refuses_a_damaged_run_and_show_skips_a_damaged_baseline(damaged, capsys):
    path, ids = damaged
    assert main(["baseline", "set", ids[1][:8], "--db", str(path)]) == 1
    line = _one_line_error(capsys.readouterr().err)
    assert ids[1][:8] in line and "summary" in line
    with open_reader(path) as store:
        assert [b["run_id"] for b in store.baselines()] == [ids[0]]
    _damage(path, ids[0], table="run_facts", configuration="{", tags="[1]")
    before = _digest(path)
    assert main(["baseline", "show", "--json", "--db", str(path)]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["baselines"] == []
    assert f"skipped run {ids[0][:8]}" in captured.err and "configuration" in captured.err
    assert _digest(path) == before


def test_export_refuses_a_named_damaged_run_and_writes_nothing(damaged, tmp_path, capsys):
    path, ids = damaged
    before = _digest(path)
    out = tmp_path / "runs.json"
    assert main(["export", ids[2], ids[1][:8], "--out", str(out), "--db", str(path)]) == 1
    line = _one_line_error(capsys.readouterr().err)
    assert ids[1][:8] in line and "summary" in line
    assert not out.exists()
    assert _digest(path) == before


def test_import_refuses_damaged_rows_and_imports_the_rest(damaged, tmp_path, capsys):
    source, ids = damaged
    _damage(source, ids[2], summary='{"valid": true, "latency_ms": {"p50": NaN}}')  # what the README forbids
    before = _digest(source)
    target = tmp_path / "here.db"
    assert main(["import", str(source), "--db", str(target)]) == 1
    captured = capsys.readouterr()
    line = _one_line_error(captured.err)
    assert "2 run(s)" in line and ids[1][:8] in line and ids[2][:8] in line and "Fix:" in line
    assert f"refused: run {ids[1][:8]} is damaged" in captured.out and "NaN is not a JSON value" in captured.out
    assert "1 runs added" in captured.out
    assert _digest(source) == before
    with open_reader(target) as store:
        assert [run["run_id"] for run in store.list_runs(include_damaged=True)] == [ids[0]]
        assert store.baselines()[0]["run_id"] == ids[0]
    assert main(["import", str(source), "--json", "--db", str(target)]) == 1  # again: still refused, nothing new
    report = json.loads(capsys.readouterr().out)
    assert report["nothing_new"] is True and [r["run_id"] for r in report["runs_refused"]] == [ids[1], ids[2]]
    assert main(["history", "--db", str(target)]) == 0
    assert "DAMAGED" not in capsys.readouterr().out


def test_an_older_history_with_damaged_rows_is_upgraded_read_and_imported_without_them(tmp_path, capsys):
    """The v4 migration reads every run's JSON to fingerprint it: a damaged row must not stop the upgrade (of the
    file itself, or of import's temporary copy), and stays marked damaged afterwards."""
    runs = [{"summary": _summary(1.0), "latencies": [(t * 10**6, 10**6) for t in range(20)]} for _ in range(2)]
    source = tmp_path / "old.db"
    old_history.make(source, 3, runs)
    conn = sqlite3.connect(source)
    conn.execute("UPDATE runs SET spec = '{\"model\": NaN, ', summary = '[NaN]' WHERE run_id = ?", [runs[1]["run_id"]])
    conn.commit()
    conn.close()
    target = tmp_path / "here.db"
    assert main(["import", str(source), "--json", "--db", str(target)]) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["migrated_copy"] is True and report["runs_added"] == 1
    assert [item["run_id"] for item in report["runs_refused"]] == [runs[1]["run_id"]]
    assert main(["history", "--json", "--db", str(source)]) == 0  # open_reader upgrades the file itself once
    listed = {run["run_id"]: run for run in json.loads(capsys.readouterr().out)["runs"]}
    assert [item["field"] for item in listed[runs[1]["run_id"]]["damaged"]] == ["spec", "summary"]
    assert listed[runs[0]["run_id"]]["damaged"] == [] and listed[runs[0]["run_id"]]["valid"] is True
