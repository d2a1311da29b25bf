"""Warm workers (console.run.worker_pool): a run takes the spare made ahead, records how its worker started, never
shares a worker with another run, and a spare still importing never competes with a run of another engine."""

from __future__ import annotations

import gc
import multiprocessing.context
import os
import signal
import time

import pytest

from console.history import HistoryStore, HistoryWriter
from console.run.session import RunSession
from console.run.worker_pool import WorkerPool
from engines.spec import RunSpec

READY_S = 120.0


@pytest.fixture
def pool():
    made = WorkerPool()
    yield made
    made.close()


def _run(tmp_path, pool, **spec):
    writer = HistoryWriter.open(tmp_path / "h.db")
    try:
        session = RunSession(RunSpec(**{"model": "mlp", "duration_s": 0.3, "warmup_s": 0.0, **spec}), writer,
                             telemetry_hz=None, pool=pool)
        session.start()
        record = session.wait(180)
        return record, session._worker
    finally:
        writer.close()


def _wait_ready(pool, engine: str) -> None:
    deadline = time.monotonic() + READY_S
    while pool.states().get(engine) != "warm":
        assert time.monotonic() < deadline, f"the {engine} spare never became ready: {pool.states()}"
        time.sleep(0.05)


def test_a_run_takes_the_warm_spare_and_a_new_one_is_made_after_it(tmp_path, pool):
    pool.prepare("torch")
    _wait_ready(pool, "torch")
    spare_pid = pool._spares["torch"].process.pid
    record, worker = _run(tmp_path, pool)
    assert record["status"] == "completed", record["message"]
    assert record["environment"]["worker_start"] == "warm" and worker.pid == spare_pid
    assert record["summary"]["iterations"] > 0
    assert pool.states().get("torch") in ("warm", "warming")  # the next run's spare, made after this one ended
    assert pool._spares["torch"].process.pid != spare_pid
    with HistoryStore(tmp_path / "h.db") as store:
        assert store.get_run(record["run_id"])["environment"]["worker_start"] == "warm"


def test_without_a_pool_the_worker_starts_cold(tmp_path):
    record, _ = _run(tmp_path, None)
    assert record["status"] == "completed" and record["environment"]["worker_start"] == "cold"


def test_a_run_started_while_the_spare_is_still_starting_completes(tmp_path, pool, monkeypatch):
    """The window makes its first spare 2 s after launch; a run started then took a spare whose child had not yet
    unpickled its start-up objects, the run dropped the pool's `ready` event, the event's named semaphores were
    unlinked, and the child died in start-up (FileNotFoundError, "exited with code 1 during start-up"). Forced
    here: the spare's child is stopped right after its spawn, and resumed only once the run has taken it."""
    real_start = multiprocessing.context.SpawnProcess.start
    paused = []

    def start_paused(process):
        real_start(process)
        os.kill(process.pid, signal.SIGSTOP)  # before its interpreter can have read what the pool sent it
        paused.append(process.pid)

    monkeypatch.setattr(multiprocessing.context.SpawnProcess, "start", start_paused)
    pool.prepare("torch")
    monkeypatch.undo()
    assert paused == [pool._spares["torch"].process.pid]
    writer = HistoryWriter.open(tmp_path / "h.db")
    try:
        session = RunSession(RunSpec(model="mlp", duration_s=0.3, warmup_s=0.0), writer, telemetry_hz=None,
                             pool=pool)
        session.start()  # takes the spare, still paused mid-start-up
        gc.collect()
        os.kill(paused[0], signal.SIGCONT)
        record = session.wait(180)
    finally:
        writer.close()
    assert session._worker.pid == paused[0]
    assert record["status"] == "completed", record["message"]
    assert record["environment"]["worker_start"] == "warming"


def test_a_pooled_worker_runs_one_spec_only_even_after_a_failure(tmp_path, pool):
    pool.prepare("torch")
    _wait_ready(pool, "torch")
    failed, first = _run(tmp_path, pool, target="cuda:0")  # valid here, refused at load: this machine has no GPU
    assert failed["status"] == "failed" and failed["environment"]["worker_start"] == "warm"
    first._process.join(10)
    assert not first._process.is_alive()  # the failed worker is gone, not back in the pool
    _wait_ready(pool, "torch")
    record, second = _run(tmp_path, pool)
    assert record["status"] == "completed" and second.pid != first.pid


def test_a_spare_still_importing_is_stopped_when_another_engine_runs(pool):
    pool.prepare("torch")
    spare = pool._spares["torch"]
    assert not spare.ready.is_set()  # importing torch takes seconds; this is the moment right after the spawn
    assert pool.take("onnxruntime") is None  # no spare for that engine: it will start cold
    spare.process.join(5)
    assert not spare.process.is_alive() and "torch" not in pool.states()


def test_closing_the_pool_stops_every_spare(pool):
    pool.prepare("torch")
    spare = pool._spares["torch"]
    pool.close()
    assert not spare.process.is_alive()
    pool.prepare("torch")  # a closed pool makes no more
    assert pool.states() == {}
