"""Collecting Ray ranks: once one rank has ended, a rank still running a stall timeout later ends the run with its
number (a hung rank or node must not hold the run until the worker's hour-long time-out)."""

import pytest

from engines.collectives.ray_ranks import _collect


class FakeRay:
    """ray.wait/ray.get over two refs: rank 0 ends at once, rank 1 never does."""

    def __init__(self):
        self.timeouts = []

    def wait(self, pending, num_returns, timeout):
        self.timeouts.append(timeout)
        if "r0" in pending:
            return ["r0"], [ref for ref in pending if ref != "r0"]
        return [], pending

    def get(self, ref):
        return {"rank": 0}


def test_a_rank_still_running_a_stall_timeout_after_another_ended_is_named():
    ray, seen = FakeRay(), []
    with pytest.raises(RuntimeError, match=r"rank\(s\) 1 still running 7 s after rank\(s\) 0 finished"):
        _collect(ray, ["r0", "r1"], {"stall_timeout_s": 7.0}, seen.append)
    assert ray.timeouts == [None, 7.0]  # no limit before the first rank ends: the backend's timeout covers it
    assert seen[0]["text"] == "rank 0 finished"
