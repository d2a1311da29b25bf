"""Real time-to-train runs: the worker's bench with 1 rank reaches 0.9, 2 gloo ranks through the console's worker
reach it too and are stored as a history run, a rank that dies fails the run naming it, a meaningless target is
refused before any rank starts."""

import os

import pytest

pytest.importorskip("torch")
dist = pytest.importorskip("torch.distributed")

from engines.ttt.errors import TimeToTrainError  # noqa: E402

# the task at a quarter of its width (~0.5 s to 0.9 here), one thread a rank (a busy machine cannot oversubscribe it)
SMALL = {"seed": 11, "task_params": {"hidden": 128}, "threads": 1}
needs_gloo = pytest.mark.skipif(not dist.is_available() or not dist.is_gloo_available(),
                                reason="this torch has no gloo backend")


def check_reached(result, ranks):
    assert result["kind"] == "time-to-train" and result["ranks"] == ranks
    assert result["reached"] is True and result["passed"] is True
    curve = result["quality_curve"]
    assert curve[-1][2] >= 0.9 and all(point[2] < 0.9 for point in curve[:-1])  # stopped at the first eval ≥ 0.9
    assert curve[-1][1] == result["steps"] and result["steps"] % 25 == 0
    assert result["samples"] == result["steps"] * 128
    assert 0 < curve[-1][0] == pytest.approx(result["time_to_train_s"], abs=0.05)
    assert 0 < result["eval_s"] < result["time_to_train_s"] <= result["ran_s"]
    assert result["task"]["seed"] == 11 and result["task"]["majority_share"] < 0.5
    assert result["figures"]["time_to_train_s"] == result["time_to_train_s"]
    if result["energy_j"] is None:  # this VM: no RAPL; never a made-up number
        assert result["energy_method"].startswith("not available: ")
    else:
        assert result["energy_j"] > 0 and result["energy_method"].startswith("counter: RAPL")
    assert "evaluation time included" in result["method"]


def test_one_rank_reaches_the_target():
    from engines.ttt.bench import run

    updates = []
    result = run({"ranks": 1, **SMALL}, updates.append)
    check_reached(result, 1)
    assert result["backend"] == "none" and len(result["rank_pids"]) == 1 and result["threads_per_rank"] == 1
    assert any("eval accuracy" in u.get("text", "") for u in updates)


@needs_gloo
def test_two_gloo_ranks_reach_it_through_the_worker_and_are_stored(tmp_path):
    from console.history import HistoryStore
    from console.ttt import run, store_with_status

    options = {"ranks": 2, **SMALL}
    outcome = run(options, timeout_s=300)
    assert outcome.status == "completed", outcome.message
    check_reached(outcome.result, 2)
    assert outcome.result["backend"] == "gloo" and len(set(outcome.result["rank_pids"])) == 2
    with HistoryStore(tmp_path / "history.db") as store:
        run_id, status, cause = store_with_status(outcome, store, options)
        assert (status, cause) == ("completed", None)
        stored = store.get_run(run_id)
    assert stored["spec"]["scenario"] == "time-to-train" and stored["spec"]["engine"] == "torch.distributed"
    assert "seed" not in stored["spec"]["scenario_options"]  # the runs of one score form one series
    summary = stored["summary"]
    assert summary["valid"] is True and summary["time_to_train"]["task"]["seed"] == 11
    assert summary["figures"]["time_to_train_s"] == outcome.result["time_to_train_s"]


@needs_gloo
def test_a_rank_that_dies_fails_the_run_naming_it(monkeypatch):
    from engines.ttt.bench import run

    monkeypatch.setenv("LABCONSOLE_TEST_DDP_DIE", "1:5")
    with pytest.raises(RuntimeError, match=r"rank 1 exited with code 9"):
        run({"ranks": 2, **SMALL, "stall_timeout_s": 30})


def test_a_target_no_better_than_one_class_is_refused_before_any_rank_starts():
    from engines.ttt.bench import run

    with pytest.raises(TimeToTrainError) as caught:
        run({"target_quality": 0.05})
    assert "most common class" in caught.value.message and "above" in caught.value.fix
    assert os.environ.get("LABCONSOLE_TEST_DDP_DIE") is None
