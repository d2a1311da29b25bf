"""What every source shares: the slow-group grid (Every), per-source periods in the sampler, the registry."""

from __future__ import annotations

import multiprocessing
import threading
import time

from console.telemetry import SOURCES, MetricInfo, Source, describe_sources, sampler_main
from console.telemetry.base import Every
from console.telemetry.catalog import undeclared
from console.telemetry.registry import load_source_class

MS = 1_000_000


def by_metric(rows):
    return {r[2]: r for r in rows}


def test_every_keeps_its_grid_despite_late_ticks():
    e = Every(1.0, 100 * MS)
    fired = [k for k in range(31) if e.due(k * 100 * MS + (3 - k % 4) * MS)]
    assert fired == [0, 10, 20, 30]
    # a long gap re-anchors instead of bursting
    assert e.due(10_000 * MS) and not e.due(10_100 * MS)


# ---- per-source period in the sampler


class _Fast(Source):
    name = "fast"

    def metrics(self):
        return [MetricInfo("fast.x", "1", "every tick")]

    def sample(self, t_ns):
        return [(t_ns, self.name, "fast.x", 0.0, "1", "measured")]


class _Slow(Source):
    name = "slow1hz"
    period_s = 0.5

    def metrics(self):
        return [MetricInfo("slow.x", "1", "twice a second", period_s=0.5)]

    def sample(self, t_ns):
        return [(t_ns, self.name, "slow.x", 0.0, "1", "measured")]


def test_sampler_honours_source_period(monkeypatch):
    monkeypatch.setitem(SOURCES, "fast", _Fast)
    monkeypatch.setitem(SOURCES, "slow1hz", _Slow)
    parent, child = multiprocessing.Pipe(duplex=True)
    th = threading.Thread(target=sampler_main, args=(child, 20.0, ["fast", "slow1hz"]), daemon=True)
    th.start()
    rows = []
    try:
        first = parent.recv()
        assert {d["name"]: d["period_s"] for d in first["sources"]} == {"fast": None, "slow1hz": 0.5}
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and sum(r[2] == "slow.x" for r in rows) < 4:
            if parent.poll(0.1):
                rows += parent.recv()["rows"]
        parent.send({"cmd": "stop"})
        th.join(3)
    finally:
        parent.close()
    slow = [r[0] for r in rows if r[2] == "slow.x"]
    fast = [r[0] for r in rows if r[2] == "fast.x"]
    gaps = [(b - a) / 1e6 for a, b in zip(slow, slow[1:], strict=False)]
    assert len(gaps) >= 3 and all(440 < g < 700 for g in gaps), gaps
    assert len(fast) >= 8 * len(slow) - 10


# ---- registry: every source says what it is and why not


def test_every_source_is_registered_and_described():
    assert set(SOURCES) >= {"psutil", "nvml", "rapl", "amdsmi", "estimated"}
    assert list(SOURCES)[0] == "psutil"
    for desc in describe_sources():
        assert set(desc) >= {"name", "available", "reason", "metrics", "unavailable_metrics", "period_s"}
        assert desc["available"] or desc["reason"], desc["name"]  # unavailable always says why
        for m in desc["metrics"]:
            assert set(m) >= {"name", "unit", "method", "description"}
            assert m["method"] in ("measured", "integrated", "estimated")
        infos = [MetricInfo(**m) for m in desc["metrics"]]
        assert undeclared(load_source_class(desc["name"]), infos) == []  # drawn and counted as declared
