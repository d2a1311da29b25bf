"""`labconsole run --ranks 2` end to end on this machine: the console (a real `python -m console` process) spawns
a worker that is not daemonic, the worker starts two gloo ranks as processes, the run is measured, stored,
listed by `history` and compared like any run. A rank killed mid-run (LABCONSOLE_TEST_DDP_DIE, read by the rank,
inherited through the worker) ends the run failed, exit 1, with the rank named."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

SHORT = ["--mode", "training", "--model", "mlp", "--batch", "4", "--threads", "1", "--warmup", "0"]


def labconsole(*args, db, env=None, timeout=240):
    environ = {k: v for k, v in os.environ.items() if k not in ("LABCONSOLE_DB", "LABCONSOLE_TEST_DDP_DIE")}
    command = [sys.executable, "-m", "console", *args, "--db", str(db)]
    return subprocess.run(command, capture_output=True, text=True, timeout=timeout, env={**environ, **(env or {})})


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    return tmp_path_factory.mktemp("ddp") / "history.db"


@pytest.fixture(scope="module")
def two_ranks(db):
    done = labconsole("run", *SHORT, "--ranks", "2", "--iterations", "15", "--name", "ddp-e2e", "--json", db=db)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_two_local_ranks_are_measured_and_stored(two_ranks):
    r = two_ranks
    assert r["status"] == "completed" and r["mode"] == "training" and r["iterations"] == 15
    ddp = r["scenario"]["ddp"]
    assert ddp["ranks"] == 2 and ddp["backend"] == "gloo" and ddp["placement"] == "local"
    assert ddp["global_batch"] == 4 and ddp["per_rank_batch"] == 2
    outs = ddp["ranks_out"]
    assert [o["rank"] for o in outs] == [0, 1] and len({o["pid"] for o in outs}) == 2
    assert all(len(o["steps"]["step_s"]) == 15 for o in outs)
    assert r["latency_ms"]["min"] > 0 and r["throughput_per_s"] > 0


def test_history_and_compare_take_the_ddp_run(db, two_ranks):
    listed = labconsole("history", "--json", db=db)
    assert listed.returncode == 0, listed.stderr
    assert two_ranks["run_id"] in [run["run_id"] for run in json.loads(listed.stdout)["runs"]]
    single = labconsole("run", *SHORT, "--iterations", "15", "--json", db=db)  # the same training, one process
    assert single.returncode == 0, single.stderr
    compared = labconsole("compare", json.loads(single.stdout)["run_id"], two_ranks["run_id"], "--json", db=db)
    assert compared.returncode in (0, 1), compared.stderr  # 1: one of them is slower, a verdict all the same
    result = json.loads(compared.stdout)
    assert result["run_b"] == two_ranks["run_id"] and result["verdict"] in ("faster", "slower", "equivalent",
                                                                              "undecided")


def test_a_rank_that_dies_fails_the_run_naming_it(db):
    done = labconsole("run", *SHORT, "--ranks", "2", "--iterations", "15", "--json", db=db,
                      env={"LABCONSOLE_TEST_DDP_DIE": "1:5"})
    assert done.returncode == 1, done.stderr
    r = json.loads(done.stdout)
    assert r["status"] == "failed" and "rank 1 exited with code 9" in r["message"], r["message"]
    assert "measured step" in r["message"]  # where it was when it died
    stored = json.loads(labconsole("history", "--json", db=db).stdout)["runs"]
    assert next(run for run in stored if run["run_id"] == r["run_id"])["status"] == "failed"
