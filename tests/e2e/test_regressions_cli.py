"""Baselines, regressions and compare --fail-on from the command line, on real runs and a stored series."""

from __future__ import annotations

import json

import numpy as np
import pytest
from test_cli import labconsole

from console.history import HistoryStore

SPEC = {"model": "mlp", "engine": "torch", "target": "cpu", "batch": 1, "scenario": "single-stream"}


@pytest.fixture(scope="module")
def real_db(tmp_path_factory):
    db = tmp_path_factory.mktemp("baseline") / "history.db"
    first = labconsole("run", "--model", "mlp", "--duration", "2.5", "--warmup", "0.2", "--json", db=db)
    assert first.returncode == 0, first.stderr
    return db, json.loads(first.stdout)


def test_a_run_is_compared_with_its_configurations_baseline(real_db):
    db, first = real_db
    assert first["baseline"] is None  # nothing set yet
    if not first["valid"]:
        pytest.skip("the first run was not valid on this busy machine, so it cannot be a baseline")
    done = labconsole("baseline", "set", first["run_id"][:8], "--json", db=db)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["run_id"] == first["run_id"]
    second = labconsole("run", "--model", "mlp", "--duration", "1", "--warmup", "0.2", "--json", db=db)
    block = json.loads(second.stdout)["baseline"]
    assert block["run_id"] == first["run_id"] and block["verdict"] in ("faster", "slower", "equivalent", "undecided")
    assert block["ci95"][0] <= block["ratio"] <= block["ci95"][1] and 0 <= block["p_value"] <= 1
    text = labconsole("run", "--model", "mlp", "--duration", "1", "--warmup", "0.2", db=db)
    assert "vs baseline" in text.stdout and first["run_id"][:8] in text.stdout
    other = labconsole("run", "--model", "mlp", "--batch", "2", "--iterations", "20", "--warmup", "0", "--json", db=db)
    assert json.loads(other.stdout)["baseline"] is None  # another configuration: its own baseline (none)
    shown = json.loads(labconsole("baseline", "show", "--json", db=db).stdout)["baselines"]
    assert [row["run_id"] for row in shown] == [first["run_id"]]


def test_a_failed_or_invalid_run_cannot_be_a_baseline(real_db):
    db, _ = real_db
    short = json.loads(labconsole("run", "--model", "mlp", "--iterations", "3", "--warmup", "0", "--json",
                                  db=db).stdout)
    assert short["valid"] is False
    done = labconsole("baseline", "set", short["run_id"], db=db)
    assert done.returncode == 1 and "not a valid measurement" in done.stderr and "Fix" in done.stderr
    assert labconsole("baseline", "set", "nosuchrun", db=db).returncode == 2


def _stored_series(db, medians):
    with HistoryStore(db) as store:
        ids = []
        for median in medians:
            run_id = store.create_run(SPEC)
            latency = (np.random.default_rng(len(ids)).lognormal(0, 0.02, 300) * median * 1e6).astype(np.int64)
            store.add_latencies(run_id, np.cumsum(latency), latency)
            store.finish_run(run_id, "completed", summary={"valid": True, "latency_ms": {"p50": float(median)}})
            ids.append(run_id)
    return ids


def test_regressions_exit_1_when_a_step_is_found(tmp_path):
    db = tmp_path / "h.db"
    medians = 2.0 * np.random.default_rng(1).lognormal(0, 0.02, 20)
    ids = _stored_series(db, list(medians[:10]) + list(medians[10:] * 1.2))
    done = labconsole("regressions", "--json", db=db)
    assert done.returncode == 1, done.stderr
    [item] = json.loads(done.stdout)["findings"]
    assert item["first_bad_run"] == ids[10] and item["last_good_run"] == ids[9]
    assert {"configuration", "before", "after", "ratio", "ci95", "p_value"} <= set(item)
    assert labconsole("regressions", "--threshold", "30%", db=db).returncode == 0
    assert labconsole("regressions", "--since", "2999-01-01", db=db).returncode == 0
    assert labconsole("regressions", "--threshold", "5 percent", db=db).returncode == 2
    assert "SLOWER" in labconsole("regressions", db=db).stdout

    slower = labconsole("compare", ids[0], ids[15], "--fail-on", "slower", "--json", db=db)
    assert slower.returncode == 1 and json.loads(slower.stdout)["verdict"] == "slower"
    assert labconsole("compare", ids[0], ids[15], "--fail-on", "faster", db=db).returncode == 0
    assert labconsole("compare", ids[0], ids[15], db=db).returncode == 0


def test_compare_lists_what_differs_between_configurations(real_db):
    db, first = real_db
    other = json.loads(labconsole("run", "--model", "mlp", "--batch", "4", "--iterations", "20", "--warmup", "0",
                                  "--json", db=db).stdout)
    done = labconsole("compare", first["run_id"], other["run_id"], "--json", db=db)
    report = json.loads(done.stdout)
    assert report["same_configuration"] is False
    assert {"field": "batch", "a": 1, "b": 4, "kind": "configuration"} in report["differences"]
    text = labconsole("compare", first["run_id"], other["run_id"], db=db).stdout
    assert "different configurations (allowed" in text and "batch: 1 → 4" in text
