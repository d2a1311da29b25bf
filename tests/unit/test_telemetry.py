"""Telemetry foundation: the registry, and the sampler process (shared clock, rate, lifetime, CPU cost)."""

from __future__ import annotations

import multiprocessing
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import psutil
import pytest

from console.telemetry import (
    SOURCES,
    MetricInfo,
    Sampler,
    Source,
    create_sources,
    describe_sources,
    sampler_main,
    validate_rate,
)

REPO = Path(__file__).resolve().parents[2]


def _wait_gone(pid: int, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                return True  # dead; only waiting for a reaper
        except psutil.NoSuchProcess:
            return True
        time.sleep(0.05)
    return False


# ---- registry


def test_registry_create_and_describe():
    assert "psutil" in SOURCES
    srcs = create_sources()
    assert [s.name for s in srcs] == list(SOURCES)
    with pytest.raises(ValueError, match="known"):
        create_sources(["nope"])
    (desc,) = describe_sources(["psutil"])
    assert desc["name"] == "psutil" and desc["available"] is True and desc["reason"] == ""
    units = {m["name"]: m["unit"] for m in desc["metrics"]}
    assert units["cpu.util"] == "%" and units["mem.used"] == "GiB"
    assert isinstance(desc["unavailable_metrics"], dict)


class _BrokenOpen(Source):
    name = "broken_open"

    def open(self):
        raise RuntimeError("no device")

    def metrics(self):
        return []

    def sample(self, t_ns):
        return []


class _Unavailable(Source):
    name = "unavailable"

    def available(self):
        return False, "driver not loaded"

    def metrics(self):
        return [MetricInfo("gpu.power", "W", "board power")]

    def unavailable_metrics(self):
        return {"gpu.energy": "needs Volta or newer"}

    def sample(self, t_ns):
        raise AssertionError("an unavailable source must not be sampled")


class _FailsOnThirdSample(Source):
    name = "flaky"

    def __init__(self):
        self.n = 0
        self.watched = []

    def metrics(self):
        return [MetricInfo("flaky.x", "1", "a counter", "estimated")]

    def watch_pid(self, pid):
        self.watched.append(pid)

    def sample(self, t_ns):
        self.n += 1
        if self.n == 3:
            raise OSError("device lost")
        return [(t_ns, self.name, "flaky.x", float(self.n), "1", "estimated")]


def test_describe_reports_reasons(monkeypatch):
    monkeypatch.setitem(SOURCES, "broken_open", _BrokenOpen)
    monkeypatch.setitem(SOURCES, "unavailable", _Unavailable)
    monkeypatch.setitem(SOURCES, "missing", "console.telemetry.no_such_module:Nope")
    desc = {d["name"]: d for d in describe_sources(["broken_open", "unavailable", "missing"])}
    assert desc["broken_open"]["available"] is False and "no device" in desc["broken_open"]["reason"]
    assert desc["unavailable"]["reason"] == "driver not loaded"
    assert desc["unavailable"]["unavailable_metrics"] == {"gpu.energy": "needs Volta or newer"}
    assert desc["missing"]["available"] is False and "cannot load" in desc["missing"]["reason"]


def test_metricinfo_rejects_unknown_method():
    with pytest.raises(ValueError, match="measured"):
        MetricInfo("x", "W", "x", "guessed")


# ---- sampler loop, in-process (fast; exercises schedule, control messages, failure handling)


def test_sampler_main_in_thread(monkeypatch):
    monkeypatch.setitem(SOURCES, "flaky", _FailsOnThirdSample)
    monkeypatch.setitem(SOURCES, "unavailable", _Unavailable)
    parent, child = multiprocessing.Pipe(duplex=True)
    th = threading.Thread(target=sampler_main, args=(child, 50.0, ["psutil", "flaky", "unavailable"]))
    th.start()
    try:
        first = parent.recv()
        assert first["type"] == "sources"
        avail = {d["name"]: d["available"] for d in first["sources"]}
        assert avail == {"psutil": True, "flaky": True, "unavailable": False}
        parent.send({"cmd": "watch", "pid": os.getpid()})
        msgs = []
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and not any(
                m["type"] == "sources" for m in msgs):
            if parent.poll(0.1):
                msgs.append(parent.recv())
        again = [m for m in msgs if m["type"] == "sources"]
        assert again, "a failing source must be reported"
        flaky = next(d for d in again[0]["sources"] if d["name"] == "flaky")
        assert flaky["available"] is False and "device lost" in flaky["reason"]
        time.sleep(0.3)
        parent.send({"cmd": "stop"})
        th.join(3)
        assert not th.is_alive()
        try:
            while parent.poll(0.2):
                msgs.append(parent.recv())
        except EOFError:  # the child closed its end after the final flush
            pass
    finally:
        parent.close()
        th.join(3)
    rows = [r for m in msgs if m["type"] == "samples" for r in m["rows"]]
    assert [r[3] for r in rows if r[2] == "flaky.x"] == [1.0, 2.0]  # dropped after its failure
    assert any(r[2] == "worker.rss" for r in rows)  # the watch command reached the source
    ts = sorted({r[0] for r in rows if r[2] == "cpu.util"})
    assert len(ts) >= 10  # psutil kept going after flaky failed


def test_sampler_main_exits_when_pipe_closes():
    parent, child = multiprocessing.Pipe(duplex=True)
    th = threading.Thread(target=sampler_main, args=(child, 10.0, ["psutil"]), daemon=True)
    th.start()
    assert parent.recv()["type"] == "sources"
    parent.close()
    th.join(3)
    assert not th.is_alive()


# ---- Sampler process


@pytest.mark.parametrize("rate", [0.0, 0.49, 50.1, -1, float("nan"), "fast"])
def test_rate_out_of_range(rate):
    with pytest.raises(ValueError, match=r"between 0\.5 and 50 Hz"):
        Sampler(rate_hz=rate, on_samples=lambda rows: None)
    with pytest.raises(ValueError, match=r"between 0\.5 and 50"):
        validate_rate(rate)


def test_unknown_source_name():
    with pytest.raises(ValueError, match="psutil"):
        Sampler(sources=["nvml_typo"], on_samples=lambda rows: None)


def test_sampler_end_to_end_shared_clock():
    rows, descs = [], []
    lock = threading.Lock()

    def on_samples(batch):
        with lock:
            rows.extend(batch)

    sampler = Sampler(rate_hz=20.0, on_samples=on_samples, on_sources=descs.append)
    before = time.perf_counter_ns()
    sampler.start()
    try:
        assert sampler.is_alive()
        sampler.watch(os.getpid())
        time.sleep(2.5)  # spawn start-up (~0.5 s) + >= 1.5 s of sampling
    finally:
        sampler.stop()
    after = time.perf_counter_ns()
    assert not sampler.is_alive()

    assert descs and descs[0][0]["name"] == "psutil" and descs[0][0]["available"]
    assert sampler.sources == descs[-1]
    cpu = [r for r in rows if r[2] == "cpu.util"]
    ts = [r[0] for r in cpu]
    assert ts == sorted(ts) and len(set(ts)) == len(ts)
    span_s = (ts[-1] - ts[0]) / 1e9
    assert span_s > 1.0
    rate = (len(ts) - 1) / span_s
    assert 10 <= rate <= 40, rate
    # one clock: the child's timestamps lie inside this process's before/after readings
    assert all(before < r[0] < after for r in rows)
    assert any(r[2] == "worker.rss" for r in rows)


def test_sampler_stop_ends_process():
    sampler = Sampler(rate_hz=10.0, on_samples=lambda rows: None)
    sampler.start()
    pid = sampler.pid
    assert psutil.pid_exists(pid)
    t0 = time.monotonic()
    sampler.stop()
    assert time.monotonic() - t0 < 2.5
    assert not sampler.is_alive() and _wait_gone(pid, 2)
    sampler.stop()  # idempotent


def test_sampler_exits_when_parent_is_killed():
    helper = textwrap.dedent("""
        import sys, time
        from console.telemetry import Sampler
        s = Sampler(rate_hz=10.0, on_samples=lambda rows: None)
        s.start()
        print(s.pid, flush=True)
        time.sleep(60)
    """)
    proc = subprocess.Popen([sys.executable, "-c", helper], cwd=REPO, stdout=subprocess.PIPE, text=True)
    try:
        pid = int(proc.stdout.readline())
        assert psutil.pid_exists(pid)
        time.sleep(0.5)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(5)
        assert _wait_gone(pid, 5), "sampler outlived its parent"
    finally:
        proc.kill()
        proc.wait(5)


def test_sampler_cpu_cost_is_low():
    """At 10 Hz the sampler process should use well under a few % of one core (target < 1 %)."""
    sampler = Sampler(rate_hz=10.0, on_samples=lambda rows: None)
    sampler.start()
    try:
        time.sleep(1.0)  # let spawn + imports finish
        p = psutil.Process(sampler.pid)
        c0, t0 = p.cpu_times(), time.monotonic()
        time.sleep(2.0)
        c1, t1 = p.cpu_times(), time.monotonic()
    finally:
        sampler.stop()
    share = ((c1.user + c1.system) - (c0.user + c0.system)) / (t1 - t0)
    assert share < 0.05, f"sampler used {share:.1%} of a core"


class _Slow(Source):
    name = "slow"

    def metrics(self):
        return [MetricInfo("slow.x", "1", "takes 250 ms to read")]

    def sample(self, t_ns):
        time.sleep(0.25)
        return [(t_ns, self.name, "slow.x", 0.0, "1", "measured")]


def test_sampler_skips_ahead_when_late(monkeypatch):
    """A tick that overruns by more than a period skips the missed ticks (no burst) and keeps the grid."""
    monkeypatch.setitem(SOURCES, "slow", _Slow)
    parent, child = multiprocessing.Pipe(duplex=True)
    th = threading.Thread(target=sampler_main, args=(child, 10.0, ["slow"]), daemon=True)
    th.start()
    rows = []
    try:
        assert parent.recv()["type"] == "sources"
        deadline = time.monotonic() + 10
        while len(rows) < 6 and time.monotonic() < deadline:
            if parent.poll(0.1):
                rows += parent.recv()["rows"]
        parent.send({"cmd": "stop"})
        th.join(3)
    finally:
        parent.close()
    ts = [r[0] for r in rows]
    gaps_ms = [(b - a) / 1e6 for a, b in zip(ts, ts[1:], strict=False)]
    assert len(gaps_ms) >= 4
    assert all(270 < g < 360 for g in gaps_ms), gaps_ms  # 300 ms: the next free grid point, never < 250
