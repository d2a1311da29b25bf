"""The driver's side, with a fake launcher speaking the ranks' messages (no processes, no torch): latencies only
once every rank has reported a step, each the slowest rank's step time at rank 0's start; phases held until
every rank is loaded; cancel ends the run stored cancelled with the steps measured so far; a rank failure
before loading is a load error, after it a runtime error."""

from __future__ import annotations

import pytest

from engines.ddp import driver
from engines.ddp.plan import STEP_KEYS
from engines.spec import RunSpec


def spec(ranks=2):
    return RunSpec.from_dict({"model": "mlp", "mode": "training", "batch": 4, "iterations": 3,
                              "engine_options": {"torch": {"ranks": ranks}}}).validate()


def ready(rank):
    return ("ready", rank, {"host": "node", "device": "cpu", "pid": 100 + rank, "cores": [rank], "threads": 1,
                            "load_s": 1.0, "params": 10, "model_bytes": 40, "grad_bytes": 40, "details": {},
                            "data_method": "in memory", "torch": "2.x"})


def steps(rank, first, step_s, t0_ns):
    batch = {"first": first, "t0_ns": list(t0_ns), **{key: [0.001] * len(step_s) for key in STEP_KEYS}}
    batch["step_s"] = list(step_s)
    return ("steps", rank, batch)


def fake(messages, outputs=None, fail=None):
    def run_ranks(plan, progress, on_message):
        for message in messages:
            on_message(*message)
        if fail:
            raise RuntimeError(fail)
        return outputs

    return lambda plan: run_ranks


def out(rank):
    return {"rank": rank, "measured_s": 0.5, "bucket_bytes": [40], "steps_total": 6,
            "probe_times": {"40": [1e-4, 2e-4, 3e-4]}}


def events_of(monkeypatch, launcher, cancel_after=None):
    monkeypatch.setattr(driver, "_launcher", launcher)
    events = []
    driver.run_distributed(spec(), events.append,
                           lambda: cancel_after is not None and sum(e["type"] == "latencies" for e in events)
                           >= cancel_after)
    return events


def test_latencies_wait_for_every_rank_and_take_the_slowest(monkeypatch):
    messages = [ready(0), ("phase", 0, {"phase": "warmup", "warmup_steps": 2, "measured_steps": 3,
                                        "first_step_ms": 9.0}), ready(1),
                ("phase", 0, {"phase": "measuring", "t_ns": 5}),
                steps(0, 0, [0.10, 0.20], [1000, 2000]), steps(1, 0, [0.15], [1001]),
                steps(1, 1, [0.10, 0.30], [2001, 3001]), steps(0, 2, [0.25], [3000])]
    events = events_of(monkeypatch, fake(messages, [out(0), out(1)]))
    kinds = [e.get("phase", e["type"]) for e in events if e["type"] in ("phase", "loaded", "result")]
    assert kinds == ["loading", "loaded", "warmup", "measuring", "finishing", "result"]  # warm-up held for loaded
    shipped = [e for e in events if e["type"] == "latencies"]
    assert [e["latency_ns"] for e in shipped] == [[150_000_000], [200_000_000], [300_000_000]]
    assert [t for e in shipped for t in e["t_ns"]] == [1000, 2000, 3000]
    result = events[-1]
    assert result["iterations"] == 3 and result["warmup_iterations"] == 5 and result["first_inference_ms"] == 9.0
    assert result["samples_per_s"] == pytest.approx(4 * 3 / 0.5) and not result["cancelled"]
    rows = result["ddp"]["probe"]["rows"]
    assert rows[0]["size_bytes"] == 40 and rows[0]["time_us"] == pytest.approx(200.0)


def test_cancel_ends_the_ranks_and_keeps_the_measured_steps(monkeypatch):
    messages = [ready(0), ready(1), ("phase", 0, {"phase": "warmup", "warmup_steps": 0, "measured_steps": 9}),
                ("phase", 0, {"phase": "measuring", "t_ns": 5}),
                steps(0, 0, [0.1], [1000]), steps(1, 0, [0.1], [1000]), steps(0, 1, [0.1], [2000])]
    events = events_of(monkeypatch, fake(messages, None), cancel_after=1)
    result = events[-1]
    assert result["type"] == "result" and result["cancelled"] and result["iterations"] == 1
    assert result["ddp"]["probe"] is None and result["ddp"]["ranks_out"][0]["steps"]["step_s"] == [0.1]


@pytest.mark.parametrize(("messages", "kind"), [([ready(0)], "load"), ([ready(0), ready(1)], "runtime")])
def test_a_rank_failure_is_a_load_error_before_every_rank_loaded_and_runtime_after(monkeypatch, messages, kind):
    events = events_of(monkeypatch, fake(messages, fail="rank 1 exited with code 9 after measured step 4 of 9"))
    error = events[-1]
    assert error["type"] == "error" and error["kind"] == kind and "rank 1 exited with code 9" in error["message"]


def test_more_ranks_than_cores_is_a_spec_error_naming_the_fix(monkeypatch):
    monkeypatch.setattr(driver, "_worker_cores", lambda: [0])
    events = []
    driver.run_distributed(spec(), events.append, lambda: False)
    assert events[-1]["kind"] == "spec" and "2 ranks on 1 core: use --ranks 1" in events[-1]["message"]
