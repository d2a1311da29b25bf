"""Real DDP ranks: two gloo processes on this machine train the catalog mlp through engines.worker.run_spec, as
a worker would; a straggler injected on the last rank shows in its forward time; one rank gives the no-DDP
baseline; a rank that dies fails the run with its number and step, leaving no rank behind. Small model, few
steps: behaviour, not speed."""

from __future__ import annotations

import os
import statistics
import time

import psutil
import pytest

torch = pytest.importorskip("torch")
dist = pytest.importorskip("torch.distributed")
if not dist.is_available() or not dist.is_gloo_available():
    pytest.skip("this torch has no gloo backend", allow_module_level=True)

from engines.ddp.plan import STEP_KEYS  # noqa: E402
from engines.worker import run_spec  # noqa: E402

pytestmark = pytest.mark.timeout(120) if hasattr(pytest.mark, "timeout") else []
PARAMS = {"in_features": 64, "hidden": 256, "layers": 2, "out_features": 10}


def run(ranks, batch=8, iterations=20, profile_iterations=None, **torch_options):
    spec = {"model": "mlp", "mode": "training", "batch": batch, "iterations": iterations, "warmup_s": 0.05,
            "profile_iterations": profile_iterations, "model_params": PARAMS,
            "engine_options": {"torch": {"ranks": ranks, **torch_options}}}
    events = []
    run_spec(spec, lambda event: events.append({**event, "_at": time.monotonic()}))
    return events


def the(events, kind):
    found = [e for e in events if e["type"] == kind]
    assert found, [e.get("message") or e["type"] for e in events]
    return found


def block_warmup(events):
    return the(events, "result")[0]["warmup_iterations"] - 3


def rank_spawns():
    return [p for p in psutil.Process().children(recursive=True) if "spawn_main" in " ".join(p.cmdline())]


@pytest.fixture(scope="module")
def two_ranks():
    return run(2, inject_straggler_ms=30.0, grad_accum=2)  # 2 micro-batches of 2: the first under no_sync


def test_two_ranks_emit_the_run_events_in_order_with_one_latency_per_measured_step(two_ranks):
    kinds = [e["type"] if e["type"] != "phase" else e["phase"] for e in two_ranks]
    order = [k for k in kinds if k in ("hello", "loading", "loaded", "warmup", "measuring", "finishing", "result")]
    assert order == ["hello", "loading", "loaded", "warmup", "measuring", "finishing", "result"], kinds
    assert kinds.index("measuring") < kinds.index("latencies") < kinds.index("result")
    latencies = [x for e in the(two_ranks, "latencies") for x in e["latency_ns"]]
    assert len(latencies) == 20 and all(x > 0 for x in latencies)
    facts = the(two_ranks, "loaded")[0]["details"]["ddp"]
    assert facts["ranks"] == 2 and facts["backend"] == "gloo" and len(set(facts["rank_pids"])) == 2
    assert facts["per_rank_batch"] == 4 and facts["global_batch"] == 8 and facts["micro_batches"] == 2
    assert not rank_spawns()


def test_every_rank_times_every_part_and_the_gradients_cross_in_buckets(two_ranks):
    result = the(two_ranks, "result")[0]
    block = result["ddp"]
    assert block["backend"] == "gloo" and block["ranks"] == 2 and block["placement"] == "local"
    assert sum(block["bucket_bytes"]) == block["grad_bytes"] > 0
    for out in block["ranks_out"]:
        steps = out["steps"]
        assert set(steps) == set(STEP_KEYS) and all(len(v) == 20 for v in steps.values())
        for i in range(20):
            assert steps["backward_compute_s"][i] <= steps["backward_s"][i]
            assert steps["comm_s"][i] > 0 and 0 <= steps["exposed_comm_s"][i] <= steps["comm_busy_s"][i] + 1e-9
            # backward = its compute, then the all-reduce it waited for, then DDP's copy-back: nothing counted twice
            assert steps["grad_copy_s"][i] >= 0
            assert (steps["backward_compute_s"][i] + steps["exposed_comm_s"][i] + steps["grad_copy_s"][i]
                    <= steps["backward_s"][i] + 1e-9)
            assert steps["step_s"][i] >= steps["forward_s"][i] + steps["backward_s"][i]
    latencies = [x for e in the(two_ranks, "latencies") for x in e["latency_ns"]]
    slowest = [max(out["steps"]["step_s"][i] for out in block["ranks_out"]) for i in range(20)]
    assert latencies == [int(s * 1e9) for s in slowest]
    assert result["iterations"] == 20 and result["batch"] == 8
    assert result["samples_per_s"] == pytest.approx(8 * 20 / result["measured_s"], rel=1e-6)
    assert sum(slowest) <= result["measured_s"] * 1.05
    assert block["probe"]["rows"] and all(r["busbw_gbs"] > 0 for r in block["probe"]["rows"])
    assert block["breakdown"] is not None and block["prediction"]["predicted_s"] > 0


def test_the_injected_straggler_slows_the_last_ranks_forward_by_its_delay(two_ranks):
    ranks_out = the(two_ranks, "result")[0]["ddp"]["ranks_out"]
    assert the(two_ranks, "result")[0]["ddp"]["injected"] == {"rank": 1, "ms": 30.0}
    gap = statistics.median(ranks_out[1]["steps"]["forward_s"]) - statistics.median(ranks_out[0]["steps"]["forward_s"])
    assert 0.025 <= gap <= 0.045, gap
    assert min(ranks_out[1]["steps"]["injected_s"]) >= 0.030 and max(ranks_out[0]["steps"]["injected_s"]) == 0
    straggler = the(two_ranks, "result")[0]["ddp"]["breakdown"]["straggler"]  # the rank records let it be named
    assert straggler["rank"] == 1 and straggler["named"] and 0.025 <= straggler["delay_s"] <= 0.045


def test_one_rank_has_no_group_and_no_communication_and_profiles_on_request():
    events = run(1, batch=4, iterations=5, profile_iterations=2)
    block = the(events, "result")[0]["ddp"]
    profile = the(events, "profile")[0]  # analyze's --profile-iterations: rank 0's op table, after measuring
    assert profile["iterations"] == 2 and profile["ops"] and any("addmm" in op["op"].lower() for op in profile["ops"])
    if profile["trace_path"]:
        os.unlink(profile["trace_path"])  # the console moves it beside the history; here nobody does
    kinds = [e.get("phase", e["type"]) for e in events if e["type"] in ("phase", "profile", "result")]
    assert kinds[-5:] == ["measuring", "profiling", "profile", "finishing", "result"]
    assert block["ranks_out"][0]["steps_total"] == 3 + block_warmup(events) + 5 + 3
    assert block["backend"] == "none" and block["bucket_bytes"] == [] and block["probe"] is None
    steps = block["ranks_out"][0]["steps"]
    assert steps["comm_s"] == [0.0] * 5 and steps["backward_compute_s"] == steps["backward_s"]
    assert len([x for e in the(events, "latencies") for x in e["latency_ns"]]) == 5


def test_a_rank_that_dies_fails_the_run_naming_it_and_its_step(monkeypatch):
    monkeypatch.setenv("LABCONSOLE_TEST_DDP_DIE", "1:5")
    events = run(2, iterations=200)
    error = the(events, "error")[0]
    assert error["kind"] == "runtime" and "rank 1 exited with code 9" in error["message"]
    assert "after measured step 4 of 200" in error["message"], error["message"]
    measuring = next(e for e in events if e["type"] == "phase" and e["phase"] == "measuring")
    assert error["_at"] - measuring["_at"] < 10.0
    assert not [e for e in events if e["type"] == "result"]
    assert not rank_spawns()
