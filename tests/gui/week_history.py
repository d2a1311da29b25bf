"""A week of stored runs for the History filters and the Compare page, written straight into a HistoryStore.

Latencies are drawn (gamma noise around a median), not measured: these tests check what the window shows, not
how fast anything is. One configuration (mlp, batch 1) runs twice a day for a week and gets 10% slower half way,
when the recorded torch version changes; a second configuration (batch 4) has a few runs, one invalid; one run
failed. Each run's started_at is moved back in time after it is stored, so the series spans the week.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import numpy as np

from console.history import HistoryStore
from engines.spec import RunSpec

ITERATIONS = 800
STEP_AT = 7  # runs 0..6 at the old speed, 7.. 10% slower
SERIES_RUNS = 14


def spec(batch: int = 1) -> dict[str, Any]:
    return RunSpec(model="mlp", engine="torch", target="cpu", batch=batch, threads=2).to_dict()


def store_run(store: HistoryStore, run_spec: dict[str, Any], started: datetime, median_ms: float, rng,
              valid: bool = True, torch_version: str = "2.3.1", status: str = "completed",
              tags: list[str] | None = None, note: str | None = None, energy: float | None = None) -> str:
    run_id = store.create_run(run_spec)
    t0 = int(rng.integers(10**12, 10**13))
    latency = median_ms * rng.gamma(40.0, 1 / 40.0, ITERATIONS) / 0.9917  # the gamma(40) median is 0.9917
    t_ns = t0 + 2 * 10**9 + np.cumsum((latency * 1e6).astype(np.int64))
    store.add_latencies(run_id, t_ns, (latency * 1e6).astype(np.int64))
    ticks = np.arange(0, 40) * 10**8 + t0
    store.add_samples(run_id, [(int(t), "psutil", "cpu.util", float(55 + 10 * np.sin(k / 4) + rng.normal(0, 2)),
                                "%", "measured") for k, t in enumerate(ticks)])
    store.add_samples(run_id, [(int(t), "psutil", "worker.rss", 0.4 + 0.01 * k, "GiB", "measured")
                               for k, t in enumerate(ticks)])
    summary: dict[str, Any] = {
        "iterations": ITERATIONS, "valid": valid, "t0_ns": t0,
        "latency_ms": {"p50": float(np.median(latency)), "p99": float(np.percentile(latency, 99)),
                       "mean": float(latency.mean())},
        "throughput_per_s": 1000.0 / float(latency.mean()) * run_spec["batch"],
        "invalid_reasons": [] if valid else [{"detail": "the medians of the last 3 windows differ by 12%"}],
    }
    if energy is not None:
        summary["energy"] = {"joules_per_inference": energy, "method": "measured"}
    environment = {"engine": {"versions": {"torch": torch_version}}}
    if status == "completed":
        store.finish_run(run_id, "completed", summary=summary, environment=environment)
    else:
        store.finish_run(run_id, status, error="the worker exited with code 1", environment=environment)
    stamp = started.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    store.db.execute("UPDATE runs SET started_at = ? WHERE run_id = ?", [stamp, run_id])
    store.commit()
    if tags:
        store.set_tags(run_id, tags)
    if note:
        store.set_note(run_id, note)
    return run_id


def make_week(path: Path, end: datetime | None = None, seed: int = 11) -> dict[str, Any]:
    """Write the week; returns {"series": [ids oldest first], "batch4": [...], "invalid": id, "failed": id,
    "store": the open HistoryStore (close it)}."""
    rng = np.random.default_rng(seed)
    end = end or datetime.now(timezone.utc).replace(microsecond=0)
    start = end - timedelta(days=7)
    store = HistoryStore(path)
    series = []
    for i in range(SERIES_RUNS):
        slow = i >= STEP_AT
        series.append(store_run(
            store, spec(1), start + timedelta(hours=12 * i), (1.10 if slow else 1.0) * 1.2 * rng.normal(1, 0.01),
            rng, torch_version="2.4.0" if slow else "2.3.1", tags=["nightly"] if i % 2 == 0 else None,
            energy=0.002 * (1.1 if slow else 1.0)))
    batch4 = [store_run(store, spec(4), start + timedelta(hours=12 * i + 3), 3.1, rng, tags=["batch-sweep"])
              for i in (2, 6, 10)]
    invalid = store_run(store, spec(4), start + timedelta(hours=12 * 11 + 3), 3.4, rng, valid=False,
                        note="a browser was open")
    failed = store_run(store, spec(1), start + timedelta(hours=12 * 12 + 5), 1.2, rng, status="failed")
    return {"series": series, "batch4": batch4, "invalid": invalid, "failed": failed, "store": store,
            "start": start, "end": end}
