"""Every `--json` document names its schema ("labconsole.<document>/<version>", console.cli.schema), and
`compare`/`regressions` exit 1 only for a slow-down found, 3 when they cannot judge.

Each command that prints a JSON document is run here for real (in this process, `console.cli.main`) on a small
history: real runs for run/analyze/sweep, a stored series for the history readers. node and cluster need a Ray
cluster (tests/e2e/test_cluster.py runs them); for them the table is checked.
"""

from __future__ import annotations

import json
import re
import shutil
import socket

import numpy as np
import pytest

from console.cli import COMMANDS, main
from console.cli.schema import NO_DOCUMENT, SCHEMAS, stamp
from console.history import HistoryStore, HistoryWriter

SCHEMA = re.compile(r"^labconsole\.[a-z][a-z.-]*/[1-9][0-9]*$")
SPEC = {"model": "mlp", "engine": "torch", "target": "cpu", "batch": 1, "scenario": "single-stream"}
QUICK = ["--model", "mlp", "--iterations", "30", "--warmup", "0", "--no-telemetry"]
DEMO = {"title": "t", "loop": False, "hold_s": 2, "defaults": {"model": "mlp", "duration_s": 0.5, "warmup_s": 0.1},
        "items": [{"name": "one", "run": {"batch": 1}}]}


def _card() -> dict:
    return {"target": "cpu", "host": socket.gethostname(), "measured_at": "2026-11-30T00:00:00Z",
            "peak_flops": {"fp32": 50e9}, "memory_bandwidth_gbs": 10.0,
            "call_floor_us": {"torch": 20.0, "onnxruntime": 20.0}, "llc_bytes": 8 << 20, "threads": 2}


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """A history with a card for this host and a stored series of 20 runs (a 20% step at run 10)."""
    folder = tmp_path_factory.mktemp("schema")
    db = folder / "history.db"
    writer = HistoryWriter.open(db)
    writer.add_machine_card(_card())
    assert writer.close()
    medians = 2.0 * np.random.default_rng(1).lognormal(0, 0.02, 20)
    medians[10:] *= 1.2
    ids = []
    with HistoryStore(db) as store:
        for median in medians:
            run_id = store.create_run(SPEC)
            latency = (np.random.default_rng(len(ids)).lognormal(0, 0.02, 300) * median * 1e6).astype(np.int64)
            store.add_latencies(run_id, np.cumsum(latency), latency)
            store.finish_run(run_id, "completed", summary={"valid": True, "latency_ms": {"p50": float(median)}})
            ids.append(run_id)
    playlist = folder / "demo.json"
    playlist.write_text(json.dumps(DEMO))
    return {"db": db, "ids": ids, "folder": folder, "playlist": playlist}


def _document(capsys, argv: list[str], codes=(0,)) -> dict:
    code = main(argv)
    out = capsys.readouterr().out
    assert code in codes, (argv, code)
    document = json.loads(out)
    assert isinstance(document, dict), argv
    assert next(iter(document)) == "schema" and SCHEMA.match(document["schema"]), (argv, document.get("schema"))
    return document


def test_every_command_with_a_json_document_is_in_the_table():
    names = {command.NAME for command in COMMANDS}
    assert names - set(NO_DOCUMENT) <= set(SCHEMAS), names - set(NO_DOCUMENT) - set(SCHEMAS)
    assert all(SCHEMA.match(schema) for schema in SCHEMAS.values())
    assert stamp({"a": 1}, "run") == {"schema": "labconsole.run/1", "a": 1}
    assert list(stamp({"a": 1, "schema": "labconsole.doctor/1"}, "doctor")) == ["schema", "a"]
    assert stamp([1, 2], "history") == {"schema": "labconsole.history/1", "data": [1, 2]}  # never a bare list


def test_the_history_readers_name_their_schema(lab, capsys):
    db, ids = str(lab["db"]), lab["ids"]
    listed = _document(capsys, ["history", "--json", "--db", db])
    assert listed["schema"] == "labconsole.history/1" and len(listed["runs"]) == 20
    found = _document(capsys, ["regressions", "--json", "--db", db], codes=(1,))  # the step at run 10: slower
    assert found["schema"] == "labconsole.regressions/1" and found["judged"] is True
    assert found["findings"][0]["first_bad_run"] == ids[10]
    compared = _document(capsys, ["compare", ids[0], ids[15], "--json", "--db", db])
    assert compared["schema"] == "labconsole.compare/1" and compared["verdict"] == "slower"
    shown = _document(capsys, ["baseline", "show", "--json", "--db", db])
    assert shown == {"schema": "labconsole.baselines/1", "baselines": []}
    one = _document(capsys, ["baseline", "show", ids[0], "--json", "--db", db])
    assert one["schema"] == "labconsole.baseline/1" and one["run_id"] is None  # no baseline set
    card = _document(capsys, ["machine", "--json", "--db", db])
    assert card["schema"] == "labconsole.machine/1" and card["peak_flops"]["fp32"] == 50e9
    copy = lab["folder"] / "copy.db"
    shutil.copyfile(lab["db"], copy)
    imported = _document(capsys, ["import", str(copy), "--json", "--db", db])
    assert imported["schema"] == "labconsole.import/1"


def test_the_commands_without_a_history_name_their_schema(lab, capsys):
    folder = lab["folder"]
    for argv, schema in (
            (["models", "--json"], "labconsole.models/1"),
            (["targets", "--json"], "labconsole.targets/1"),
            (["telemetry", "--seconds", "0.3", "--json"], "labconsole.telemetry/1"),
            (["make-data", "--dir", str(folder / "data"), "--model", "mlp", "--count", "2", "--json"],
             "labconsole.make-data/1"),
            (["doctor", "--sample", "0.2", "--json"], "labconsole.doctor/1"),
            (["rules", "show", "--json"], "labconsole.rules/1"),
            (["demo", str(lab["playlist"]), "--check", "--json"], "labconsole.demo-check/1")):
        document = _document(capsys, argv)
        assert document["schema"] == schema, argv
    assert "mlp" in {m["name"] for m in _document(capsys, ["models", "--json"])["models"]}
    assert any(t["id"] == "cpu" for t in _document(capsys, ["targets", "--json"])["targets"])


def test_run_analyze_sweep_and_whatif_name_their_schema(lab, capsys):
    db = str(lab["db"])
    run = _document(capsys, ["run", *QUICK, "--json", "--db", db])
    assert run["schema"] == "labconsole.run/1" and run["status"] == "completed"
    analysed = _document(capsys, ["analyze", *QUICK, "--json", "--db", db])
    assert analysed["schema"] == "labconsole.analyze/1" and analysed["run_id"]
    swept = _document(capsys, ["sweep", "--model", "mlp", "--batch", "1", "--iterations", "20", "--warmup", "0",
                               "--no-telemetry", "--json", "--db", db])
    assert swept["schema"] == "labconsole.sweep/1" and swept["points"]
    projected = _document(capsys, ["whatif", analysed["run_id"][:8], "--threads", "2", "--json", "--db", db])
    assert projected["schema"] == "labconsole.whatif/1"


def test_compare_and_regressions_exit_3_when_they_cannot_judge(lab, tmp_path, capsys):
    db, ids = str(lab["db"]), lab["ids"]
    assert main(["compare", "deadbeef", ids[0], "--fail-on", "slower", "--db", db]) == 3
    assert "cannot judge" in capsys.readouterr().err
    assert main(["compare", ids[0], ids[1], "--db", str(tmp_path / "none.db")]) == 3
    assert main(["regressions", "--db", str(tmp_path / "none.db")]) == 3
    assert "no history at" in capsys.readouterr().err
    assert main(["regressions", "--json", "--db", str(tmp_path / "none.db")]) == 3
    document = json.loads(capsys.readouterr().out)
    assert document["schema"] == "labconsole.regressions/1" and document["judged"] is False and document["reason"]
    not_a_db = tmp_path / "notes.db"
    not_a_db.write_text("not a history\n")
    assert main(["regressions", "--db", str(not_a_db)]) == 3
    assert main(["compare", ids[0], ids[1], "--fail-on", "slower", "--db", str(not_a_db)]) == 3
    assert main(["regressions", "--threshold", "5 percent", "--db", db]) == 2  # a usage error stays 2
    assert main(["compare", ids[0], ids[15], "--fail-on", "faster", "--db", db]) == 0
    assert main(["compare", ids[0], ids[15], "--fail-on", "slower", "--db", db]) == 1
