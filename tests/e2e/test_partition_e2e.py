"""A real run with a core partition: while it measures, the worker keeps to the worker cores and the console (every
thread) and its sampler to the reserved one; afterwards the console has its cores back. Linux with 2+ cores."""

import json
import os
import subprocess
import sys

import pytest

from console.history import HistoryStore, HistoryWriter
from console.run import partition
from console.run.session import RunSession
from engines import cores
from engines.spec import RunSpec

pytestmark = pytest.mark.skipif(cores.available() is not None or len(cores.physical_cores(cores.allowed(0))) < 2,
                                reason="needs Linux affinity and at least 2 physical cores")


def _affinity(pid):
    return sorted(os.sched_getaffinity(pid))


def _threads(pid):
    return {int(tid): _affinity(int(tid)) for tid in os.listdir(f"/proc/{pid}/task")}


def test_a_partitioned_run_keeps_the_worker_and_the_console_apart(tmp_path):
    before = _affinity(0)
    plan = partition.plan(1)
    assert plan.confined
    seen = {}

    def listener(event):
        if event.get("type") == "phase" and event["phase"] == "measuring" and "worker" not in seen:
            pid = session._worker.pid
            seen["worker"] = _threads(pid)
            seen["console"] = _threads(os.getpid())
            seen["sampler"] = _affinity(session._hub.pid)

    writer = HistoryWriter.open(tmp_path / "h.db")
    try:
        session = RunSession(RunSpec(duration_s=0.6, warmup_s=0.1), writer, listener=listener, partition=plan)
        session.start()
        record = session.wait(180)
    finally:
        writer.close()
    assert record is not None and record["status"] == "completed"
    worker, console = list(plan.worker), list(plan.console)
    assert seen["worker"] and all(mask == worker for mask in seen["worker"].values())
    assert all(mask == console for mask in seen["console"].values())  # every thread of the console
    assert seen["sampler"] == console
    assert _affinity(0) == before  # the console has its cores back
    stored = record["environment"]["partition"]
    assert stored["confined"] and stored["worker_cpus"] == worker and stored["console_cpus"] == console
    assert stored["worker_actual"] == worker
    assert stored["applied"] == {"console": "applied", "sampler": "applied", "worker": "applied"}
    assert record["summary"]["partition"] == stored
    assert record["environment"]["engine"]["threads"] == len(cores.physical_cores(plan.worker))  # "auto"
    assert "the worker's cores" in record["environment"]["engine"]["threads_from"]
    figure = record["summary"]["console_cpu"]
    assert figure["percent_of_core"] is not None and figure["wall_s"] > 0
    with HistoryStore(tmp_path / "h.db") as store:
        assert store.get_run(record["run_id"])["environment"]["partition"]["worker_cpus"] == worker


def test_the_cli_takes_the_same_partition_and_prints_it(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "LABCONSOLE_DB"}
    done = subprocess.run([sys.executable, "-m", "console", "run", "--model", "mlp", "--duration", "0.5",
                           "--warmup", "0.1", "--console-cores", "1", "--json", "--db", str(tmp_path / "h.db")],
                          capture_output=True, text=True, timeout=180, env=env)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["partition"]["confined"] and report["partition"]["worker_cpus"] == list(partition.plan(1).worker)
    assert report["console_cpu"]["percent_of_core"] is not None
    refused = subprocess.run([sys.executable, "-m", "console", "run", "--console-cores", "-1"],
                             capture_output=True, text=True, timeout=60, env=env)
    assert refused.returncode == 2 and "--console-cores" in refused.stderr


def test_the_windows_workspace_partitions_its_runs_and_its_warm_spare(tmp_path, monkeypatch):
    """The window's path: Workspace.open plans one reserved core, its spare starts on the worker cores, and a run
    that takes the spare records the partition."""
    import time

    from console.ui.workspace import Workspace

    monkeypatch.delenv(partition.ENV, raising=False)
    workspace = Workspace.open(tmp_path / "h.db", telemetry_hz=None, warm_workers=True)
    try:
        plan = workspace.partition
        assert plan.confined and plan.requested == 1 and workspace.session_options()["partition"] is plan
        workspace.pool.prepare("torch")
        spare = workspace.pool._spares["torch"].process
        assert _affinity(spare.pid) == list(plan.worker)
        deadline = time.monotonic() + 120
        while workspace.pool.states().get("torch") != "warm":
            assert time.monotonic() < deadline, "the spare never became ready"
            time.sleep(0.05)
        assert all(mask == list(plan.worker) for mask in _threads(spare.pid).values())  # its engine's threads too
        session = RunSession(RunSpec(duration_s=0.3, warmup_s=0.0), workspace.writer, **workspace.session_options())
        session.start()
        record = session.wait(180)
    finally:
        workspace.close()
    assert record["status"] == "completed" and record["environment"]["worker_start"] == "warm"
    assert record["environment"]["partition"]["worker_actual"] == list(plan.worker)


def test_the_window_variable_turns_the_partition_off(tmp_path, monkeypatch):
    from console.ui.workspace import Workspace

    monkeypatch.setenv(partition.ENV, "0")
    workspace = Workspace.open(tmp_path / "h.db", telemetry_hz=None)
    try:
        assert not workspace.partition.confined and "no partition asked" in workspace.partition.reason
    finally:
        workspace.close()


def test_compare_says_when_two_runs_differ_in_their_partition(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "LABCONSOLE_DB"}
    db = str(tmp_path / "h.db")
    ids = []
    for cores_asked in ("1", "0"):
        done = subprocess.run([sys.executable, "-m", "console", "run", "--model", "mlp", "--duration", "0.4",
                               "--warmup", "0.1", "--console-cores", cores_asked, "--json", "--db", db],
                              capture_output=True, text=True, timeout=180, env=env)
        assert done.returncode == 0, done.stderr
        ids.append(json.loads(done.stdout)["run_id"])
    done = subprocess.run([sys.executable, "-m", "console", "compare", *ids, "--db", db],
                          capture_output=True, text=True, timeout=120, env=env)
    assert "the runs differ in their core partition" in done.stdout, done.stdout + done.stderr
    as_json = subprocess.run([sys.executable, "-m", "console", "compare", *ids, "--json", "--db", db],
                             capture_output=True, text=True, timeout=120, env=env)
    assert json.loads(as_json.stdout)["partition"]["same"] is False


def test_a_run_that_fails_to_start_gives_the_console_its_cores_back(tmp_path, monkeypatch):
    import console.run.session as session_module

    class BrokenHub:
        def __init__(self, **_):
            pass

        def start(self):
            raise OSError("the sampler could not be spawned")

    monkeypatch.setattr(session_module, "TelemetryHub", BrokenHub)
    before = _affinity(0)
    writer = HistoryWriter.open(tmp_path / "h.db")
    try:
        session = RunSession(RunSpec(duration_s=0.6, warmup_s=0.1), writer, partition=partition.plan(1))
        with pytest.raises(OSError, match="sampler could not be spawned"):
            session.start()
    finally:
        writer.close()
    assert _affinity(0) == before
    assert partition.Hold._holders == 0  # a later run's hold releases again
