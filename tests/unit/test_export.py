"""Exports (console.report.export) and the reproduce command (console.spec.reproduce): csv rows per iteration, strict json a
spec can be read back from, a Chrome trace a viewer accepts, streamed chunk by chunk; flags that rebuild the spec."""

from __future__ import annotations

import csv
import io
import json
import math
import shlex

import numpy as np
import pytest

from console.cli import build_parser
from console.cli.common import spec_values
from console.history import HistoryStore
from console.history.v4_upgrade import CHUNK_MAX
from console.report.export import CSV_HEADER, EXPORT_FORMAT, SUMMARY_COLUMNS, export_runs
from console.spec.build import build_spec
from console.spec.reproduce import SpecFileError, load_spec, reproduce_command
from engines.spec import RunSpec, spec_fields

T0 = 5_000_000_000  # the session's start on the monotonic clock (summary["t0_ns"])
SPEC = RunSpec(model="mlp", duration_s=1.0, warmup_s=0.2, model_params={"layers": 2}).to_dict()


@pytest.fixture
def store(tmp_path):
    with HistoryStore(tmp_path / "history.db") as opened:
        yield opened


def _run(store, starts, durations, summary=None, samples=(), spec=SPEC):
    run_id = store.create_run(spec)
    store.add_latencies(run_id, np.asarray(starts, dtype=np.int64), np.asarray(durations, dtype=np.int64))
    store.add_samples(run_id, samples)
    store.finish_run(run_id, "completed", summary={"t0_ns": T0, "valid": True, **(summary or {})})
    return store.get_run(run_id)


def _export(store, runs, fmt, summary=False):
    out = io.StringIO()
    counts = export_runs(store, runs, fmt, out, summary=summary)
    return out.getvalue(), counts


def _strict_json(text):
    def refuse(name):
        raise AssertionError(f"non-standard JSON constant {name}")

    return json.loads(text, parse_constant=refuse)


def _check_trace(doc):
    """What Perfetto's and chrome://tracing's JSON importers need: the object form, known phases with their
    fields, numbers for counters, and complete events on one track that do not partly overlap."""
    assert isinstance(doc["traceEvents"], list)
    tracks: dict[tuple[int, int], list[tuple[float, float]]] = {}
    for event in doc["traceEvents"]:
        assert event["ph"] in ("X", "C", "M") and isinstance(event["pid"], int) and isinstance(event["name"], str)
        if event["ph"] == "X":
            assert event["dur"] >= 0 and isinstance(event["tid"], int) and math.isfinite(event["ts"])
            tracks.setdefault((event["pid"], event["tid"]), []).append((event["ts"], event["ts"] + event["dur"]))
        elif event["ph"] == "C":
            assert math.isfinite(event["ts"]) and all(math.isfinite(v) for v in event["args"].values())
        else:
            assert event["name"] in ("process_name", "process_sort_index", "thread_name")
    for spans in tracks.values():
        spans.sort()
        for (_, end), (start, stop) in zip(spans, spans[1:], strict=False):
            assert start >= end or stop <= end, "complete events on one track must nest or follow each other"
    return doc


# ---- csv
def test_csv_has_one_row_per_iteration_with_time_from_the_run_start(store):
    a = _run(store, [T0 + 1_000_000, T0 + 3_000_000], [1_500_000, 2_250_001])
    b = _run(store, [T0 + 10], [7])
    text, counts = _export(store, [a, b], "csv")
    assert text.splitlines() == [
        CSV_HEADER.strip(),
        f"{a['run_id']},0,1000000,1.500000",
        f"{a['run_id']},1,3000000,2.250001",
        f"{b['run_id']},0,10,0.000007",
    ]
    assert counts == {"runs": 2, "iterations": 3, "samples": 0}


def test_summary_csv_has_one_row_per_run_with_the_history_figures(store):
    a = _run(store, [T0 + 1, T0 + 2], [1_000_000, 3_000_000],
             summary={"iterations": 2, "latency_ms": {"p50": 2.0, "p99": 2.98, "mean": 2.0},
                      "throughput_per_s": float("nan"), "energy": {"joules_per_inference": 0.5, "method": "measured"}})
    b = _run(store, [], [], summary={"valid": False}, spec={**SPEC, "name": 'a, "quoted" name'})
    store.set_tags(a["run_id"], ["nightly", "driver 550"])
    runs = [store.get_run(a["run_id"]), store.get_run(b["run_id"])]
    text, counts = _export(store, runs, "csv", summary=True)
    rows = list(csv.DictReader(io.StringIO(text)))
    assert list(rows[0]) == list(SUMMARY_COLUMNS) and len(rows) == 2
    assert rows[0]["run_id"] == a["run_id"] and rows[0]["iterations"] == "2" and rows[0]["valid"] == "1"
    assert (rows[0]["p50_ms"], rows[0]["p99_ms"], rows[0]["mean_ms"]) == ("2.0", "2.98", "2.0")
    assert rows[0]["throughput_per_s"] == "" and rows[0]["tags"] == "nightly;driver 550"
    assert rows[0]["energy_j_per_inference"] == "0.5" and rows[0]["energy_method"] == "measured"
    assert rows[0]["hostname"] == store.hostname and rows[0]["fingerprint"] == a["fingerprint"]
    assert rows[1]["name"] == 'a, "quoted" name' and rows[1]["valid"] == "0" and rows[1]["p50_ms"] == ""
    assert counts == {"runs": 2, "iterations": 2, "samples": 0}
    with pytest.raises(ValueError, match="summary form is a csv"):
        export_runs(store, runs, "json", io.StringIO(), summary=True)


def test_without_a_stored_start_time_starts_at_the_first_timestamp(store):
    run_id = store.create_run(SPEC)
    store.add_latencies(run_id, [2_000_000, 3_000_000], [10, 20])
    store.add_samples(run_id, [(1_000_000, "psutil", "cpu.util", 5.0, "%", "measured")])
    store.finish_run(run_id, "completed", summary={"valid": True})
    text, _ = _export(store, [store.get_run(run_id)], "csv")
    assert [line.split(",")[2] for line in text.splitlines()[1:]] == ["1000000", "2000000"]


# ---- json
def test_json_holds_the_whole_run_as_strict_json(store):
    samples = [(T0 + 500, "psutil", "cpu.util", 42.0, "%", "measured"),
               (T0 + 900, "nvml", "gpu.power", float("nan"), "W", "measured")]
    run = _run(store, [T0 + 1000, T0 + 5000], [3000, 4000], summary={"cv": float("nan"), "iterations": 2},
               samples=samples)
    store.set_tags(run["run_id"], ["nightly"])
    store.set_note(run["run_id"], "after the driver update")
    store.add_ops(run["run_id"], [{"op": "aten::addmm", "calls": 2, "time_s": 0.5}])
    text, counts = _export(store, [store.get_run(run["run_id"])], "json")
    doc = _strict_json(text)
    assert doc["format"] == EXPORT_FORMAT and counts == {"runs": 1, "iterations": 2, "samples": 2}
    (out,) = doc["runs"]
    assert out["run_id"] == run["run_id"] and out["spec"] == SPEC and out["status"] == "completed"
    assert out["summary"]["cv"] is None and out["summary"]["iterations"] == 2
    assert out["tags"] == ["nightly"] and out["note"] == "after the driver update"
    assert out["configuration"] == run["configuration"] and out["fingerprint"] == run["fingerprint"]
    assert out["t0_ns"] == T0 and out["hostname"] == store.hostname and "environment" in out
    assert out["latencies"] == {"t_ns": [1000, 5000], "latency_ns": [3000, 4000]}
    assert out["samples"][0] == {"t_ns": 500, "source": "psutil", "metric": "cpu.util", "value": 42.0, "unit": "%",
                                 "method": "measured"}
    assert out["samples"][1]["value"] is None
    assert out["ops"][0]["op"] == "aten::addmm"
    assert out["reproduce"]["spec_command"] == f"labconsole run --spec run-{run['run_id'][:8]}.json"
    assert out["reproduce"]["exact"] is True


def test_an_exported_run_is_a_spec_file_for_run_again(store, tmp_path):
    run = _run(store, [T0 + 1], [2])
    text, _ = _export(store, [run], "json")
    (tmp_path / "run.json").write_text(text)
    assert load_spec(tmp_path / "run.json").to_dict() == RunSpec.from_dict(SPEC).to_dict()
    (tmp_path / "spec.json").write_text(json.dumps(SPEC))
    assert load_spec(tmp_path / "spec.json").to_dict() == RunSpec.from_dict(SPEC).to_dict()


def test_json_of_no_telemetry_and_no_iterations_is_still_valid(store):
    run = _run(store, [], [])
    doc = _strict_json(_export(store, [run], "json")[0])
    assert doc["runs"][0]["latencies"] == {"t_ns": [], "latency_ns": []} and doc["runs"][0]["samples"] == []


# ---- trace
def test_trace_has_an_event_per_iteration_counters_per_metric_and_phases(store):
    phases = [["loading", T0], ["warmup", T0 + 1_000_000], ["measuring", T0 + 2_000_000]]
    samples = [(T0 + 2_000_000, "psutil", "cpu.util", 40.0, "%", "measured"),
               (T0 + 2_100_000, "psutil", "cpu.util", 60.0, "%", "measured"),
               (T0 + 2_100_000, "psutil", "mem.used", 1e9, "B", "measured"),
               (T0 + 2_200_000, "nvml", "gpu.power", float("nan"), "W", "measured")]
    run = _run(store, [T0 + 2_000_000, T0 + 2_500_000], [400_000, 450_500], samples=samples,
               summary={"phases": phases, "t_end_ns": T0 + 3_000_000})
    text, counts = _export(store, [run], "trace")
    doc = _check_trace(_strict_json(text))
    events = doc["traceEvents"]
    iterations = [e for e in events if e["name"] == "iteration"]
    assert [(e["ts"], e["dur"], e["args"]["i"]) for e in iterations] == [(2000.0, 400.0, 0), (2500.0, 450.5, 1)]
    counters = [(e["name"], e["ts"], e["args"]["value"]) for e in events if e["ph"] == "C"]
    assert counters == [("cpu.util (%)", 2000.0, 40.0), ("cpu.util (%)", 2100.0, 60.0), ("mem.used (B)", 2100.0, 1e9)]
    spans = [(e["name"], e["ts"], e["dur"]) for e in events if e.get("cat") == "phase"]
    assert spans == [("loading", 0.0, 1000.0), ("warmup", 1000.0, 1000.0), ("measuring", 2000.0, 1000.0)]
    names = {e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "thread_name"}
    assert names == {"latency", "phases"}
    assert counts == {"runs": 1, "iterations": 2, "samples": 3}
    assert doc["otherData"]["runs"] == [run["run_id"]]


def test_overlapping_iterations_are_put_on_lanes_that_do_not_overlap(store):
    # a server scenario: queries in flight at once (each 3 ms, a new one every 1 ms)
    starts = T0 + np.arange(50) * 1_000_000
    run = _run(store, starts, np.full(50, 3_000_000))
    single = _run(store, T0 + np.arange(10) * 1_000_000, np.full(10, 900_000))
    doc = _check_trace(_strict_json(_export(store, [run, single], "trace")[0]))
    lanes = {(e["pid"], e["tid"]) for e in doc["traceEvents"] if e["name"] == "iteration"}
    assert {tid for pid, tid in lanes if pid == 1} == {1, 2, 3}  # three queries in flight at most
    assert {tid for pid, tid in lanes if pid == 2} == {1}
    processes = [e["args"]["name"] for e in doc["traceEvents"] if e["name"] == "process_name"]
    assert processes[0].startswith(f"run {run['run_id'][:8]}") and len(processes) == 2


# ---- streaming
class _Recorder(io.StringIO):
    def __init__(self):
        super().__init__()
        self.sizes = []

    def write(self, text):
        self.sizes.append(len(text))
        return super().write(text)


@pytest.mark.parametrize("fmt", ["csv", "json", "trace"])
def test_a_long_run_is_written_chunk_by_chunk(store, fmt):
    n = 3 * CHUNK_MAX + 1000
    run = _run(store, T0 + np.arange(n) * 1000, np.full(n, 900) + np.arange(n) % 7)
    out = _Recorder()
    counts = export_runs(store, [run], fmt, out)
    assert counts["iterations"] == n
    total = sum(out.sizes)
    assert max(out.sizes) < total / 2  # never the whole run in one string
    if fmt != "csv":
        doc = _strict_json(out.getvalue())
        if fmt == "json":
            assert len(doc["runs"][0]["latencies"]["latency_ns"]) == n
        else:
            assert sum(e["name"] == "iteration" for e in _check_trace(doc)["traceEvents"]) == n
    else:
        assert len(out.getvalue().splitlines()) == n + 1


def test_an_unknown_format_is_refused(store):
    with pytest.raises(ValueError, match="csv, json, trace"):
        export_runs(store, [], "xlsx", io.StringIO())


# ---- reproduce
SPECS = {
    "catalog model with a size": {"model": "mlp", "duration_s": 1.0, "warmup_s": 0.2, "model_params": ["layers=2"]},
    "server scenario, engine flags": {"model": "mlp", "scenario": "server", "scenario_options.qps": 100.0,
                                      "threads": 2, "iterations": 50, "torch.channels_last": True, "name": "a b"},
    "onnxruntime, shapes and values": {"model": "MODEL_FILE", "engine": "onnxruntime", "inputs": ["x=1x16"],
                                       "input_values": ["rate=16000"], "onnxruntime.graph_optimization": "basic",
                                       "onnxruntime.provider_options": ["a=1"], "batch": 4},
}


@pytest.mark.parametrize("case", list(SPECS))
def test_the_flags_command_rebuilds_the_stored_spec(case, tmp_path):
    values = dict(SPECS[case])
    if values["model"] == "MODEL_FILE":  # input shapes and values apply to model files only
        (tmp_path / "model.onnx").write_bytes(b"x")
        values["model"] = str(tmp_path / "model.onnx")
    stored = build_spec(values).to_dict()
    found = reproduce_command({"run_id": "ab" * 16, "spec": stored})
    assert found["exact"] is True and found["not_expressible"] == []
    words = shlex.split(found["flags_command"])
    assert words[:2] == ["labconsole", "run"]
    args = build_parser().parse_args(words[1:])
    assert build_spec(spec_values(args, spec_fields())).to_dict() == stored
    assert found["spec_command"] == "labconsole run --spec run-abababab.json"
    assert found["export_command"] == f"labconsole export {'ab' * 16} --format json --out run-abababab.json"


def test_a_spec_this_build_cannot_read_has_no_flags_command():
    found = reproduce_command({"run_id": "cd" * 16, "spec": {**SPEC, "turbo": True}})
    assert found["flags_command"] is None and found["exact"] is False
    assert "turbo" in found["not_expressible"][0]


@pytest.mark.parametrize("content, message", [
    ("{not json", "not JSON"),
    ("[1, 2]", "expected a JSON object"),
    (json.dumps({"runs": [{"run_id": "a", "spec": SPEC}, {"run_id": "b", "spec": SPEC}]}), "holds 2 exported runs"),
    (json.dumps({**SPEC, "batch": 0}), "spec field batch"),
    (json.dumps({**SPEC, "turbo": True}), "spec field turbo"),
])
def test_a_bad_spec_file_is_refused_with_the_reason(tmp_path, content, message):
    path = tmp_path / "spec.json"
    path.write_text(content)
    with pytest.raises(SpecFileError, match=message) as caught:
        load_spec(path)
    assert str(path) in str(caught.value)


def test_a_missing_spec_file_is_named():
    with pytest.raises(SpecFileError, match="cannot read it"):
        load_spec("/nonexistent/spec.json")
