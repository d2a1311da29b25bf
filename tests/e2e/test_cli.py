"""The command line end to end: real worker processes, a real history file, real exit codes."""

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
    return tmp_path_factory.mktemp("cli") / "history.db"


@pytest.fixture(scope="module")
def first_run(db):
    done = labconsole("run", "--model", "mlp", "--duration", "1", "--warmup", "0.2", "--name", "cli-e2e", "--json",
                      db=db)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_run_json_reports_a_real_measurement(first_run):
    r = first_run
    assert r["status"] == "completed" and r["model"] == "mlp" and r["engine"] == "torch" and r["target"] == "cpu"
    assert len(r["run_id"]) == 32 and r["batch"] == 1 and r["name"] == "cli-e2e"
    assert r["iterations"] > 10
    assert 0.9 <= r["duration_s"] < 5
    assert r["load_s"] > 0
    lat = r["latency_ms"]
    # A percentile too few samples back is withheld (None) and named among the reasons the run is invalid.
    shown = [lat[k] for k in ("min", "p50", "p90", "p99", "max") if lat[k] is not None]
    assert shown == sorted(shown) and shown[0] > 0
    for key in ("p50", "p90", "p99"):
        if lat[key] is None:
            assert any(reason["rule"] == f"percentile_{key}" for reason in r["invalid_reasons"])
        else:
            low, high = lat["ci95"][key]
            assert low is None or low <= lat[key]
            assert high is None or lat[key] <= high
    assert isinstance(r["valid"], bool) and isinstance(r["stable"], bool) and r["cv"] > 0
    assert r["scenario"]["name"] == "single-stream"
    assert r["cold_start"]["build_s"] == r["load_s"] and r["cold_start"]["first_inference_ms"] > 0
    assert r["telemetry"]["cpu.util"]["unit"] == "%" and r["telemetry"]["cpu.util"]["method"] == "measured"
    # Run hygiene is stored with the run; a busy machine is a warning in the summary, not a silent bias.
    assert isinstance(r["hygiene"]["busy"], bool) and "threads" in r["hygiene"]
    assert (len(r["warnings"]) > 0) == r["hygiene"]["busy"]
    assert r["throughput_per_s"] == pytest.approx(r["iterations"] * r["batch"] / r["duration_s"], rel=1e-6)


def test_history_lists_the_run_newest_first(db, first_run):
    second = labconsole("run", "--model", "resnet18", "--param", "image_size=32", "--param", "width=8",
                        "--iterations", "5", "--warmup", "0", "--json", db=db)
    assert second.returncode == 0, second.stderr
    second_id = json.loads(second.stdout)["run_id"]
    assert json.loads(second.stdout)["iterations"] == 5
    listed = labconsole("history", "--json", db=db)
    assert listed.returncode == 0, listed.stderr
    runs = json.loads(listed.stdout)["runs"]
    assert [r["run_id"] for r in runs[:2]] == [second_id, first_run["run_id"]]
    assert runs[1]["latency_ms"]["p50"] == pytest.approx(first_run["latency_ms"]["p50"])
    assert {"run_id", "started_at", "status", "model", "engine", "target", "latency_ms"} <= set(runs[0])
    assert runs[1]["valid"] == first_run["valid"]
    assert runs[1]["scenario"] == first_run["scenario"]
    assert runs[0]["scenario"]["name"] == "single-stream" and runs[0]["valid"] is False  # 5 iterations: too few
    human = labconsole("history", db=db)
    assert first_run["run_id"][:8] in human.stdout
    filtered = json.loads(labconsole("history", "--model", "resnet18", "--invalid", "--json", db=db).stdout)["runs"]
    assert [r["run_id"] for r in filtered] == [second_id]
    assert json.loads(labconsole("history", "--model", "resnet18", "--valid", "--json", db=db).stdout)["runs"] == []
    assert runs[0]["tags"] == [] and len(runs[0]["fingerprint"]) == 16


def test_targets_json_lists_cpu_and_says_why_others_are_missing():
    done = labconsole("targets", "--json")
    assert done.returncode == 0, done.stderr
    targets = json.loads(done.stdout)["targets"]
    cpu = next(t for t in targets if t["id"] == "cpu")
    assert cpu["available"] and "torch" in cpu["engines"] and cpu["name"]
    for target in targets:
        assert {"id", "name", "available", "engines"} <= set(target)
        if not target["available"]:
            assert target["reason"]


def test_models_json_lists_the_catalog():
    models = json.loads(labconsole("models", "--json").stdout)["models"]
    assert {m["name"] for m in models} >= {"mlp", "resnet18", "resnet50", "bert", "gpt"}


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--model", "nosuchmodel"], "--model: unknown value 'nosuchmodel'; allowed: mlp, resnet18, resnet50, bert, gpt"),
        (["--engine", "jax"], "--engine: unknown value 'jax'"),
        (["--target", "tpu0"], "--target: unknown target 'tpu0'"),
        (["--batch", "0"], "--batch: must be a whole number"),
        (["--duration", "0"], "--duration: must be a number > 0"),
        (["--duration", "-3"], "--duration: must be a number > 0"),
    ],
)
def test_bad_run_options_exit_2_naming_the_option(tmp_path, args, words):
    done = labconsole("run", *args, db=tmp_path / "h.db", timeout=60)
    assert done.returncode == 2
    assert words in done.stderr
    assert not (tmp_path / "h.db").exists(), "nothing is written for a run that never started"


def test_a_file_that_is_not_sqlite_is_refused_and_left_untouched(tmp_path):
    bad = tmp_path / "notes.db"
    content = os.urandom(4096)
    bad.write_bytes(content)
    for args in (["history"], ["run", "--iterations", "3"]):
        done = labconsole(*args, db=bad, timeout=60)
        assert done.returncode == 1
        assert "not an SQLite database" in done.stderr and "Fix" in done.stderr
    assert bad.read_bytes() == content


def test_history_reads_without_creating_or_writing_the_file(tmp_path, db, first_run):
    missing = tmp_path / "none.db"
    done = labconsole("history", "--json", db=missing, timeout=60)  # a history that is not there is an error
    assert done.returncode == 1 and "no history at" in done.stderr and done.stdout == "" and not missing.exists()
    before = db.read_bytes()
    assert labconsole("history", "--json", db=db, timeout=60).returncode == 0
    assert db.read_bytes() == before


def test_an_unwritable_database_path_names_the_fix(tmp_path):
    blocker = tmp_path / "afile"
    blocker.write_text("x")
    done = labconsole("run", "--iterations", "3", db=blocker / "h.db", timeout=60)
    assert done.returncode == 1
    assert "--db" in done.stderr and "LABCONSOLE_DB" in done.stderr


def test_compare_two_stored_runs(db, first_run):
    again = json.loads(labconsole("run", "--model", "mlp", "--duration", "1", "--warmup", "0.2", "--json",
                                  db=db).stdout)
    done = labconsole("compare", first_run["run_id"][:8], again["run_id"], "--json", db=db)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["run_a"] == first_run["run_id"] and result["run_b"] == again["run_id"]
    assert result["verdict"] in ("faster", "slower", "equivalent", "undecided")
    assert result["mde"] is None or result["mde"] > 0
    low, high = result["ci95"]
    assert low <= result["ratio"] <= high and 0 <= result["p_value"] <= 1
    missing = labconsole("compare", "deadbeef", again["run_id"], db=db)
    assert missing.returncode == 3 and "RUN_A: no run 'deadbeef'" in missing.stderr  # cannot judge, not "slower"


def test_run_is_judged_against_the_machines_noise_floor(db, first_run):
    """No recent floor in a fresh history: run measured a quick draw first, kept it beside the history, and stored
    the floor it used with the run (that draw; and one more taken right after, had the floor made the run
    INVALID); the verdict is one of the drift module's."""
    from engines.machine.noise import KERNEL_VERSION, QUICK_WINDOW_S

    stability = first_run["stability"]
    floor = stability["noise_floor"]
    assert floor["quick"] is True and floor["windows"] == 10 and floor["window_s"] == QUICK_WINDOW_S
    assert floor["kernel_version"] == KERNEL_VERSION and stability["noise"] >= 0
    assert (floor["draws"], floor["source"]) == (1, "quick measurement") or (
        floor["draws"] == 2 and floor["source"].endswith("the newest taken right after the run (the earlier floor "
                                                         "called it invalid)"))
    if stability["verdict"] is not None:  # None: too few iterations for three windows (a very busy machine)
        assert stability["verdict"] in ("stable", "jittery", "drift", "unsteady") and stability["line"]
    assert (db.parent / "noise_floor.json").is_file()
