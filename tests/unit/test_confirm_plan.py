"""Confirmation planning: the axes each catalog model (and a model file) offers, the ones it cannot offer named
with why, each class's predicted range, and the plan that tells a verdict from its runner-up."""

from __future__ import annotations

import json
import math

import pytest

from console.analysis.confirm import Context, axes_for, plan, plan_for, predict
from console.analysis.confirm.footprint import footprint
from console.analysis.confirm.plan import leading_pair
from console.analysis.confirm.predictions import Prediction, separation
from engines.spec import RunSpec

MIB = 1 << 20
CARD = {"llc_bytes": 32 * MIB}


def spec(model: str, **kw) -> RunSpec:
    return RunSpec(model=model, **kw).validate()


def names(found) -> list[str]:
    return [axis.name for axis in found.axes]


def verdict(cls: str, secondary: str | None = None, **scores: float) -> dict:
    table = {cls: 0.7, **({secondary: 0.35} if secondary else {})}
    table.update({k.replace("_", "-"): v for k, v in scores.items()})
    return {"class": cls, "secondary": secondary, "scores": table, "evidence": {}}


# ---- axes per catalog model
def test_mlp_scales_its_batch_and_layers_and_names_the_threads_it_cannot_double():
    found = axes_for(spec("mlp", threads=1), worker_cores=1)
    assert names(found)[:5] == ["batch ×2", "batch ×4", "batch ×8", "batch ×16", "batch ×32"]
    assert "layers ×2" in names(found)
    assert not found.of_kind("threads")
    assert any(why.startswith("threads ×2: the run used 1 thread and the worker has 1 physical core")
               for why in found.untestable)
    batch4 = next(a for a in found.axes if a.name == "batch ×4")
    # weights dominate a batch-1 MLP: 4× the FLOPs, hardly more bytes, the same ops
    assert batch4.scales["flops"] == pytest.approx(4.0, rel=0.01)
    assert 1.0 < batch4.scales["bytes"] < 1.05 and batch4.scales["ops"] == 1.0
    assert batch4.apply(spec("mlp", threads=1)).batch == 4


def test_synthetic_models_scale_rows_and_the_op_count_their_graph_repeats():
    found = axes_for(spec("synth-tiny-ops"), worker_cores=1)
    assert "rows ×4" in names(found) and "ops ×2" in names(found) and "batch ×4" not in names(found)
    ops = next(a for a in found.axes if a.name == "ops ×2")
    assert ops.scales["ops"] == 2.0 and ops.apply(spec("synth-tiny-ops")).model_params["ops"] == 4000
    assert "passes ×2" in names(axes_for(spec("synth-stream", model_params={"rows": 1024}), worker_cores=1))


def test_a_model_without_a_repeat_parameter_says_why_ops_cannot_be_doubled():
    found = axes_for(spec("resnet18", model_params={"image_size": 64, "width": 16}), worker_cores=1)
    assert "image_size ×2 (data ×4)" in names(found) and "batch ×2" in names(found)
    why = next(w for w in found.untestable if w.startswith("ops ×2"))
    assert "resnet18 has no parameter that repeats its ops" in why
    image = next(a for a in found.axes if a.name.startswith("image_size ×2"))
    assert image.factor == 4.0 and "no cost model for resnet18" in image.note
    assert image.apply(spec("resnet18", model_params={"image_size": 64, "width": 16})).model_params["image_size"] == 128
    reduce_why = next(w for w in axes_for(spec("synth-reduce"), worker_cores=1).untestable if w.startswith("ops"))
    assert "synth-reduce has no parameter" in reduce_why


def test_bert_scales_sequence_and_layers():
    found = axes_for(spec("bert"), worker_cores=1)
    assert {"seq_len ×2", "layers ×2", "batch ×2"} <= set(names(found))


def test_a_data_change_too_large_to_run_is_named_not_planned():
    found = axes_for(spec("synth-stream"), worker_cores=1)  # 64 MiB a pass: ×16 would move 2 GiB per op
    assert max(a.factor for a in found.of_kind("data")) == 8
    assert any(w.startswith("rows ×16: its largest op would move 2.0 GiB") for w in found.untestable)


def test_threads_double_only_when_the_worker_has_the_cores_and_only_on_a_cpu():
    assert "threads ×2" in names(axes_for(spec("mlp", threads=2), worker_cores=4))
    assert "threads ×2" not in names(axes_for(spec("mlp", threads=2), worker_cores=3))
    record = {"environment": {"engine": {"threads": 1}}}
    axis = next(a for a in axes_for(spec("mlp"), record, worker_cores=2).axes if a.kind == "threads")
    assert axis.apply(spec("mlp")).threads == 2


def test_a_model_file_scales_its_dynamic_batch_and_names_a_fixed_one(tmp_path):
    path = tmp_path / "m.onnx"
    path.write_bytes(b"\0")
    file_spec = RunSpec(model=str(path), engine="onnxruntime")
    dynamic = {"environment": {"engine": {"inputs": [
        {"name": "x", "dtype": "float32", "shape": [1, 3, 160, 160], "declared": ["batch", 3, None, None]}]}}}
    found = axes_for(file_spec, dynamic, worker_cores=1)
    assert names(found) == ["batch ×2", "batch ×4"]
    assert any(w.startswith("ops ×2: a model file's graph is fixed") for w in found.untestable)
    fixed = {"environment": {"engine": {"inputs": [
        {"name": "x", "dtype": "float32", "shape": [1, 3, 160, 160], "declared": [1, 3, 160, 160]}]}}}
    found = axes_for(file_spec, fixed, worker_cores=1)
    assert not found.of_kind("data")
    assert any("the file fixes every dim of its inputs" in w for w in found.untestable)


def test_a_model_file_given_shapes_scales_every_dynamic_dim_alike(tmp_path):
    path = tmp_path / "det.onnx"
    path.write_bytes(b"\0")
    file_spec = RunSpec(model=str(path), engine="onnxruntime", inputs={"x": [1, 3, 160, 160]})
    record = {"environment": {"engine": {"inputs": [
        {"name": "x", "dtype": "float32", "shape": [1, 3, 160, 160], "declared": ["N", 3, "H", "W"]}]}}}
    found = axes_for(file_spec, record, worker_cores=1)
    assert names(found) == ["batch ×2", "batch ×4", "H, W ×2 (data ×4)"]
    assert found.axes[0].change == {"inputs": {"x": [2, 3, 160, 160]}, "batch": 1}
    spatial = found.axes[2]
    assert spatial.change["inputs"] == {"x": [1, 3, 320, 320]} and spatial.factor == 4.0
    assert "--input x=1x3x320x320" in spatial.note
    fixed_batch = {"environment": {"engine": {"inputs": [
        {"name": "x", "dtype": "float32", "shape": [1, 3, 160, 160], "declared": [1, 3, "?", "?"]}]}}}
    found = axes_for(file_spec, fixed_batch, worker_cores=1)
    assert names(found) == ["x dim 2, x dim 3 ×2 (data ×4)"]
    assert "batch ×k: the file fixes dim 0 of its inputs" in found.untestable


def test_no_cost_model_without_a_file_record_says_what_is_missing(tmp_path):
    path = tmp_path / "m.onnx"
    path.write_bytes(b"\0")
    found = axes_for(RunSpec(model=str(path), engine="onnxruntime"), {}, worker_cores=1)
    assert any("did not record which of the file's dims are dynamic" in w for w in found.untestable)


# ---- predictions
def test_each_class_predicts_from_what_the_axis_scales():
    found = axes_for(spec("mlp", threads=1), worker_cores=1)
    batch4 = next(a for a in found.axes if a.name == "batch ×4")
    compute = predict("compute", batch4)
    host = predict("host-overhead", batch4)
    assert (compute.low, compute.high) == pytest.approx((2.4, 6.0), rel=0.01)
    assert (host.low, host.high) == (0.8, 1.25)
    context = Context(working_set=4.2e6, llc=32 * MIB)
    cache = predict("cache-resident", batch4, context)
    # four times the FLOPs on the same weights: between the bytes (still cache-bound) and the FLOPs (the
    # matrix-vector product became a matrix product: the catalog mlp took ×1.7–1.9 for twice the batch)
    assert cache.low == pytest.approx(0.6 * batch4.scales["bytes"]) and cache.high == pytest.approx(6.0, rel=0.01)
    assert "work per byte grows" in cache.reason and "stays in cache" in cache.reason
    assert predict("memory-bandwidth", batch4).high == pytest.approx(6.0, rel=0.01)
    assert isinstance(predict("input-pipeline", batch4), str)
    assert "working set or the last-level cache size is unknown" in predict("cache-resident", batch4)


def test_cache_resident_predicts_a_jump_per_byte_once_the_working_set_leaves_the_cache():
    found = axes_for(spec("synth-cached"), worker_cores=1)  # 1 MiB tensor, 2 MiB per pass
    rows32 = next(a for a in found.axes if a.name == "rows ×32")
    jump = predict("cache-resident", rows32, Context(working_set=2 * MIB, llc=32 * MIB))  # 64 MiB: none stays
    assert jump.low == pytest.approx(1.7 * 32) and math.isinf(jump.high)
    partly = predict("cache-resident", rows32, Context(working_set=2 * MIB, llc=40 * MIB))  # 64 of 40 MiB
    assert partly.low == pytest.approx(1.3 * 32)
    assert json.dumps(jump.to_dict())  # an infinite bound is stored as null
    assert jump.to_dict()["range"][1] is None


def test_memory_bandwidth_threads_need_the_cards_stream_gain():
    axis = next(a for a in axes_for(spec("mlp", threads=1), worker_cores=2).axes if a.kind == "threads")
    assert "no STREAM gain" in predict("memory-bandwidth", axis)
    with_gain = predict("memory-bandwidth", axis, Context(stream_thread_gain=1.2))
    assert with_gain.low == pytest.approx(1 / (1.15 * 1.2)) and with_gain.high == 1.1
    assert predict("compute", axis).high == pytest.approx(1 / 1.6)


def test_separation_is_the_gap_between_two_ranges():
    a, b = Prediction("x", 0.8, 1.25, ""), Prediction("y", 2.4, 6.0, "")
    assert separation(a, b) == pytest.approx(2.4 / 1.25) == separation(b, a)
    assert separation(a, Prediction("z", 1.2, 3.0, "")) < 1


# ---- plans
def test_host_overhead_against_compute_plans_the_data_change_that_tells_them_apart():
    the_plan = plan_for(verdict("host-overhead", "compute"), spec("synth-tiny-ops"), {}, CARD, worker_cores=1)
    assert (the_plan.tested, the_plan.rival) == ("host-overhead", "compute")
    assert [e.axis.name for e in the_plan.experiments] == ["rows ×4"]  # ×2 overlaps: 0.8–1.25 vs 1.2–3.0
    assert any(w.startswith("ops: no change of this kind tells host-overhead from compute") for w in the_plan.untestable)
    assert json.dumps(the_plan.to_dict())


def test_cache_resident_mlp_against_compute_plans_a_wider_model_that_leaves_the_cache():
    ops = [{"op": "aten::linear", "calls": 4, "time_s": 0.004, "bytes": 4 * 4.2e6, "flops": 4 * 2.1e6}]
    the_plan = plan_for(verdict("cache-resident", "compute"), spec("mlp", threads=1), {"ops": ops}, CARD,
                        worker_cores=1)
    # the whole model (10.5 MB of weights), not its largest op, is what stays cached between calls; hidden ×4
    # takes it to 143 MB, past twice the 32 MiB cache: per byte ≥ ×1.7 for cache-resident, ≤ ×1.5 the FLOPs for
    # compute. A larger batch no longer tells them apart (the kernel changes with it).
    assert [e.axis.name for e in the_plan.experiments] == ["hidden ×4"]
    first = the_plan.experiments[0]
    assert first.tested.low / first.rival.high >= 1.1 and first.axis.scales["resident"] == pytest.approx(13.6, 0.01)
    assert "leaves the cache (10.5 → 143 MB" in first.tested.reason
    assert set(first.predictions) == {"compute", "memory-bandwidth", "cache-resident", "host-overhead"}
    assert any(w.startswith("threads ×2") for w in the_plan.untestable)


def test_inconclusive_tests_its_two_leading_classes():
    v = {"class": "inconclusive", "secondary": "compute",
         "scores": {"compute": 0.55, "memory-bandwidth": 0.0, "cache-resident": 0.1, "host-overhead": 0.5}}
    assert leading_pair(v) == ("compute", "host-overhead")
    the_plan = plan_for(v, spec("synth-tiny-ops"), {}, CARD, worker_cores=1)
    assert (the_plan.tested, the_plan.rival) == ("compute", "host-overhead")
    assert [(e.axis.name, e.rival.cls) for e in the_plan.experiments] == [("rows ×4", "host-overhead")]


def test_a_verdict_no_intervention_can_test_says_so():
    v = verdict("input-pipeline", None, compute=0.2)
    the_plan = plan(v, axes_for(spec("mlp", threads=1), worker_cores=1))
    assert not the_plan.experiments and "no intervention here tests input-pipeline" in the_plan.reason
    assert "page cache" in the_plan.reason


def test_the_footprints_are_the_graphs_own_counts():
    gemm = footprint("synth-gemm", {"rows": 256, "features": 512, "layers": 4}, 1)
    assert gemm.flops == 2 * 256 * 512 ** 2 * 4 and gemm.ops == 4
    stream = footprint("synth-stream", {"rows": 16384, "features": 1024, "passes": 4}, 1)
    assert stream.bytes == 2 * 4 * 16384 * 1024 * 4
    assert footprint("resnet18", {}, 1) is None


def test_a_verdict_without_a_runner_up_is_tested_against_what_cheap_changes_can_exclude():
    # synth-gemm called compute with every other score 0: memory-bandwidth would need rows ×32 to tell apart
    v = {"class": "compute", "secondary": None, "evidence": {},
         "scores": {"compute": 0.675, "memory-bandwidth": 0.0, "cache-resident": 0.0, "host-overhead": 0.0}}
    ops = [{"op": "aten::linear", "calls": 20, "time_s": 1.1, "bytes": 31457280.0, "flops": 1342177280.0}]
    gemm = spec("synth-gemm", model_params={"rows": 128, "features": 512, "layers": 2}, threads=1)
    one_core = plan_for(v, gemm, {"ops": ops}, CARD, worker_cores=1)
    assert one_core.rival == "host-overhead" and [e.axis.name for e in one_core.experiments] == ["rows ×4"]
    assert one_core.notes == ["no runner-up named: tested against the classes a change can exclude (host-overhead)"]
    assert "memory-bandwidth: no change this model allows (data ×8 at most) tells it from compute" \
        in one_core.untestable
    two_cores = plan_for(v, gemm, {"ops": ops}, CARD, worker_cores=2)
    assert [e.axis.name for e in two_cores.experiments] == ["threads ×2", "rows ×4"]  # the cheaper first


def test_a_named_runner_up_is_kept_when_some_change_tells_them_apart():
    v = verdict("compute", "memory-bandwidth")
    gemm = spec("synth-gemm", model_params={"rows": 128, "features": 512, "layers": 2}, threads=1)
    ops = [{"op": "aten::linear", "calls": 20, "time_s": 1.1, "bytes": 31457280.0, "flops": 1342177280.0}]
    the_plan = plan_for(v, gemm, {"ops": ops}, CARD, worker_cores=1)
    # more rows raise the work per byte, so memory work may turn compute-bound: no data change tells them apart
    # any more (rows ×32 did, on paper), and the plan says so and tests what it can
    assert the_plan.rival == "host-overhead" and [e.axis.name for e in the_plan.experiments] == ["rows ×4"]
    assert the_plan.notes[0].startswith("no change tells compute from memory-bandwidth")
    tiny = plan_for(verdict("host-overhead", "memory-bandwidth"), spec("synth-tiny-ops", model_params={"rows": 1}),
                    {"ops": OPS_TINY}, CARD, worker_cores=1)
    assert tiny.rival == "memory-bandwidth" and [e.axis.name for e in tiny.experiments] == ["rows ×2"]


OPS_TINY = [{"op": "aten::tanh", "calls": 1000, "time_s": 0.01, "bytes": 1000 * 128.0, "flops": 1000 * 16.0}]


def test_without_a_runner_up_the_changes_that_exclude_the_most_classes_are_taken():
    # the MLP called cache-resident with nothing else scored: within data ×8 only host overhead can be excluded,
    v = {"class": "cache-resident", "secondary": None, "evidence": {"working_set_mb": 2.64, "llc_mb": 33.6},
         "scores": {"cache-resident": 1.0, "compute": 0.0, "memory-bandwidth": 0.0, "host-overhead": 0.0}}
    the_plan = plan_for(v, spec("mlp", threads=1), {}, CARD, worker_cores=2)
    # and no thread change: without the card's L2 size it cannot be said whether the model is in one core's
    # own cache (a second thread then helps) or in the shared one (it may not: the mlp gained ×0.96)
    assert [(e.axis.name, e.rival.cls) for e in the_plan.experiments] == [("hidden ×2", "host-overhead")]
    assert any("what a second thread adds cannot be said" in w for w in the_plan.untestable)
    assert the_plan.notes == ["no runner-up named: tested against the classes a change can exclude "
                              "(host-overhead)"]
