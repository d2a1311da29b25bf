"""The DDP plan and the spec's --ranks checks: batch split, core split, the injected straggler on the last rank,
and every refusal naming the fix. No processes, no torch."""

from __future__ import annotations

import pytest

from engines.ddp import is_distributed
from engines.ddp.plan import STEP_KEYS, plan_for, split_cores
from engines.spec import RunSpec, SpecError


def spec_of(batch=8, target="cpu", scenario="single-stream", mode="training", **torch_options):
    torch = {"ranks": 2, **torch_options}
    return RunSpec.from_dict({"model": "mlp", "mode": mode, "batch": batch, "target": target, "scenario": scenario,
                              "engine_options": {"torch": torch}})


def test_strong_scaling_splits_the_global_batch_and_weak_multiplies_it():
    strong = plan_for(spec_of(batch=8, ranks=4, grad_accum=2).validate(), [0, 1, 2, 3])
    assert (strong["global_batch"], strong["per_rank_batch"], strong["micro_batches"], strong["micro_batch"]) == \
        (8, 2, 2, 1)
    weak = plan_for(spec_of(batch=6, ranks=2, scaling="weak").validate(), [0, 1])
    assert (weak["global_batch"], weak["per_rank_batch"], weak["micro_batch"]) == (12, 6, 6)
    assert weak["backend"] == "gloo" and weak["placement"] == "local" and weak["rank_devices"] == ["cpu", "cpu"]


def test_cores_are_split_evenly_and_a_remainder_is_left_unused():
    assert split_cores([3, 0, 1, 2, 4], 2) == [[0, 1], [2, 3]]
    plan = plan_for(spec_of(ranks=2).validate(), [0, 1, 2, 3, 4, 5])
    assert plan["rank_cores"] == [[0, 1, 2], [3, 4, 5]] and plan["threads_per_rank"] == 3
    assert plan_for(spec_of(ranks=2).validate(), None)["rank_cores"] is None  # affinity unreadable: not pinned


def test_more_ranks_than_cores_is_refused_with_the_rank_count_that_fits():
    with pytest.raises(RuntimeError, match=r"4 ranks on 2 cores: use --ranks 2"):
        plan_for(spec_of(batch=8, ranks=4).validate(), [0, 1])


def test_the_injected_straggler_is_the_last_rank_and_none_without_a_delay():
    plan = plan_for(spec_of(batch=12, ranks=3, inject_straggler_ms=30.0).validate(), [0, 1, 2])
    assert plan["inject"] == {"rank": 2, "ms": 30.0}
    assert plan_for(spec_of(batch=12, ranks=3).validate(), [0, 1, 2])["inject"] is None


def test_one_rank_has_no_group_and_cuda_ranks_take_consecutive_devices():
    assert plan_for(spec_of(batch=4, ranks=1).validate(), [0, 1])["backend"] == "none"
    plan = plan_for(spec_of(batch=4, ranks=2, target="cuda:1").validate(), [0, 1])
    assert plan["backend"] == "nccl" and plan["rank_devices"] == ["cuda:1", "cuda:2"]


def test_the_plan_is_plain_data_with_the_agreed_counts_inputs():
    plan = plan_for(spec_of(batch=8, ranks=2, bucket_mb=1.5).validate(), [0, 1])
    import json

    assert json.loads(json.dumps(plan)) == plan
    assert plan["bucket_mb"] == 1.5 and plan["probe_steps"] == 3 and plan["stall_timeout_s"] == 60.0
    assert len(STEP_KEYS) == 11 and "exposed_comm_s" in STEP_KEYS and "grad_copy_s" in STEP_KEYS


@pytest.mark.parametrize(("changes", "words"), [
    ({"batch": 6, "ranks": 4}, "--batch 6 does not split over 4 ranks × 1 micro-batch: give a multiple of 4, "
                               "or --scaling weak"),
    ({"batch": 8, "ranks": 2, "grad_accum": 3}, "give a multiple of 6"),
    ({"batch": 5, "ranks": 2, "scaling": "weak", "grad_accum": 2}, "give a multiple of 2"),
    ({"mode": "inference"}, "add --mode training"),
    ({"scenario": "offline"}, "use --scenario single-stream"),
    ({"target": "mps"}, "use --target cpu or cuda:0"),
    ({"compile": "default"}, "drop --compile"),
])
def test_the_spec_refuses_what_ranks_cannot_run_naming_the_field_and_the_fix(changes, words):
    changes = dict(changes)
    top = {key: changes.pop(key) for key in ("batch", "mode", "scenario", "target") if key in changes}
    with pytest.raises(SpecError) as caught:
        spec_of(**top, **changes).validate()
    assert caught.value.field == "torch.ranks" and words in str(caught.value)


def test_is_distributed_reads_a_spec_or_its_dict_and_none_means_the_single_process_loop():
    assert is_distributed(spec_of())
    assert is_distributed(spec_of().to_dict())
    assert is_distributed({"torch": {"ranks": 1}})  # a version-1 layout
    assert not is_distributed(RunSpec())
    assert not is_distributed(RunSpec().to_dict())
    RunSpec(mode="training").validate()  # no --ranks: today's training loop, unchecked by the ranks rules


def test_a_ddp_runs_label_names_its_ranks():
    assert spec_of(batch=8).validate().label() == "mlp · torch · cpu · b8 · training · 2 ranks"
    assert RunSpec(mode="training").label() == "mlp · torch · cpu · b1 · training"
