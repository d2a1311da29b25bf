"""Running sweeps (console.sweep.running) without a worker: a sweep's status from its points'.

The sweeps that run real points are in tests/e2e/test_sweep_e2e.py."""

from __future__ import annotations

from console.sweep import sweep_status


def test_sweep_status():
    done, failed = {"status": "completed"}, {"status": "failed"}
    assert sweep_status([done, done]) == "completed"
    assert sweep_status([done, failed]) == "partial"
    assert sweep_status([failed]) == "failed"
    assert sweep_status([done, {"status": "not run"}], stopped=True) == "cancelled"
    assert sweep_status([done, {"status": "cancelled"}]) == "cancelled"
