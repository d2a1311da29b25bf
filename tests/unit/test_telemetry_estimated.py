"""The estimated CPU and memory power model: TDP from the environment or the table, always labelled estimated."""

from __future__ import annotations

from collections import namedtuple

import psutil
import pytest

from console.telemetry.catalog import undeclared
from console.telemetry.estimated_source import ENV_TDP, EstimatedPowerSource, lookup_tdp


def by_metric(rows):
    return {r[2]: r for r in rows}


# ---- estimated power model

CpuTimes = namedtuple("CpuTimes", "user nice system idle iowait irq softirq steal guest guest_nice")


def _fake_times(monkeypatch, seq):
    it = iter(seq)
    monkeypatch.setattr(psutil, "cpu_times", lambda percpu=False: next(it))


def test_estimated_model_from_env(monkeypatch):
    monkeypatch.setenv(ENV_TDP, "200")
    # 10 s of CPU time elapse, 6 s busy, 4 s idle: u = 0.6
    _fake_times(monkeypatch, [CpuTimes(100, 0, 0, 100, 0, 0, 0, 0, 0, 0),
                              CpuTimes(105, 0, 1, 103, 1, 0, 0, 0, 0, 0)])
    src = EstimatedPowerSource(model_name="Mystery CPU")
    src.open()
    assert src.available() == (True, "")
    infos = {m.name: m for m in src.metrics()}
    assert infos["cpu.power.estimated"].method == "estimated" == infos["mem.power.estimated"].method
    assert "ESTIMATE" in infos["cpu.power.estimated"].description
    assert undeclared(EstimatedPowerSource, list(infos.values())) == []  # every metric has its metadata
    got = by_metric(src.sample(123))
    idle = 200 * 0.3
    assert got["cpu.power.estimated"][3] == pytest.approx(idle + (200 - idle) * 0.6)
    assert got["cpu.power.estimated"][5] == "estimated" and got["cpu.power.estimated"][1] == "estimated"
    mem_gib = psutil.virtual_memory().total / 2**30
    assert got["mem.power.estimated"][3] == pytest.approx(0.375 * mem_gib)


def test_estimated_unknown_cpu_is_unavailable(monkeypatch):
    monkeypatch.delenv(ENV_TDP, raising=False)
    src = EstimatedPowerSource(model_name="AMD EPYC")
    src.open()
    ok, why = src.available()
    assert not ok and ENV_TDP in why


def test_estimated_bad_env(monkeypatch):
    monkeypatch.setenv(ENV_TDP, "lots")
    src = EstimatedPowerSource(model_name="AMD EPYC 9654 96-Core Processor")
    src.open()
    ok, why = src.available()
    assert not ok and "lots" in why


def test_estimated_table_and_sockets(monkeypatch):
    monkeypatch.delenv(ENV_TDP, raising=False)
    assert lookup_tdp("Intel(R) Xeon(R) Gold 6248R CPU @ 3.00GHz") == 205  # longest match, not "6248"
    assert lookup_tdp("Intel(R) Xeon(R) Gold 6248 CPU @ 2.50GHz") == 150
    assert lookup_tdp("AMD EPYC 9654 96-Core Processor") == 360
    assert lookup_tdp("AMD EPYC") is None
    src = EstimatedPowerSource(model_name="AMD EPYC 9654 96-Core Processor", sockets=2)
    src.open()
    assert src.tdp_w == 720 and "2 socket" in src.tdp_origin
    monkeypatch.setenv(ENV_TDP, "999")
    by_caller = EstimatedPowerSource(tdp_w=150.0, model_name="x")
    by_caller.open()
    assert by_caller.tdp_w == 150.0 and by_caller.tdp_origin == "set by the caller"  # the argument wins
