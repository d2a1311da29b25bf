"""engines.profiling on canned events: the op table means the same on both engines, without an engine."""

import pytest

from engines import phases, profiling, protocol


def torch_event(id_, name, time_us, parent=None, flops=0, shapes=(), dtypes=(), concrete=()):
    return {"id": id_, "parent": parent, "name": name, "time_s": time_us / 1e6, "flops": flops,
            "shapes": [list(s) for s in shapes], "dtypes": list(dtypes), "concrete": list(concrete)}


# Two iterations of Linear(64 → 128) + ReLU on a batch of 4, as torch.profiler records them (flops on addmm).
def linear_relu_iteration(base):
    return [
        torch_event(base, "aten::linear", 30, shapes=[[4, 64], [128, 64], [128]],
                    dtypes=["float", "float", "float"]),
        torch_event(base + 1, "aten::t", 2, parent=base, shapes=[[128, 64]], dtypes=["float"]),
        torch_event(base + 2, "aten::addmm", 25, parent=base, flops=65536,
                    shapes=[[128], [4, 64], [64, 128], [], []], dtypes=["float", "float", "float", "Scalar", "Scalar"]),
        torch_event(base + 3, "aten::copy_", 3, parent=base + 2, shapes=[[4, 128], [4, 128], []],
                    dtypes=["float", "float", ""]),
        torch_event(base + 4, "aten::relu", 10, shapes=[[4, 128]], dtypes=["float"]),
        torch_event(base + 5, "aten::clamp_min", 8, parent=base + 4, shapes=[[4, 128], []], dtypes=["float", "Scalar"]),
    ]


def test_torch_calls_keep_the_outermost_ops_with_their_subtree_flops():
    step = torch_event(100, "ProfilerStep#1", 60)  # a wrapper without "::" is looked through
    events = [step] + [dict(e, parent=e["parent"] if e["parent"] is not None else 100)
                       for e in linear_relu_iteration(0)] + linear_relu_iteration(10)
    calls = profiling.torch_calls(events)
    assert [c["op"] for c in calls] == ["aten::linear", "aten::relu"] * 2
    linear = calls[0]
    assert linear["flops"] == 65536  # the child addmm's count, not counted twice
    # inputs (4·64 + 128·64 + 128 floats) + the output [4, 128], 4 bytes each
    assert linear["bytes"] == (4 * 64 + 128 * 64 + 128 + 4 * 128) * 4
    relu = calls[1]
    assert relu["flops"] is None and relu["bytes"] == (4 * 128 * 2) * 4
    assert relu["shapes"] == [[4, 128]]


def test_aggregate_gives_one_row_per_op_with_shares_intensity_and_rates():
    rows = profiling.aggregate(profiling.torch_calls(linear_relu_iteration(0) + linear_relu_iteration(10)),
                               profiling.TORCH_METHOD)
    assert [r["op"] for r in rows] == ["aten::linear", "aten::relu"]  # longest first
    linear, relu = rows
    assert linear["calls"] == 2 and linear["time_s"] == pytest.approx(60e-6)
    assert linear["share"] == pytest.approx(60 / 80) and relu["share"] == pytest.approx(20 / 80)
    assert linear["flops"] == 2 * 65536
    assert linear["intensity"] == pytest.approx(linear["flops"] / linear["bytes"])
    assert linear["achieved_flops_s"] == pytest.approx(2 * 65536 / 60e-6)
    assert linear["achieved_bytes_s"] == pytest.approx(linear["bytes"] / 60e-6)
    assert relu["flops"] is None and relu["intensity"] is None and relu["achieved_flops_s"] is None
    assert linear["shapes"] == [[[4, 64], [128, 64], [128]]]  # distinct samples only
    assert set(linear["method"]) == {"flops", "bytes"}


def test_an_op_partly_counted_reports_no_flops_rather_than_too_few():
    calls = [{"op": "X", "time_s": 1.0, "flops": 10.0, "bytes": 4.0}, {"op": "X", "time_s": 1.0, "flops": None,
                                                                      "bytes": 4.0}]
    row, = profiling.aggregate(calls)
    assert row["flops"] is None and row["bytes"] == 8.0 and row["achieved_bytes_s"] == 4.0


def test_torch_output_estimates_for_convolution_pooling_embedding_reductions_and_views():
    conv = torch_event(1, "aten::conv2d", 5, shapes=[[2, 3, 16, 16], [8, 3, 3, 3], [], [], [], [], []],
                       dtypes=["float", "float", "", "ScalarList", "ScalarList", "ScalarList", "Scalar"],
                       concrete=[None, None, None, [2, 2], [1, 1], [1, 1], 1], flops=55296)
    pool = torch_event(2, "aten::max_pool2d", 5, shapes=[[2, 8, 8, 8], [], [], [], [], []],
                       dtypes=["float"] + ["ScalarList"] * 4 + ["Scalar"], concrete=[None, [2, 2], [], [0, 0], [1, 1],
                                                                                     False])
    embedding = torch_event(3, "aten::embedding", 5, shapes=[[100, 16], [2, 5], [], [], []],
                            dtypes=["float", "long int", "Scalar", "Scalar", "Scalar"])
    total = torch_event(4, "aten::sum", 5, shapes=[[2, 8, 4, 4], [], [], []], dtypes=["float", "ScalarList", "Scalar", ""],
                        concrete=[None, [1], False, None])
    view = torch_event(5, "aten::view", 1, shapes=[[2, 8]], dtypes=["float"])
    by_op = {c["op"]: c for c in profiling.torch_calls([conv, pool, embedding, total, view])}
    assert by_op["aten::conv2d"]["bytes"] == (2 * 3 * 16 * 16 + 8 * 3 * 3 * 3 + 2 * 8 * 8 * 8) * 4  # out 2×8×8×8
    assert by_op["aten::max_pool2d"]["bytes"] == (2 * 8 * 8 * 8 + 2 * 8 * 4 * 4) * 4
    assert by_op["aten::embedding"]["bytes"] == 100 * 16 * 4 + 2 * 5 * 8 + 2 * 5 * 16 * 4
    assert by_op["aten::sum"]["bytes"] == (2 * 8 * 4 * 4 + 2 * 4 * 4) * 4
    assert by_op["aten::view"]["bytes"] == 0  # a view moves nothing
    assert by_op["aten::conv2d"]["flops"] == 55296


def test_attention_flops_come_from_shapes_when_the_profiler_counts_none():
    sdpa = torch_event(1, "aten::scaled_dot_product_attention", 5, shapes=[[1, 2, 5, 8]] * 3 + [[]] * 5,
                       dtypes=["float"] * 3 + [""] * 5)
    call, = profiling.torch_calls([sdpa])
    assert call["flops"] == 2.0 * (1 * 2 * 5) * 5 * (8 + 8)


# ONNX Runtime's profile: session events per run and node events, as in its JSON (trimmed).
def ort_node(ts, dur, op, inputs, outputs):
    return {"cat": "Node", "name": f"/{op}_kernel_time", "ts": ts, "dur": dur, "ph": "X",
            "args": {"op_name": op, "provider": "CPUExecutionProvider",
                     "input_type_shape": [{"float": s} for s in inputs],
                     "output_type_shape": [{"float": s} for s in outputs]}}


ORT_TRACE = [
    {"cat": "Session", "name": "model_loading_uri", "ts": 0, "dur": 500, "ph": "X", "args": {}},
    {"cat": "Session", "name": "model_run", "ts": 1000, "dur": 300, "ph": "X", "args": {}},  # the first run
    ort_node(1010, 250, "Gemm", [[4, 64], [128]], [[4, 128]]),
    {"cat": "Session", "name": "model_run", "ts": 2000, "dur": 100, "ph": "X", "args": {}},
    ort_node(2010, 40, "Gemm", [[4, 64], [128]], [[4, 128]]),  # B pre-packed: absent from the event
    ort_node(2060, 20, "MatMul", [[4, 128], [128, 10]], [[4, 10]]),
    ort_node(2085, 10, "Conv", [[1, 3, 8, 8], [16, 3, 3, 3], [16]], [[1, 16, 8, 8]]),
    ort_node(2096, 2, "Relu", [[4, 10]], [[4, 10]]),
    ort_node(2099, 1, "Add", [[4, 10], [10]], [[4, 10]]),
]


def test_ort_calls_skip_the_first_run_and_count_flops_and_bytes_from_shapes():
    calls = profiling.ort_calls(ORT_TRACE, skip_runs=1)
    assert [c["op"] for c in calls] == ["Gemm", "MatMul", "Conv", "Relu", "Add"]
    gemm, matmul, conv, relu, add = calls
    assert gemm["time_s"] == pytest.approx(40e-6)
    assert gemm["flops"] == 2 * 4 * 128 * 64 + 4 * 128  # 2·M·N·K plus the bias
    assert gemm["bytes"] == (4 * 64 + 128 + 4 * 128 + 64 * 128) * 4  # the pre-packed weight still read
    assert matmul["flops"] == 2 * 4 * 10 * 128 and matmul["bytes"] == (4 * 128 + 128 * 10 + 4 * 10) * 4
    assert conv["flops"] == 2 * (16 * 8 * 8) * (3 * 3 * 3) + 16 * 8 * 8
    assert relu["flops"] is None and relu["bytes"] == 2 * 4 * 10 * 4
    assert add["flops"] == 40
    assert len(profiling.ort_calls(ORT_TRACE)) == 6  # without skipping, the first run's node is there


def test_the_two_engines_give_rows_of_the_same_shape():
    torch_rows = profiling.aggregate(profiling.torch_calls(linear_relu_iteration(0)), profiling.TORCH_METHOD)
    ort_rows = profiling.aggregate(profiling.ort_calls(ORT_TRACE, skip_runs=1), profiling.ORT_METHOD)
    assert {tuple(sorted(r)) for r in torch_rows + ort_rows} == {tuple(sorted(torch_rows[0]))}
    assert sum(r["share"] for r in ort_rows) == pytest.approx(1.0)


def test_dtype_sizes_by_both_engines_names():
    assert profiling.dtype_bytes("float") == profiling.dtype_bytes("float32") == 4
    assert profiling.dtype_bytes("c10::BFloat16") == profiling.dtype_bytes("float16") == 2
    assert profiling.dtype_bytes("long int") == profiling.dtype_bytes("int64") == 8
    assert profiling.dtype_bytes("Scalar") is None


def test_the_profile_event_is_plain_and_sent_in_its_own_phase():
    rows = profiling.aggregate(profiling.ort_calls(ORT_TRACE, skip_runs=1), profiling.ORT_METHOD)
    fields = profiling.profile_event("onnxruntime", 1, 1e-4, rows, "/tmp/trace.json", ["a note"])
    event = protocol.make("profile", **fields)
    assert event["op_time_s"] == pytest.approx(73e-6) and event["counters"] is None
    assert protocol.loads(protocol.dumps(event))["ops"][0]["op"] == "Gemm"
    with pytest.raises(protocol.ProtocolError, match="profile event lacks"):
        protocol.make("profile", engine="torch")
    profiling_phase = phases.get("profiling")
    assert profiling_phase.name in protocol.PHASES and profiling_phase.color not in {
        p.color for p in phases.PHASES if p.name != "profiling"}
    assert protocol.PHASES.index("measuring") < protocol.PHASES.index("profiling") < protocol.PHASES.index("finishing")
