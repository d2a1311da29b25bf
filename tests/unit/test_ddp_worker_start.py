"""A data-parallel run's worker starts rank processes, which a daemonic process may not: the runner spawns it
non-daemonic (and stops it if the console exits first), and the warm pool, whose spares are daemonic, hands it
none. Other runs keep their daemonic worker and their spare. Fake processes: nothing is spawned here."""

from __future__ import annotations

import threading

import pytest

from console.run import runner
from console.run.worker_pool import Spare, WorkerPool
from engines.spec import RunSpec


class FakeConn:
    def poll(self, timeout=0):
        raise EOFError  # the worker "exited" at once: the run ends, failed, without waiting

    def send(self, message):
        pass

    def close(self):
        pass


class FakeProcess:
    made: list[FakeProcess] = []

    def __init__(self, target=None, args=(), name="", daemon=None, alive=False):
        self.daemon, self.name, self.pid, self.exitcode = daemon, name, 4242, 0
        self.alive, self.ended = alive, []
        FakeProcess.made.append(self)

    def start(self):
        pass

    def is_alive(self):
        return self.alive

    def join(self, timeout=None):
        pass

    def terminate(self):
        self.ended.append("terminate")
        self.alive = False

    def kill(self):
        self.ended.append("kill")
        self.alive = False


class FakeContext:
    Process = FakeProcess

    def Pipe(self, duplex=True):  # noqa: N802 — multiprocessing's name
        return FakeConn(), FakeConn()


class RecordingPool:
    def __init__(self):
        self.calls = []

    def take(self, engine, distributed=False):
        self.calls.append((engine, distributed))
        return None


@pytest.fixture
def spawned(monkeypatch):
    FakeProcess.made = []
    monkeypatch.setattr(runner.multiprocessing, "get_context", lambda method: FakeContext())
    return FakeProcess.made


def _start(spec, pool=None):
    ended = []
    run = runner.WorkerRun(spec, lambda event: None, ended.append, pool=pool)
    run.start()
    assert run.wait(5.0) is not None
    return run, ended


def ddp_spec(ranks=2):
    return RunSpec(model="mlp", mode="training", batch=2, engine_options={"torch": {"ranks": ranks}}).validate()


@pytest.mark.parametrize(("spec", "daemonic"), [
    (RunSpec(model="mlp").validate(), True),
    (RunSpec(model="mlp", mode="training").validate(), True),  # one process, no ranks: as before
    (ddp_spec(2), False),
    (ddp_spec(1), False),  # a 1-rank DDP run (the E(N) baseline) runs its rank as a process too
])
def test_the_worker_is_daemonic_unless_the_spec_starts_ranks(spawned, spec, daemonic):
    pool = RecordingPool()
    _, ended = _start(spec, pool)
    assert [p.daemon for p in spawned] == [daemonic]
    assert pool.calls == [("torch", not daemonic)]
    assert ended and ended[0].status == "failed"  # the fake worker exited without a result


def test_a_distributed_worker_still_running_at_exit_is_stopped(spawned, monkeypatch):
    run, _ = _start(ddp_spec())
    assert run in runner._PARENTS
    monkeypatch.setattr(run, "_done", threading.Event())  # as if it were still running
    spawned[0].alive = True
    runner._stop_parents()
    assert spawned[0].ended == ["terminate"]


def test_the_pool_hands_no_spare_to_a_distributed_spec_and_keeps_it():
    pool = WorkerPool()
    ready = threading.Event()
    ready.set()
    spare = Spare(FakeProcess(alive=True), FakeConn(), ready)
    pool._spares["torch"] = spare
    assert pool.take("torch", distributed=True) is None
    assert pool.states() == {"torch": "warm"}  # kept for the next single-process run
    assert pool.take("torch") is spare


def test_a_spare_still_importing_is_stopped_when_a_distributed_run_starts():
    pool = WorkerPool()
    importing = Spare(FakeProcess(alive=True), FakeConn(), threading.Event())  # `ready` not set: still importing
    pool._spares["torch"] = importing
    assert pool.take("torch", distributed=True) is None
    assert pool.states() == {} and importing.process.ended == ["kill"]  # it would compete with the ranks
