"""Sweeps end to end: real worker processes, a real history file, the CLI's output and exit codes."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from console.history import HistoryStore, HistoryWriter
from console.sweep import SweepError, SweepGrid, SweepRun

TINY = {"model": "mlp", "duration_s": 0.3, "warmup_s": 0.1}
QUIET = {"telemetry_hz": None}


def labconsole(*args, db=None, timeout=300):
    env = dict(os.environ)
    env.pop("LABCONSOLE_DB", None)
    command = [sys.executable, "-m", "console", *args] + (["--db", str(db)] if db else [])
    return subprocess.run(command, capture_output=True, text=True, timeout=timeout, env=env)


@pytest.fixture
def writer(tmp_path):
    opened = HistoryWriter.open(tmp_path / "history.db")
    yield opened
    opened.close()


def test_a_failing_point_does_not_lose_the_others(tmp_path, writer):
    """cuda:0 passes spec validation but its worker fails at load on this CPU-only machine."""
    events = []
    record = SweepRun(TINY, SweepGrid.parse(batch="1,2", target="cpu,cuda:0"), writer, on_point=events.append,
                      name="e2e", session_options=QUIET).run()
    assert record["status"] == "partial"
    by_label = {p["label"]: p for p in record["points"]}
    assert list(by_label) == ["cpu · b1", "cpu · b2", "cuda:0 · b1", "cuda:0 · b2"]
    for label in ("cpu · b1", "cpu · b2"):
        point = by_label[label]
        assert point["status"] == "completed" and point["throughput_per_s"] > 0
        assert point["latency_ms"]["p50"] is None or point["latency_ms"]["p50"] > 0
        assert point["iterations"] > 0
    for label in ("cuda:0 · b1", "cuda:0 · b2"):
        assert by_label[label]["status"] == "failed" and "cuda" in by_label[label]["message"].lower()
        assert by_label[label]["throughput_per_s"] is None
    # the knee comes from the completed series only
    assert record["knee_axis"] == "batch" and record["knee"]["series"] == "cpu"
    assert [k["series"] for k in record["knees"]] == ["cpu"]

    kinds = [e["type"] for e in events]
    assert kinds[0] == "sweep_started" and kinds[-1] == "sweep_finished"
    assert kinds.count("point_started") == kinds.count("point_finished") == 4
    assert events[0]["total"] == 4 and events[0]["sweep_id"] == record["sweep_id"]

    writer.flush()
    with HistoryStore(tmp_path / "history.db") as store:
        (sweep,) = store.list_sweeps()
        assert (sweep["sweep_id"], sweep["name"], sweep["status"]) == (record["sweep_id"], "e2e", "partial")
        assert (sweep["runs"], sweep["completed"]) == (4, 2)
        assert sweep["grid"] == {"target": ["cpu", "cuda:0"], "batch": [1, 2]}
        assert sweep["summary"]["knee"]["run_id"] == record["knee"]["run_id"]
        runs = store.runs_of_sweep(record["sweep_id"])
        assert [r["run_id"] for r in runs] == [p["run_id"] for p in record["points"]]
        assert [r["sweep_point"] for r in runs] == [p["point"] for p in record["points"]]
        assert [(r["target"], r["batch"], r["status"]) for r in runs] == [
            ("cpu", 1, "completed"), ("cpu", 2, "completed"), ("cuda:0", 1, "failed"), ("cuda:0", 2, "failed")]
        assert all(r["spec"]["duration_s"] == 0.3 for r in runs)
        assert store.latencies(runs[0]["run_id"])[1].size == record["points"][0]["iterations"]


def test_cancel_stops_after_the_current_point(tmp_path, writer):
    finished = []

    def on_point(event):
        if event["type"] == "point_finished":
            finished.append(event["index"])

    record = SweepRun(TINY, SweepGrid.parse(batch="1,2,4"), writer, on_point=on_point,
                      cancelled=lambda: bool(finished), session_options=QUIET).run()
    assert record["status"] == "cancelled"
    assert [p["status"] for p in record["points"]] == ["completed", "not run", "not run"]
    assert record["points"][1]["run_id"] is None
    writer.flush()
    with HistoryStore(tmp_path / "history.db") as store:
        (sweep,) = store.list_sweeps()
        assert sweep["status"] == "cancelled" and sweep["runs"] == 1
        assert sweep["summary"]["not_run"] == [{"batch": 2}, {"batch": 4}]


def test_nothing_runs_when_the_grid_is_refused(tmp_path, writer):
    with pytest.raises(SweepError, match="--batch: 'x' is not a whole number"):
        SweepRun(TINY, SweepGrid.parse(batch="1,x"), writer)
    with pytest.raises(SweepError, match="no point of the grid can run"):
        SweepRun(TINY, SweepGrid.parse(batch="1,2", target="cuda:0,mps"), writer,
                 targets=[{"id": "cpu", "available": True},
                          {"id": "cuda:0", "available": False, "reason": "no GPU"},
                          {"id": "mps", "available": False, "reason": "not a Mac"}])
    writer.flush()
    with HistoryStore(tmp_path / "history.db") as store:
        assert store.list_sweeps() == [] and store.list_runs() == []


# ---- CLI
@pytest.fixture(scope="module")
def cli_db(tmp_path_factory):
    return tmp_path_factory.mktemp("sweep-cli") / "history.db"


def test_cli_sweep_json(cli_db):
    done = labconsole("sweep", "--model", "mlp", "--batch", "1,2", "--duration", "0.3", "--warmup", "0.1",
                      "--no-telemetry", "--name", "cli-sweep", "--json", db=cli_db)
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert set(doc) >= {"sweep_id", "points", "knee", "knees", "knee_axis", "knee_rule", "skipped", "status"}
    assert doc["status"] == "completed" and len(doc["sweep_id"]) == 32 and doc["name"] == "cli-sweep"
    assert [p["point"] for p in doc["points"]] == [{"batch": 1}, {"batch": 2}]
    for point in doc["points"]:
        assert point["status"] == "completed" and len(point["run_id"]) == 32
        assert set(point["latency_ms"]) >= {"p50", "p99"} and point["throughput_per_s"] > 0
        assert isinstance(point["valid"], bool)
    assert doc["knee"]["axis"] == "batch" and doc["knee"]["value"] in (1, 2)
    assert "[1/2] b1" in done.stderr and "[2/2] b2" in done.stderr  # progress goes to stderr
    history = json.loads(labconsole("history", "--json", db=cli_db).stdout)["runs"]
    assert {p["run_id"] for p in doc["points"]} <= {r["run_id"] for r in history}


def test_cli_sweep_table_and_knee(cli_db):
    done = labconsole("sweep", "--batch", "1,4", "--threads", "1", "--duration", "0.3", "--warmup", "0.1",
                      "--no-telemetry", db=cli_db)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("sweep ") and "completed" in lines[0]
    assert lines[1].split() == ["point", "status", "p50", "ms", "p99", "ms", "samples/s", "run"]
    assert lines[2].split()[:2] == ["b1", "completed"] and lines[3].split()[:2] == ["b4", "completed"]
    assert any(line.strip().startswith("knee at b") for line in lines)


@pytest.mark.parametrize(("args", "words"), [
    (["--batch", "1,x,4"], ["--batch: 'x' is not a whole number (in '1,x,4')"]),
    (["--batch", ""], ["--batch: empty list"]),
    (["--batch", "1,2,2"], ["--batch: 2 appears twice"]),
    (["--batch", "1", "--precision", "fp64"], ["--precision: unknown precision 'fp64'"]),
    (["--threads", "1,two"], ["--threads: 'two' is not a whole number"]),
    ([], ["the grid is empty"]),
    (["--batch", "1,2", "--duration", "-1"], ["--duration: must be a number > 0"]),
    (["--batch", "1", "--model", "nope"], ["--model: unknown value 'nope'"]),
    (["--qps", "10,abc"], ["--qps: 'abc' is not a number"]),
    (["--qps", "10", "--scenario", "single-stream"], ["--qps: request rates"]),
])
def test_cli_bad_input_exits_2_naming_the_value(tmp_path, args, words):
    done = labconsole("sweep", *args, db=tmp_path / "h.db", timeout=120)
    assert done.returncode == 2, (done.stdout, done.stderr)
    for word in words:
        assert word in done.stderr
    assert done.stdout == ""


def test_cli_impossible_points_are_refused_with_each_reason(tmp_path):
    db = tmp_path / "h.db"
    done = labconsole("sweep", "--batch", "1", "--engine", "torch,onnxruntime", "--precision", "fp32,bf16",
                      "--duration", "0.3", "--no-telemetry", db=db)
    assert done.returncode == 2
    assert "1 of 4 points cannot run" in done.stderr
    assert "onnxruntime · bf16 — onnxruntime offers no bf16 on cpu" in done.stderr
    assert "--skip-impossible" in done.stderr
    with HistoryStore(db) as store:
        assert store.list_runs() == [] and store.list_sweeps() == []


def test_stop_now_cancels_the_current_run_too(tmp_path, writer):

    sweep = None

    def on_point(event):
        if event["type"] == "point_started":
            sweep.stop(now=True)

    sweep = SweepRun({**TINY, "duration_s": 30.0}, SweepGrid.parse(batch="1,2"), writer, on_point=on_point,
                     session_options=QUIET)
    record = sweep.run()
    assert record["status"] == "cancelled"
    assert [p["status"] for p in record["points"]] == ["cancelled", "not run"]
    assert record["points"][0]["run_id"] is not None


def test_a_sweep_asks_the_noise_floor_once_per_target_and_every_point_aims_for_it(tmp_path, writer):
    asked = []

    def floor_of(target):
        asked.append(target)
        return {"spread": 0.12, "window_s": 0.25, "quick": True, "source": "quick measurement before the run"}

    base = {**TINY, "scenario_options": {"until_stable": True}}
    record = SweepRun(base, SweepGrid.parse(batch="1,2"), writer, session_options=QUIET, noise_floor=floor_of).run()
    assert asked == ["cpu"] and record["status"] == "completed"
    writer.flush()
    with HistoryStore(tmp_path / "history.db") as store:
        for point in record["points"]:
            run = store.get_run(point["run_id"])
            assert run["spec"]["scenario_options"]["stability_allowance"] == pytest.approx(0.24)
            stability = run["summary"]["validity"]["stability"]
            # judged by the sweep's floor — or, had that floor made the point INVALID, again by the pool with a draw
            # taken right after it (console.run.session), which the stored floor then says
            assert stability["noise"] == pytest.approx(0.12) or stability["noise_floor"]["source"].endswith(
                "the newest taken right after the run (the earlier floor called it invalid)")
