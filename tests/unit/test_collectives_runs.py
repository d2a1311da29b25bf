"""A collectives outcome kept as a history run (scenario "collectives", engine torch.distributed, target cpu/cuda),
never `completed` when its result breaks the contract or an op's check failed; `latest` finds the newest for the
window; bad options fail before any worker starts. Outcomes are built here: no ranks start in this file."""

from __future__ import annotations

import os
import threading
import time

import pytest

from console.collectives import is_collectives_run, latest, run, spec_for, store, store_with_status
from console.history import HistoryStore
from console.storage.launch import Outcome
from engines.collectives.options import normalize
from engines.collectives.result import build_result


@pytest.fixture
def db(tmp_path):
    with HistoryStore(tmp_path / "history.db") as opened:
        yield opened


def result(seconds=1e-3, backend="gloo", ops="all-reduce"):
    opts = normalize({"ops": ops, "sizes": "1KiB,1MiB", "trials": 2, "backend": backend})
    outs = [{"rank": r, "host": "h", "device": "cpu", "torch": "x",
             "times": {op: {"1024": [seconds / 100] * 2, str(1 << 20): [seconds] * 2} for op in opts["ops"]},
             "skipped": {}, "checked": {op: True for op in opts["ops"]}} for r in range(2)]
    return opts, build_result(opts, outs, "test method")


def test_a_completed_run_is_kept_with_its_result_and_figures(db):
    opts, res = result()
    run_id, status, cause = store_with_status(Outcome("collectives", "completed", result=res, wall_s=2.0), db, opts,
                                              tags=["lab"])
    assert status == "completed" and cause is None
    stored = db.get_run(run_id)
    assert stored["status"] == "completed" and stored["spec"]["scenario"] == "collectives"
    assert stored["engine"] == "torch.distributed" and stored["target"] == "cpu" and is_collectives_run(stored)
    assert stored["model"] == "all-reduce · gloo · 2 ranks" and "sizes_bytes" not in stored["spec"]["scenario_options"]
    summary = stored["summary"]
    assert summary["valid"] is True and summary["method"] == "test method" and summary["iterations"] == 0
    assert summary["figures"]["all_reduce_peak_busbw_gbs"] == pytest.approx((1 << 20) / 1e-3 / 1e9)
    assert summary["collectives"]["ops"]["all-reduce"][1]["busbw_gbs"] == pytest.approx(1.048576)
    assert latest(db, 5) == [(run_id, summary["collectives"])]


def test_latest_is_newest_first_and_only_completed_collectives(db):
    first = store(Outcome("collectives", "completed", result=result(1e-3)[1]), db, result()[0])
    second = store(Outcome("collectives", "completed", result=result(2e-3)[1]), db, result()[0])
    store(Outcome("collectives", "failed", cause="rank 1 was killed by SIGKILL"), db, result()[0])
    other = db.create_run({"scenario": "single-stream", "model": "m", "engine": "torch.distributed", "target": "cpu"})
    db.finish_run(other, "completed", {"figures": {}})
    assert [run_id for run_id, _ in latest(db, 5)] == [second, first]
    assert [run_id for run_id, _ in latest(db, 1)] == [second]


def test_a_failed_outcome_is_kept_failed_with_its_cause(db):
    opts, _ = result()
    run_id = store(Outcome("collectives", "failed", cause="rank 1 was killed by SIGKILL after all-reduce 1MiB",
                           error_kind="raised"), db, opts)
    stored = db.get_run(run_id)
    assert stored["status"] == "failed" and "SIGKILL" in stored["error"]
    assert stored["summary"]["valid"] is False and stored["summary"]["error_kind"] == "raised"


@pytest.mark.parametrize(("breakage", "named"), [
    (lambda r: r.pop("ops"), "lacks 'ops'"),
    (lambda r: r.__setitem__("checked", {"all-reduce": False}), "check failed for all-reduce"),
    (lambda r: r["ops"]["all-reduce"][0].pop("busbw_gbs"), "rows are not size rows"),
    (lambda r: r.__setitem__("kind", "feed"), "its kind is 'feed'"),
])
def test_a_result_that_breaks_the_contract_is_never_completed(db, breakage, named):
    opts, res = result()
    breakage(res)
    run_id, status, cause = store_with_status(Outcome("collectives", "completed", result=res), db, opts)
    assert status == "failed" and named in cause and db.get_run(run_id)["status"] == "failed"
    assert latest(db, 5) == []


def test_the_spec_says_cuda_for_nccl_and_the_options_without_derived_sizes():
    opts, res = result(backend="nccl")
    spec = spec_for(opts, res["label"])
    assert spec["target"] == "cuda" and spec["engine"] == "torch.distributed" and spec["model"] == res["label"]
    assert spec["scenario_options"]["sizes"] == "1KiB,1MiB" and "sizes_bytes" not in spec["scenario_options"]


def test_store_without_options_takes_them_from_the_result(db):
    _, res = result()
    stored = db.get_run(store(Outcome("collectives", "completed", result=res), db))
    assert stored["spec"]["scenario_options"]["backend"] == "gloo"
    assert stored["spec"]["scenario_options"]["ops"] == ["all-reduce"]


def test_bad_options_fail_before_any_worker_with_the_fix():
    outcome = run({"sizes": "64MiB..8B"})
    assert outcome.status == "failed" and outcome.error_kind == "bad-input" and "run downwards" in outcome.cause
    assert outcome.fix and "8B..64MiB" in outcome.fix and outcome.progress_seen == 0
    nowhere = run({"cluster": "127.0.0.1:1"})
    assert nowhere.status == "failed" and nowhere.error_kind == "bad-input" and nowhere.progress_seen == 0
    assert "token" in nowhere.cause or "127.0.0.1:1" in nowhere.cause  # without a token, or nothing listening


def test_cancel_ends_the_worker_and_its_ranks(db):
    cancel, pids = threading.Event(), []

    def on_progress(update):
        pids.extend(update.get("rank_pids") or [])
        if update.get("text", "").startswith("all-reduce"):
            cancel.set()

    outcome = run({"ops": "all-reduce", "sizes": "1KiB..64MiB", "iters": 20, "trials": 3}, on_progress, cancel,
                  timeout_s=120)
    assert outcome.status == "cancelled" and outcome.error_kind == "cancelled" and "all-reduce" in outcome.cause
    assert len(pids) == 2
    deadline = time.monotonic() + 5.0  # SIGKILLed with the worker's group; init reaps them
    while any(_exists(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(_exists(pid) for pid in pids)
    run_id = store(outcome, db, {"ops": ["all-reduce"], "backend": "gloo"})
    assert db.get_run(run_id)["status"] == "cancelled" and latest(db, 5) == []


def _exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_the_console_side_never_imports_torch():
    import subprocess
    import sys

    code = ("import sys, console.collectives, console.cli.collectives_cmd, console.report.collectives_section; "
            "from console.collectives import run; run({'sizes': 'bad'}); "
            "print(sorted(m for m in ('torch', 'ray', 'PySide6') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
