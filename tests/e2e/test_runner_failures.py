"""A worker that crashes, raises, hangs, lies or is cancelled ends as a clean outcome with a clear message."""

import os
import signal
import subprocess
import sys
import textwrap
import time

import faulty_workers
import psutil
import pytest

from console.run.runner import WorkerRun
from engines.spec import RunLimits, RunSpec


def run_with(entry=None, spec=None, timeout=60.0, act=None):
    events = []
    spec = spec or RunSpec(duration_s=30, limits=RunLimits(load_timeout_s=30, stall_timeout_s=2))
    kwargs = {"entry": entry} if entry else {}
    run = WorkerRun(spec, events.append, lambda outcome: None, **kwargs)
    run.start()
    if act:
        act(run, events)
    outcome = run.wait(timeout)
    assert outcome is not None, "the runner never reported an outcome"
    return outcome, events, run


def test_segfault_is_named_with_signal_and_phase():
    outcome, _, _ = run_with(faulty_workers.segfault_in_warmup)
    assert outcome.status == "failed"
    assert outcome.message == "worker killed by SIGSEGV during warm-up"
    assert outcome.exitcode == -signal.SIGSEGV


def test_uncaught_exception_exit_code_is_reported():
    outcome, _, _ = run_with(faulty_workers.raises_uncaught)
    assert outcome.status == "failed"
    assert "exited with code 1" in outcome.message and "start-up" in outcome.message


def test_hang_is_caught_by_the_watchdog_and_the_worker_is_stopped():
    started = time.monotonic()
    outcome, _, run = run_with(faulty_workers.hangs_in_warmup)
    assert outcome.status == "failed"
    assert "stopped responding" in outcome.message and "warm-up" in outcome.message
    assert "--stall-timeout S" in outcome.message  # the flag the user has, not the spec path
    assert time.monotonic() - started < 20
    assert not psutil.pid_exists(run.pid) or psutil.Process(run.pid).status() == psutil.STATUS_ZOMBIE


def test_malformed_event_stops_the_worker():
    outcome, _, _ = run_with(faulty_workers.sends_garbage)
    assert outcome.status == "failed"
    assert "malformed event" in outcome.message and "lacks pid, versions" in outcome.message


def test_cancel_escalates_when_the_worker_ignores_it():
    def cancel_soon(run, events):
        time.sleep(1.0)
        run.cancel()

    outcome, _, _ = run_with(faulty_workers.ignores_cancel, act=cancel_soon)
    assert outcome.status == "cancelled"
    assert "did not stop" in outcome.message and "terminated" in outcome.message


def test_real_worker_reports_a_load_error_with_its_reason():
    spec = RunSpec(target="cuda:0", duration_s=1)
    outcome, events, _ = run_with(spec=spec)
    assert outcome.status == "failed"
    assert outcome.error["kind"] == "load"
    assert "could not load mlp on torch/cuda:0" in outcome.message
    assert "during model loading" in outcome.message
    assert [e["type"] for e in events][:2] == ["hello", "phase"]


def test_real_worker_cancel_keeps_measurements_up_to_the_stop():
    def cancel_when_measuring(run, events):
        deadline = time.monotonic() + 60
        while run.phase != "measuring" and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.5)
        run.cancel()

    started = time.monotonic()
    outcome, events, _ = run_with(spec=RunSpec(duration_s=60, warmup_s=0.1), act=cancel_when_measuring)
    assert outcome.status == "cancelled"
    assert outcome.result["iterations"] > 0
    measured = sum(len(e["latency_ns"]) for e in events if e["type"] == "latencies")
    assert measured == outcome.result["iterations"]
    assert time.monotonic() - started < 45


@pytest.mark.skipif(sys.platform == "win32", reason="uses SIGKILL")
def test_worker_exits_when_the_console_dies(tmp_path):
    script = textwrap.dedent("""
        import sys, time
        from console.run.runner import WorkerRun
        from engines.spec import RunSpec
        run = WorkerRun(RunSpec(duration_s=120, warmup_s=0.1), lambda e: None, lambda o: None)
        run.start()
        print(run.pid, flush=True)
        time.sleep(600)
    """)
    console = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    worker_pid = int(console.stdout.readline())
    assert psutil.pid_exists(worker_pid)
    os.kill(console.pid, signal.SIGKILL)
    console.wait()
    deadline = time.monotonic() + 15
    while psutil.pid_exists(worker_pid) and time.monotonic() < deadline:
        try:
            if psutil.Process(worker_pid).status() == psutil.STATUS_ZOMBIE:
                break
        except psutil.NoSuchProcess:
            break
        time.sleep(0.1)
    alive = psutil.pid_exists(worker_pid) and psutil.Process(worker_pid).status() != psutil.STATUS_ZOMBIE
    assert not alive, "the worker outlived the console"
