"""Sweeps without running anything: grid parsing, expansion and validation, the knee, the history tables."""

from __future__ import annotations

import sqlite3

import pytest

from console import sweep as sweep_module
from console.history import HistoryStore, HistoryWriter, schema
from console.sweep import (
    KNEE_FRACTION,
    SweepError,
    SweepGrid,
    analyse,
    chart_data,
    expand,
    impossible_lines,
    knee_text,
    point_label,
    record_from_history,
    supports_qps,
    sweep_status,
)

# What `labconsole targets` finds on a CPU-only machine (trimmed): ONNX Runtime offers no bf16 on the CPU.
TARGETS = [
    {"id": "cpu", "available": True, "engine_details": {
        "torch": {"available": True, "precisions": ["fp32", "bf16", "fp16", "int8"]},
        "onnxruntime": {"available": True, "precisions": ["fp32", "int8"]}}},
    {"id": "cuda:0", "available": False, "reason": "this PyTorch is a CPU-only build", "engine_details": {}},
    {"id": "mps", "available": False, "reason": "not an Apple-silicon Mac", "engine_details": {}},
]
BASE = {"model": "mlp", "duration_s": 0.3, "warmup_s": 0.1}


# ---- parsing
@pytest.mark.parametrize(("texts", "words"), [
    ({"batch": "1,x,4"}, ["--batch", "'x'", "not a whole number", "'1,x,4'"]),
    ({"batch": ""}, ["--batch", "empty list"]),
    ({"batch": " , "}, ["--batch", "empty list"]),
    ({"batch": "1,,4"}, ["--batch", "empty value"]),
    ({"batch": "1,2,2"}, ["--batch", "2 appears twice"]),
    ({"batch": "0,1"}, ["--batch", "0", "≥ 1"]),
    ({"batch": "1.5"}, ["--batch", "'1.5'", "not a whole number"]),
    ({"threads": "1,-2"}, ["--threads", "-2"]),
    ({"precision": "fp32,fp64"}, ["--precision", "'fp64'", "allowed: fp32, fp16, bf16, int8"]),
    ({"precision": "bf16,bf16"}, ["--precision", "'bf16' appears twice"]),
    ({"engine": "torch,tensorrt"}, ["--engine", "'tensorrt'", "torch, onnxruntime"]),
    ({"qps": "10,fast"}, ["--qps", "'fast'", "not a number"]),
    ({"qps": "0"}, ["--qps", "> 0"]),
    ({}, ["grid is empty", "--batch"]),
    ({"batch": None}, ["grid is empty"]),
])
def test_bad_grids_are_refused_naming_the_option_and_the_value(texts, words):
    with pytest.raises(SweepError) as info:
        SweepGrid.parse(**texts)
    for word in words:
        assert word in str(info.value)


def test_parse_keeps_order_spaces_and_default_threads():
    grid = SweepGrid.parse(batch=" 8, 1 ,2", threads="default,2", precision="fp32, bf16", qps=None)
    assert grid.batch == [8, 1, 2] and grid.threads == [None, 2] and grid.precision == ["fp32", "bf16"]
    assert grid.to_dict() == {"precision": ["fp32", "bf16"], "threads": [None, 2], "batch": [8, 1, 2]}
    assert grid.size == 12 and grid.varying() == ["precision", "threads", "batch"]
    assert SweepGrid.from_dict(grid.to_dict()) == grid
    with pytest.raises(SweepError, match="not a sweep axis"):
        SweepGrid.parse(batchsize="1")


def test_a_grid_too_large_is_refused():
    with pytest.raises(SweepError, match="at most 512"):
        SweepGrid.parse(batch=",".join(str(i) for i in range(1, 101)), threads="1,2,3,4,5,6")


# ---- expansion
def test_expansion_validates_every_point_batch_fastest():
    grid = SweepGrid.parse(batch="1,2,4", threads="1,2")
    expansion = expand(BASE, grid)
    assert expansion.impossible == []
    assert [p["point"] for p in expansion.points] == [
        {"threads": t, "batch": b} for t in (1, 2) for b in (1, 2, 4)]
    assert [p["index"] for p in expansion.points] == list(range(6))
    first = expansion.points[0]
    assert first["label"] == "1 thread · b1" and expansion.points[-1]["label"] == "2 threads · b4"
    assert first["spec"]["batch"] == 1 and first["spec"]["threads"] == 1
    assert first["spec"]["duration_s"] == 0.3 and first["spec"]["model"] == "mlp"
    assert expand(BASE, grid).points == expansion.points  # deterministic
    assert BASE == {"model": "mlp", "duration_s": 0.3, "warmup_s": 0.1}  # the base is not mutated


def test_labels_show_only_the_axes_that_vary():
    grid = SweepGrid.parse(batch="1,2", engine="torch", precision="fp32")
    assert [p["label"] for p in expand(BASE, grid).points] == ["b1", "b2"]
    assert point_label({"batch": 4, "threads": None, "qps": 12.5}) == "default threads · 12.5 qps · b4"


def test_impossible_points_are_listed_with_their_reason_and_skipped():
    grid = SweepGrid.parse(batch="1,2", engine="torch,onnxruntime", precision="fp32,bf16")
    expansion = expand(BASE, grid, targets=TARGETS)
    assert len(expansion.points) == 6
    assert [p["label"] for p in expansion.impossible] == ["onnxruntime · bf16 · b1", "onnxruntime · bf16 · b2"]
    assert all(p["reason"] == "onnxruntime offers no bf16 on cpu (it offers fp32, int8)"
               for p in expansion.impossible)
    assert impossible_lines(expansion.impossible) == [
        "onnxruntime · bf16 · b1, onnxruntime · bf16 · b2 — onnxruntime offers no bf16 on cpu (it offers fp32, int8)"]
    with pytest.raises(SweepError) as info:
        expand(BASE, grid, targets=TARGETS, strict=True)
    assert info.value.headline == "2 of 8 points cannot run" and len(info.value.impossible) == 2
    assert "onnxruntime offers no bf16" in str(info.value)


def test_spec_level_impossibility_is_a_point_reason():
    grid = SweepGrid.parse(batch="1,2", engine="torch,onnxruntime")
    expansion = expand({**BASE, "mode": "training"}, grid)
    assert [p["point"]["engine"] for p in expansion.points] == ["torch", "torch"]
    assert {p["field"] for p in expansion.impossible} == {"mode"}
    assert "training runs need --engine torch" in expansion.impossible[0]["reason"]


def test_a_grid_with_no_possible_point_is_an_error():
    with pytest.raises(SweepError) as info:
        expand(BASE, SweepGrid.parse(batch="1,2", target="cuda:0"), targets=TARGETS)
    assert "cuda:0 is not usable here" in str(info.value) and "CPU-only" in str(info.value)
    assert "(all 2 points)" in str(info.value)
    with pytest.raises(SweepError) as info:
        expand(BASE, SweepGrid.parse(batch="1", target="cuda:0,mps"), targets=TARGETS)
    assert info.value.headline == "no point of the grid can run"
    assert len(impossible_lines(info.value.impossible)) == 2
    with pytest.raises(SweepError) as info:  # a bad base value is named as the spec field
        expand({**BASE, "duration_s": -1}, SweepGrid.parse(batch="1,2"))
    assert info.value.axis == "duration_s" and "must be a number > 0" in str(info.value)


def test_a_value_refused_on_its_own_is_an_error_not_a_skip():
    with pytest.raises(SweepError, match="--target: unknown target 'gpu'"):
        expand(BASE, SweepGrid.parse(batch="1", target="cpu,gpu"))
    with pytest.raises(SweepError, match="--batch: must be a whole number from 1 to 65536"):
        expand(BASE, SweepGrid.parse(batch="1,70000"))


def test_cuda_validates_at_spec_level_without_targets():
    expansion = expand(BASE, SweepGrid.parse(batch="1", target="cpu,cuda:0"))
    assert [p["point"]["target"] for p in expansion.points] == ["cpu", "cuda:0"]


def test_unknown_targets_and_missing_discovery():
    with pytest.raises(SweepError, match="target mps is not on this machine"):
        expand(BASE, SweepGrid.parse(batch="1", target="mps"), targets=TARGETS[:2])
    with pytest.raises(SweepError, match="cuda:1 is not usable here: this PyTorch is a CPU-only build"):
        expand(BASE, SweepGrid.parse(batch="1", target="cuda:1"), targets=TARGETS)
    # discovery failed (no engine details): nothing is refused, the worker decides
    unknown = [{"id": "cpu", "available": True, "engine_details": {}}]
    assert len(expand(BASE, SweepGrid.parse(batch="1", precision="bf16"), targets=unknown).points) == 1


@pytest.mark.skipif(not supports_qps(), reason="this build's RunSpec has no scenario_options yet")
def test_request_rates_set_the_server_scenario_option():
    expansion = expand({**BASE, "scenario": "server"}, SweepGrid.parse(qps="10,20.5"))
    assert [p["spec"]["scenario_options"]["qps"] for p in expansion.points] == [10, 20.5]
    assert [p["label"] for p in expansion.points] == ["10 qps", "20.5 qps"]
    with pytest.raises(SweepError, match="--qps: request rates apply to the server"):
        expand(BASE, SweepGrid.parse(qps="10"))


def test_request_rates_are_refused_when_the_build_has_no_server_scenario(monkeypatch):
    monkeypatch.setattr(sweep_module, "supports_qps", lambda: False)
    with pytest.raises(SweepError, match="--qps: request rates need the server scenario"):
        expand(BASE, SweepGrid.parse(qps="10,20"))


# ---- knee
def _point(index, batch, throughput, p99, threads=1, status="completed", p50=None):
    point = {"threads": threads, "batch": batch}
    return {"index": index, "point": point, "label": point_label(point), "run_id": f"run{index}", "status": status,
            "message": "", "latency_ms": {"p50": p50 if p50 is not None else p99 / 2, "p99": p99},
            "throughput_per_s": throughput if status == "completed" else None, "valid": True}


def _saturating():
    # threads 1: 1000, 1800, 2700, 2800, 2850 → 90% of 2850 = 2565 → knee at b4 (2700)
    # threads 2: 1500, 2900, 4000, 5200, 5300 → 90% of 5300 = 4770 → knee at b8 (5200)
    batches = (1, 2, 4, 8, 16)
    one = [_point(i, b, t, p) for i, (b, t, p) in enumerate(zip(batches, (1000, 1800, 2700, 2800, 2850),
                                                                 (1.0, 1.2, 1.6, 3.0, 6.0), strict=True))]
    two = [_point(5 + i, b, t, p, threads=2) for i, (b, t, p) in enumerate(
        zip(batches, (1500, 2900, 4000, 5200, 5300), (0.8, 0.9, 1.1, 1.5, 3.0), strict=True))]
    return one + two


def test_knee_is_the_smallest_batch_reaching_90_percent_of_the_series_best():
    result = analyse(_saturating(), ["threads", "batch"])
    assert result["knee_axis"] == "batch"
    knees = {k["series"]: k for k in result["knees"]}
    assert set(knees) == {"1 thread", "2 threads"}
    assert knees["1 thread"]["value"] == 4 and knees["2 threads"]["value"] == 8
    assert knees["1 thread"]["fraction_of_max"] == pytest.approx(2700 / 2850)
    assert knees["1 thread"]["fraction_of_max"] >= KNEE_FRACTION
    overall = result["knee"]
    assert overall["series"] == "2 threads" and overall["label"] == "2 threads · b8" and overall["run_id"] == "run8"
    assert overall["beyond"] == "2 threads · b16"
    assert overall["gain_beyond_pct"] == pytest.approx((5300 / 5200 - 1) * 100)
    assert overall["p99_growth_beyond_pct"] == pytest.approx(100.0)
    assert not overall["at_end"]
    text = knee_text(overall)
    assert "knee at 2 threads · b8" in text and "+2%" in text and "p99 by +100%" in text


def test_knee_ignores_failed_points_and_order_of_arrival():
    points = _saturating()[:5]
    points[2] = _point(2, 4, None, 1.0, status="failed")
    shuffled = [points[i] for i in (4, 0, 3, 2, 1)]
    knee = analyse(shuffled, ["batch"])["knee"]
    assert knee["value"] == 8 and knee["series"] == ""  # 2800 ≥ 0.9 × 2850; batch 4 failed


def test_a_curve_still_rising_says_so():
    points = [_point(i, b, t, 1.0) for i, (b, t) in enumerate(((1, 100), (2, 200), (4, 400)))]
    knee = analyse(points, ["batch"])["knee"]
    assert knee["value"] == 4 and knee["at_end"] and knee["beyond"] is None
    assert "still rising" in knee_text(knee)


def test_no_knee_without_a_curve():
    one_each = [_point(0, 1, 100, 1.0, threads=1), _point(1, 1, 150, 1.0, threads=2)]
    assert analyse(one_each, ["threads"])["knee"]["value"] == 2  # threads is the knee axis here
    precision_only = [{**_point(0, 1, 100, 1.0), "point": {"precision": "fp32"}},
                      {**_point(1, 1, 120, 1.0), "point": {"precision": "bf16"}}]
    result = analyse(precision_only, ["precision"])
    assert result == {"knee_axis": None, "knees": [], "knee": None}
    assert "sweep batch" in knee_text(None, None)
    lonely = [_point(0, 1, 100, 1.0), _point(1, 2, None, 1.0, status="failed")]
    assert analyse(lonely, ["batch"])["knee"] is None
    assert "no series has two completed points" in knee_text(None, "batch")


def test_chart_data_is_plain_series_with_the_knee():
    points = _saturating()
    record = {"points": points, "varying": ["threads", "batch"], "base": BASE, **analyse(points, ["threads", "batch"])}
    data = chart_data(record)
    assert data["x_axis"] == "batch" and data["x_label"] == "batch size (samples)"
    assert [s["name"] for s in data["series"]] == ["1 thread", "2 threads"]
    assert [p["x"] for p in data["series"][1]["points"]] == [1, 2, 4, 8, 16]
    assert [p["throughput"] for p in data["series"][1]["points"]] == [1500, 2900, 4000, 5200, 5300]
    assert data["knee"] == {"series": "2 threads", "x": 8, "throughput": 5200, "p50": 0.75, "p99": 1.5,
                            "label": "knee: 2 threads · b8"}


def test_sweep_status():
    done, failed = {"status": "completed"}, {"status": "failed"}
    assert sweep_status([done, done]) == "completed"
    assert sweep_status([done, failed]) == "partial"
    assert sweep_status([failed]) == "failed"
    assert sweep_status([done, {"status": "not run"}], stopped=True) == "cancelled"
    assert sweep_status([done, {"status": "cancelled"}]) == "cancelled"


# ---- history
@pytest.fixture
def store(tmp_path):
    with HistoryStore(tmp_path / "history.db") as opened:
        yield opened


def test_sweeps_round_trip_in_the_store(store):
    grid = {"threads": [1, 2], "batch": [1, 2]}
    first = store.create_sweep("first", grid, base=BASE)
    second = store.create_sweep("", {"batch": [1]})
    runs = []
    for point in ({"threads": 1, "batch": 1}, {"threads": 1, "batch": 2}):
        run_id = store.create_run({**BASE, "batch": point["batch"], "threads": point["threads"]})
        store.tag_run(run_id, first, point)
        runs.append(run_id)
    store.finish_run(runs[0], "completed", summary={"throughput_per_s": 10.0, "latency_ms": {"p50": 1.0}})
    store.finish_run(runs[1], "failed", error="no such device")
    untagged = store.create_run(BASE)
    store.finish_sweep(first, "partial", summary={"knee": None, "impossible": []})

    listed = store.list_sweeps()
    assert [s["sweep_id"] for s in listed] == [second, first]  # newest first
    by_id = {s["sweep_id"]: s for s in listed}
    assert by_id[first]["grid"] == grid and by_id[first]["base"] == BASE and by_id[first]["name"] == "first"
    assert by_id[first]["status"] == "partial" and by_id[first]["ended_at"] >= by_id[first]["created_at"]
    assert (by_id[first]["runs"], by_id[first]["completed"]) == (2, 1)
    assert by_id[second]["status"] == "running" and by_id[second]["runs"] == 0
    assert by_id[first]["summary"] == {"knee": None, "impossible": []}
    assert store.list_sweeps(limit=1)[0]["sweep_id"] == second
    assert store.get_sweep(first[:6])["sweep_id"] == first and store.get_sweep("ffffffff") is None

    tagged = store.runs_of_sweep(first)
    assert [r["run_id"] for r in tagged] == runs
    assert tagged[0]["sweep_point"] == {"threads": 1, "batch": 1} and tagged[0]["sweep_id"] == first
    assert store.get_run(untagged)["sweep_id"] is None and store.get_run(untagged)["sweep_point"] is None
    assert store.runs_of_sweep(second) == []

    record = record_from_history(store.get_sweep(first), tagged)
    assert [p["status"] for p in record["points"]] == ["completed", "failed"]
    assert record["points"][0]["throughput_per_s"] == 10.0 and record["points"][1]["message"] == "no such device"
    assert [p["label"] for p in record["points"]] == ["1 thread · b1", "1 thread · b2"]  # labels from the grid


def test_sweep_writes_are_checked(store):
    with pytest.raises(ValueError, match="status must be one of"):
        store.finish_sweep("x", "done")
    with pytest.raises(Exception, match="no sweep"):
        store.finish_sweep("0" * 32, "completed")
    sweep_id = store.create_sweep("", {"batch": [1]})
    with pytest.raises(Exception, match="already exists"):
        store.create_sweep("", {"batch": [1]}, sweep_id=sweep_id)
    with pytest.raises(Exception, match="no run"):
        store.tag_run("0" * 32, sweep_id, {"batch": 1})


def test_a_running_sweep_becomes_interrupted_at_next_open(tmp_path):
    path = tmp_path / "history.db"
    with HistoryStore(path) as store:
        sweep_id = store.create_sweep("killed", {"batch": [1, 2]})
    with HistoryStore(path) as store:
        assert store.get_sweep(sweep_id)["status"] == "interrupted"


def test_a_version_1_history_gains_the_sweep_tables_and_keeps_its_runs(tmp_path, monkeypatch):
    path = tmp_path / "old.db"
    with monkeypatch.context() as patch:
        patch.setattr(schema, "MIGRATIONS", schema.MIGRATIONS[:1])
        patch.setattr(schema, "LATEST_VERSION", 1)
        with HistoryStore(path) as old:
            run_id = old.create_run(BASE)
            old.finish_run(run_id, "completed", summary={"throughput_per_s": 5.0})
            assert "sweeps" not in old.db.table_names()
    with HistoryStore(path) as store:
        versions = [v for (v,) in store.db.execute("SELECT version FROM schema_version ORDER BY version")]
        assert versions == list(range(1, schema.LATEST_VERSION + 1))
        run = store.get_run(run_id)
        assert run["status"] == "completed" and run["summary"] == {"throughput_per_s": 5.0}
        assert run["sweep_id"] is None and run["sweep_point"] is None
        assert store.list_sweeps() == []
    conn = sqlite3.connect(path)
    try:
        indexes = {name for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type='index'")}
        assert {"idx_runs_sweep_id", "idx_sweeps_created_at"} <= indexes
    finally:
        conn.close()


def test_the_writer_records_sweeps_on_its_thread(tmp_path):
    path = tmp_path / "history.db"
    writer = HistoryWriter.open(path)
    try:
        sweep_id = writer.create_sweep("w", {"batch": [1, 2]}, base=BASE)
        run_id = writer.create_run({**BASE, "batch": 2})
        writer.tag_run(run_id, sweep_id, {"batch": 2})
        writer.finish_run(run_id, "completed", summary={"throughput_per_s": 3.0})
        writer.finish_sweep(sweep_id, "completed", summary={"knee": None})
        with pytest.raises(ValueError):
            writer.finish_sweep(sweep_id, "finished")
        assert writer.flush()
    finally:
        assert writer.close()
    with HistoryStore(path) as store:
        (sweep,) = store.list_sweeps()
        assert (sweep["sweep_id"], sweep["status"], sweep["runs"], sweep["completed"]) == (sweep_id, "completed", 1, 1)
        assert store.runs_of_sweep(sweep_id)[0]["sweep_point"] == {"batch": 2}
