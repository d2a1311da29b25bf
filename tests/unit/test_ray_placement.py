"""Ranks on a Ray cluster, without Ray: collecting the actors' answers names the failing rank, its host and where it
last said it was, and blames a rank whose actor died over a peer that only lost its connection to it; a rank still
running a stall time-out after another ended is named; the data-parallel launcher hands on every message but the
launcher's own, in order, while the ranks run (engines.collectives.placement, engines.ddp.ray_launch)."""

from __future__ import annotations

import pytest

from engines.collectives.placement import collect, failure_text
from engines.ddp import ray_launch


class RayActorError(Exception):
    """Named as Ray's: the rank's process or node is gone."""


class RayTaskError(Exception):
    """Named as Ray's: the rank raised."""


class FakeRay:
    """ray.wait/ray.get over refs "r0", "r1" …: `answers` maps a ref to a value or an exception; refs in
    `order` finish in that order, the others never."""

    def __init__(self, answers, order):
        self.answers, self.order, self.waits = answers, list(order), []

    def wait(self, pending, num_returns, timeout):
        self.waits.append((num_returns, timeout))
        done = [ref for ref in self.order if ref in pending][:num_returns]
        for ref in done:
            self.order.remove(ref)
        return done, [ref for ref in pending if ref not in done]

    def get(self, ref, timeout=None):
        answer = self.answers[ref]
        if isinstance(answer, Exception):
            raise answer
        return answer


def test_every_rank_answers_in_rank_order_with_progress():
    ray, seen = FakeRay({"r0": "zero", "r1": "one"}, ["r1", "r0"]), []
    assert collect(ray, ["r0", "r1"], seen.append, stall_s=5.0) == ["zero", "one"]
    assert [u["text"] for u in seen] == ["rank 1 finished", "rank 0 finished"]
    assert ray.waits == [(1, None), (1, 5.0)]


def test_a_dead_rank_is_named_with_its_host_and_where_it_was():
    died = RayActorError("The actor died unexpectedly before finishing this task.\n  class_name: RankActor\n"
                         "The actor's worker process exited with code 9")
    ray = FakeRay({"r0": {"ok": 1}, "r1": died}, ["r1", "r0"])
    with pytest.raises(RuntimeError) as info:
        collect(ray, ["r0", "r1"], lambda u: None, stall_s=5.0, hosts=["lab-a", "lab-b"],
                where=lambda rank: "after measured step 5 of 15 (the last it reported)")
    assert str(info.value) == ("rank 1 failed on the cluster (host lab-b): RayActorError: The actor's worker process "
                               "exited with code 9 after measured step 5 of 15 (the last it reported)")


def test_a_dead_rank_is_blamed_over_the_peer_whose_connection_it_broke():
    broken = RayTaskError("ray::RankActor.run()\nRuntimeError: Connection closed by peer [127.0.0.1]:4242")
    ray = FakeRay({"r0": broken, "r1": RayActorError("The actor died: SIGKILL")}, ["r0", "r1"])
    with pytest.raises(RuntimeError, match=r"^rank 1 failed on the cluster \(host lab-b\): RayActorError: The "
                                           r"actor died: SIGKILL$"):
        collect(ray, ["r0", "r1"], lambda u: None, stall_s=5.0, hosts=["lab-a", "lab-b"])
    assert ray.waits[-1] == (1, 20.0)  # a broken connection is a lost peer's symptom: its death is waited for
    alone = FakeRay({"r0": broken, "r1": "fine"}, ["r0", "r1"])  # no death: the error stands
    with pytest.raises(RuntimeError, match=r"^rank 0 failed on the cluster: RayTaskError: RuntimeError: Connection"):
        collect(alone, ["r0", "r1"], lambda u: None, stall_s=5.0)
    own = FakeRay({"r0": RayTaskError("ValueError: bad batch"), "r1": "fine"}, ["r0", "r1"])
    with pytest.raises(RuntimeError, match=r"^rank 0 failed on the cluster: RayTaskError: ValueError: bad batch$"):
        collect(own, ["r0", "r1"], lambda u: None, stall_s=5.0)
    assert own.waits[-1] == (1, 1.5)  # its own error: a moment only


def test_with_ticks_a_rank_still_running_after_the_stall_time_out_is_named():
    ray, ticks = FakeRay({"r0": "zero"}, ["r0"]), []
    with pytest.raises(RuntimeError, match=r"rank\(s\) 1 still running 0.05 s after rank\(s\) 0 finished"):
        collect(ray, ["r0", "r1"], lambda u: None, stall_s=0.05, tick_s=0.01, on_tick=lambda: ticks.append(1))
    assert len(ticks) >= 2 and all(timeout == 0.01 for _, timeout in ray.waits)


def test_failure_text_without_hosts_or_text():
    assert failure_text(2, RayActorError(""), hosts=["a"]) == "rank 2 failed on the cluster: RayActorError: "


class DrainRay:
    """ray.get of drain refs: a list of messages, or an error for a dead actor."""

    def get(self, ref, timeout=None):
        if isinstance(ref, Exception):
            raise ref
        return ref


class FakeActor:
    def __init__(self, answer):
        self.drain = type("Method", (), {"remote": staticmethod(lambda: answer)})


def test_drained_messages_are_handed_on_in_order_but_the_launchers_own():
    got = []
    seen = ray_launch._Seen(lambda tag, rank, payload: got.append((tag, rank)))
    actors = [FakeActor([("ready", 0, {}), ("phase", 0, {"phase": "warmup", "measured_steps": 15}),
                         ("steps", 0, {"first": 0, "t0_ns": [1, 2, 3]})]),
              FakeActor(RayActorError("gone")),  # left to collect, which names it
              FakeActor([("progress", 2, {"step": 1, "of": 3}), ("result", 2, {}), ("error", 2, "x")])]
    ray_launch._drain(DrainRay(), actors, seen)
    assert got == [("ready", 0), ("phase", 0), ("steps", 0), ("progress", 2)]
    assert seen.where(0) == "after measured step 3 of 15 (the last it reported)"
    assert seen.where(2) == "after warm-up step 1 of 3 (the last it reported)"
    assert seen.where(1).startswith("before its first step")


def test_a_cancel_raised_by_on_message_stops_the_drain():
    class Cancelled(Exception):
        pass

    def refuse(tag, rank, payload):
        raise Cancelled

    with pytest.raises(Cancelled):
        ray_launch._drain(DrainRay(), [FakeActor([("ready", 0, {})])], ray_launch._Seen(refuse))


def test_a_ranks_bundle_and_the_time_to_place_it():
    assert ray_launch.bundle_for({"backend": "nccl", "threads_per_rank": 8}) == {"CPU": 1.0, "GPU": 1.0}
    assert ray_launch.bundle_for({"backend": "gloo", "threads_per_rank": None}) == {"CPU": 1.0}
    assert ray_launch.bundle_for({"backend": "none", "threads_per_rank": 4}) == {"CPU": 4.0}
    assert ray_launch.place_timeout({"load_timeout_s": 300.0}) == 60.0
    assert ray_launch.place_timeout({"load_timeout_s": 20.0}) == 10.0
