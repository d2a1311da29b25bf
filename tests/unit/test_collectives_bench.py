"""Real ranks: two gloo processes on this machine time every op (the collective code runs for real, as the issue
asks), and a rank that dies or hangs ends the run with the cause, leaving no rank behind. Small sizes and few
iterations: behaviour, not speed (the bench file measures)."""

from __future__ import annotations

import os
import signal

import pytest

from engines.collectives.bench import run
from engines.collectives.errors import CollectivesError
from engines.collectives.formulas import OPS, busbw_factor

pytestmark = pytest.mark.timeout(120) if hasattr(pytest.mark, "timeout") else []


def alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie (exited, not yet reaped) counts as gone
        with open(f"/proc/{pid}/stat", encoding="ascii") as handle:
            return handle.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def test_two_gloo_ranks_time_every_op_as_nccl_tests_reports_it():
    seen = []
    result = run({"sizes": "64B..256B", "iters": 2, "warmup": 1, "trials": 2}, seen.append)
    assert result["kind"] == "collectives" and result["backend"] == "gloo" and result["ranks"] == 2
    assert list(result["ops"]) == list(OPS) and all(result["checked"].values())
    for op, rows in result["ops"].items():
        assert [row["requested_bytes"] for row in rows] == [64, 128, 256]
        for row in rows:
            assert row["time_us"] > 0 and row["trials"] == 2
            assert row["algbw_gbs"] == pytest.approx(row["size_bytes"] / (row["time_us"] / 1e6) / 1e9)
            assert row["busbw_gbs"] == pytest.approx(row["algbw_gbs"] * busbw_factor(op, 2))
            assert len(row["time_us_spread"]["rank_median_us"]) == 2
    assert result["figures"]["all_reduce_small_latency_us"] == result["ops"]["all-reduce"][0]["time_us"]
    assert "nccl-tests" in result["method"] and result["rank_hosts"][0]
    steps = [u for u in seen if "fraction" in u and u.get("text", "").startswith(("all-", "reduce", "broadcast"))]
    assert steps and steps[-1]["fraction"] == pytest.approx(1.0)
    assert not any(alive(pid) for pid in seen[0]["rank_pids"])


def test_a_rank_that_dies_ends_the_run_with_the_cause():
    pids = []

    def kill_rank_1(update):
        if "rank_pids" in update:
            pids.extend(update["rank_pids"])
        elif pids and alive(pids[1]):
            os.kill(pids[1], signal.SIGKILL)

    with pytest.raises(RuntimeError) as caught:
        run({"ops": "all-reduce", "sizes": "1KiB..1MiB", "iters": 50, "warmup": 1, "trials": 2,
             "stall_timeout_s": 30}, kill_rank_1)
    assert "rank 1 was killed by SIGKILL" in str(caught.value) and "after all-reduce" in str(caught.value)
    assert not any(alive(pid) for pid in pids)


def test_a_rank_that_hangs_ends_the_run_with_the_cause():
    pids = []

    def stop_rank_1(update):
        if "rank_pids" in update:
            pids.extend(update["rank_pids"])
        elif pids and alive(pids[1]) and len(pids) == 2:
            os.kill(pids[1], signal.SIGSTOP)
            pids.append(None)

    with pytest.raises(RuntimeError) as caught:
        run({"ops": "all-reduce", "sizes": "1KiB..1MiB", "iters": 50, "warmup": 1, "trials": 2,
             "stall_timeout_s": 3}, stop_rank_1)
    text = str(caught.value)
    assert "after all-reduce" in text and ("hang" in text or "imed out" in text or "imeout" in text), text
    assert not any(alive(pid) for pid in pids[:2])


def test_impossible_requests_are_refused_before_any_rank_starts():
    with pytest.raises(CollectivesError, match="NCCL|GPU") as caught:  # this box: a CPU torch, no GPU
        run({"backend": "nccl", "ranks": 2})
    assert "use --ranks" in caught.value.fix or "--backend gloo" in caught.value.fix
    with pytest.raises(CollectivesError, match="of memory is available") as caught:
        run({"ranks": 64, "sizes": "16GiB"})
    assert "smaller" in caught.value.fix
