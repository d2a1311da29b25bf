"""Warm workers (console.worker_pool): a run takes the spare made ahead, records how its worker started, never
shares a worker with another run, and a spare still importing never competes with a run of another engine."""

from __future__ import annotations

import time

import pytest

from console.history import HistoryStore, HistoryWriter
from console.session import RunSession
from console.worker_pool import WorkerPool
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
