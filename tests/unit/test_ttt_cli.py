"""`labconsole time-to-train`: each run stored with its own seed, a table of runs, MLPerf's score, exit codes; a
not-reached run, a failed run and bad options as the contract says. The worker is replaced by outcomes built here
(test_ttt_run.py trains for real), and a malformed result is never kept as completed."""

from __future__ import annotations

import json

import pytest

import console.ttt
from console.cli import main
from console.history import HistoryStore
from console.storage.launch import Outcome
from console.ttt import store_with_status


def result(seed, seconds, reached=True):
    steps = int(seconds * 100)
    return {"kind": "time-to-train", "label": "ttt-mlp · 2 ranks", "ranks": 2, "backend": "gloo",
            "placement": "local", "reached": reached, "time_to_train_s": seconds if reached else None,
            "ran_s": seconds, "steps": steps, "samples": steps * 128, "quality_curve": [[seconds, steps, 0.91]],
            "target_quality": 0.9, "energy_j": None, "energy_method": "not available: no /sys/class/powercap",
            "task": {"name": "ttt-mlp", "seed": seed}, "method": "fake", "passed": reached, "status_reason": "",
            "cache_state": "n/a", "figures": {"time_to_train_s": seconds if reached else None}}


@pytest.fixture
def fake_runs(monkeypatch):
    """console.ttt.run answering from a list of (seconds, reached) in order; records the options it was given."""
    asked: list[dict] = []
    plan: list[tuple[float, bool] | str] = []

    def fake(options, on_progress=None, cancel=None, timeout_s=0):
        asked.append(dict(options))
        item = plan[len(asked) - 1]
        if isinstance(item, str):
            return Outcome("time-to-train", "failed", cause=item, error_kind="raised")
        seconds, reached = item
        return Outcome("time-to-train", "completed", result=result(options["seed"], seconds, reached), wall_s=1.0)

    monkeypatch.setattr(console.ttt, "run", fake)
    return asked, plan


def test_five_runs_each_stored_with_its_own_seed_and_scored(fake_runs, tmp_path, capsys):
    asked, plan = fake_runs
    plan += [(5.0, True), (3.0, True), (9.0, True), (4.0, True), (6.0, True)]
    db = tmp_path / "h.db"
    code = main(["time-to-train", "--ranks", "2", "--runs", "5", "--seed", "100", "--db", str(db)])
    out = capsys.readouterr().out
    assert code == 0, out
    assert [a["seed"] for a in asked] == [100, 101, 102, 103, 104]
    assert all(a["ranks"] == 2 and a["target_quality"] == 0.9 for a in asked)
    assert "score: 5.000 s (mean of runs #1, #4, #5; the fastest and slowest dropped)" in out
    assert "dropped (fastest)" in out and "dropped (slowest)" in out
    assert "energy score: not available: no /sys/class/powercap" in out
    with HistoryStore(db) as store:
        runs = store.list_runs(limit=10)
    assert len(runs) == 5 and all(r["status"] == "completed" for r in runs)


def test_json_names_its_schema_and_the_runs_by_index_and_id(fake_runs, tmp_path, capsys):
    _, plan = fake_runs
    plan += [(2.0, True), (1.0, True), (3.0, True)]
    code = main(["time-to-train", "--runs", "3", "--seed", "7", "--json", "--db", str(tmp_path / "h.db")])
    document = json.loads(capsys.readouterr().out)
    assert code == 0
    assert document["schema"] == "labconsole.time-to-train/1"
    score = document["score"]
    assert score["score_s"] == 2.0 and score["used"] == [0]
    assert score["dropped"] == {"fastest": 1, "slowest": 2}
    assert score["used_run_ids"] == [document["runs"][0]["run_id"]]
    assert [r["seed"] for r in document["runs"]] == [7, 8, 9]


def test_two_runs_short_of_the_target_give_no_score_and_exit_1(fake_runs, tmp_path, capsys):
    _, plan = fake_runs
    plan += [(5.0, True), (5.0, False), (4.0, True), (5.0, False)]
    code = main(["time-to-train", "--runs", "4", "--seed", "1", "--db", str(tmp_path / "h.db")])
    captured = capsys.readouterr()
    assert code == 1
    assert "score: none: 2 runs (#2, #4) did not reach the target" in captured.out
    last = captured.err.strip().splitlines()[-1]
    assert last.startswith("labconsole: error: time-to-train: no score") and "--max-steps" in last


def test_a_failed_run_is_stored_failed_and_named_on_stderr(fake_runs, tmp_path, capsys):
    _, plan = fake_runs
    plan += [(5.0, True), "rank 1 exited with code 9 after step 75", (4.0, True)]
    db = tmp_path / "h.db"
    code = main(["time-to-train", "--runs", "3", "--seed", "1", "--db", str(db)])
    captured = capsys.readouterr()
    assert code == 1
    assert "1 of 3 runs failed; run 2: rank 1 exited with code 9" in captured.err.strip().splitlines()[-1]
    with HistoryStore(db) as store:
        assert sorted(r["status"] for r in store.list_runs(limit=10)) == ["completed", "completed", "failed"]


@pytest.mark.parametrize(("argv", "said"), [
    (["--ranks", "3"], "--batch 128 does not split over 3 ranks. Fix: give a multiple of 3"),
    (["--target", "0"], "argument --target"),
    (["--runs", "0"], "argument --runs"),
    (["--eval-every", "50", "--max-steps", "10"], "never be evaluated"),
])
def test_bad_options_exit_2_before_anything_runs(fake_runs, tmp_path, capsys, argv, said):
    asked, _ = fake_runs
    code = main(["time-to-train", *argv, "--db", str(tmp_path / "h.db")])
    assert code == 2 and said in capsys.readouterr().err
    assert asked == [] and not (tmp_path / "h.db").exists()


def test_a_malformed_result_is_stored_failed_with_the_cause(tmp_path):
    broken = result(1, 2.0)
    broken.pop("quality_curve")
    broken["task"] = {"name": "ttt-mlp"}
    with HistoryStore(tmp_path / "h.db") as store:
        run_id, status, cause = store_with_status(Outcome("time-to-train", "completed", result=broken), store,
                                                  {"ranks": 2, "seed": 1})
        assert status == "failed" and "lacks 'quality_curve'" in cause and "does not name the seed" in cause
        assert store.get_run(run_id)["summary"]["valid"] is False


def test_compare_sets_two_stored_runs_figures_side_by_side(fake_runs, tmp_path, capsys):
    _, plan = fake_runs
    plan += [(5.0, True), (4.0, True)]
    db = str(tmp_path / "h.db")
    assert main(["time-to-train", "--runs", "2", "--seed", "3", "--json", "--db", db]) == 1  # 2 runs: no score
    ids = [r["run_id"] for r in json.loads(capsys.readouterr().out)["runs"]]
    assert main(["compare", ids[0], ids[1], "--db", db]) == 0
    out = capsys.readouterr().out
    assert "per-step times" in out and "time to train (s): 5 → 4  (B 20% better" in out
