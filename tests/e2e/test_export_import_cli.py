"""export, import and run --spec end to end: real runs in worker processes, real history files, real exit codes."""

import hashlib
import json
import os
import subprocess
import sys

import pytest


def labconsole(*args, db=None, timeout=180):
    env = dict(os.environ)
    env.pop("LABCONSOLE_DB", None)
    command = [sys.executable, "-m", "console", *args] + (["--db", str(db)] if db else [])
    return subprocess.run(command, capture_output=True, text=True, timeout=timeout, env=env)


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    return tmp_path_factory.mktemp("lab-a") / "history.db"


@pytest.fixture(scope="module")
def first_run(db):
    done = labconsole("run", "--model", "mlp", "--param", "layers=2", "--duration", "1", "--warmup", "0.2",
                      "--name", "export-e2e", "--json", db=db)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_export_csv_to_standard_output(db, first_run):
    done = labconsole("export", first_run["run_id"][:8], "--format", "csv", db=db)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "run_id,iteration,t_ns,latency_ms" and len(lines) == first_run["iterations"] + 1
    run_id, iteration, t_ns, latency_ms = lines[1].split(",")
    assert run_id == first_run["run_id"] and iteration == "0" and int(t_ns) > 0
    assert first_run["latency_ms"]["min"] <= float(latency_ms) <= first_run["latency_ms"]["max"]
    summary = labconsole("export", first_run["run_id"], "--summary", db=db)
    assert summary.returncode == 0, summary.stderr
    header, row = summary.stdout.splitlines()
    cells = dict(zip(header.split(","), row.split(","), strict=True))
    assert cells["run_id"] == first_run["run_id"] and int(cells["iterations"]) == first_run["iterations"]
    assert float(cells["p50_ms"]) == pytest.approx(first_run["latency_ms"]["p50"])
    mixed = labconsole("export", first_run["run_id"], "--summary", "--format", "trace", db=db)
    assert mixed.returncode == 2 and "--summary is a csv form" in mixed.stderr and mixed.stdout == ""


def test_export_json_then_run_the_spec_again(db, first_run, tmp_path):
    out = tmp_path / "run.json"
    done = labconsole("export", first_run["run_id"], "--format", "json", "--out", str(out), db=db)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "" and "exported 1 run(s)" in done.stderr
    exported = json.loads(out.read_text())["runs"][0]
    assert exported["spec"]["model_params"] == {"layers": 2} and exported["spec"]["name"] == "export-e2e"
    assert len(exported["latencies"]["latency_ns"]) == first_run["iterations"] and exported["samples"]
    assert "--param layers=2" in exported["reproduce"]["flags_command"]
    again = labconsole("run", "--spec", str(out), "--json", db=db)
    assert again.returncode == 0, again.stderr
    rerun = json.loads(again.stdout)
    assert rerun["status"] == "completed" and rerun["run_id"] != first_run["run_id"]
    assert rerun["name"] == "export-e2e" and rerun["model"] == "mlp"
    stored = json.loads(labconsole("export", rerun["run_id"], "--format", "json", db=db).stdout)["runs"][0]
    assert stored["spec"] == exported["spec"] and stored["fingerprint"] == exported["fingerprint"]


def test_run_spec_refuses_spec_flags_beside_it(db, tmp_path):
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps({"model": "mlp", "duration_s": 1, "warmup_s": 0.2}))
    done = labconsole("run", "--spec", str(spec), "--batch", "4", "--param", "layers=3", db=db)
    assert done.returncode == 2 and "--batch" in done.stderr and "--param" in done.stderr
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"model": "mlp", "batch": 0}))
    done = labconsole("run", "--spec", str(bad), db=db)
    assert done.returncode == 2 and "batch" in done.stderr and str(bad) in done.stderr


def test_export_trace_opens_as_chrome_trace_events(db, first_run, tmp_path):
    out = tmp_path / "run.trace.json"
    done = labconsole("export", first_run["run_id"], "--format", "trace", "--out", str(out), db=db)
    assert done.returncode == 0, done.stderr
    events = json.loads(out.read_text())["traceEvents"]
    assert sum(e["name"] == "iteration" and e["ph"] == "X" for e in events) == first_run["iterations"]
    assert any(e["ph"] == "C" and e["name"] == "cpu.util (%)" for e in events)
    assert {e["name"] for e in events if e.get("cat") == "phase"} >= {"loading", "measuring"}


def test_export_of_an_unknown_run_fails_and_leaves_out_alone(db, first_run, tmp_path):
    out = tmp_path / "kept.csv"
    out.write_text("yesterday's export\n")
    done = labconsole("export", first_run["run_id"], "ffffffff", "--format", "csv", "--out", str(out), db=db)
    assert done.returncode == 2 and "no run 'ffffffff'" in done.stderr
    assert out.read_text() == "yesterday's export\n" and sorted(p.name for p in tmp_path.iterdir()) == ["kept.csv"]
    missing = labconsole("export", "abcd", db=tmp_path / "none.db")
    assert missing.returncode == 1 and "no history" in missing.stderr and not (tmp_path / "none.db").exists()


def test_import_merges_once_and_refuses_what_is_not_a_history(db, first_run, tmp_path):
    lab_b = tmp_path / "lab-b.db"
    digest = hashlib.sha256(db.read_bytes()).hexdigest()
    done = labconsole("import", str(db), "--json", db=lab_b)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["runs_added"] >= 1 and report["conflicts"] == [] and report["nothing_new"] is False
    assert hashlib.sha256(db.read_bytes()).hexdigest() == digest
    again = labconsole("import", str(db), db=lab_b)
    assert again.returncode == 0 and "nothing new" in again.stdout
    listed = json.loads(labconsole("history", "--json", db=lab_b).stdout)["runs"]
    assert first_run["run_id"] in {run["run_id"] for run in listed}
    text = tmp_path / "notes.txt"
    text.write_text("not a history\n")
    refused = labconsole("import", str(text), db=lab_b)
    assert refused.returncode == 1 and "not a Lab Console history" in refused.stderr and "Fix:" in refused.stderr
    assert text.read_text() == "not a history\n"


def test_a_spec_file_never_grants_trust_in_its_models_code(db, tmp_path):
    spec = tmp_path / "colleague.json"
    model = tmp_path / "model.pt"
    model.write_bytes(b"PK\x03\x04 not a real archive")  # never opened: the refusal comes first
    spec.write_text(json.dumps({"model": str(model), "trust_code": True}))
    done = labconsole("run", "--spec", str(spec), db=db)
    assert done.returncode == 2 and "a spec file never grants that: add --trust-code" in done.stderr
    assert "Traceback" not in done.stderr
