"""The profile's per-iteration op times (engines.profiling.iteration_table): what the verdict's stability
resamples. Bounded, and each call in the iteration it ran in."""

import pytest
from test_profiling import ORT_TRACE, ort_node

from engines import profiling


def calls(iterations, ops=("aten::addmm", "aten::add")):
    return [{"op": name, "time_s": 1e-3 * (i + 1) * (k + 1), "iteration": i}
            for i in range(iterations) for k, name in enumerate(ops)]


def test_one_row_per_iteration_longest_op_first_with_the_walls():
    table = profiling.iteration_table(calls(3), walls_s=[0.01, 0.02, 0.03])
    assert table["ops"] == ["aten::add", "aten::addmm"] and table["iterations_per_row"] == 1
    assert table["times_s"] == [[2e-3, 1e-3], [4e-3, 2e-3], [6e-3, 3e-3]]
    assert table["wall_s"] == [0.01, 0.02, 0.03]


def test_many_iterations_are_summed_in_blocks_and_few_op_types_kept():
    many = calls(130, ops=[f"op{k}" for k in range(5)])
    table = profiling.iteration_table(many, walls_s=[1.0] * 130, max_rows=64, max_ops=3)
    assert table["iterations_per_row"] == 3 and len(table["times_s"]) == 44  # ceil(130 / 3); the last block is 1
    assert table["ops"] == ["op4", "op3", "op2"] and all(len(row) == 3 for row in table["times_s"])
    assert table["wall_s"][0] == 3.0 and table["wall_s"][-1] == 1.0
    assert sum(row[0] for row in table["times_s"]) == pytest.approx(sum(c["time_s"] for c in many if c["op"] == "op4"),
                                                                    rel=1e-3)


def test_calls_without_an_iteration_give_no_table_and_walls_of_another_length_are_dropped():
    assert profiling.iteration_table([{"op": "x", "time_s": 1.0}]) is None
    assert profiling.iteration_table(calls(3), walls_s=[0.1])["wall_s"] is None


def test_ort_nodes_belong_to_the_model_run_they_lie_in():
    trace = [*ORT_TRACE, {"cat": "Session", "name": "model_run", "ts": 3000, "dur": 100, "ph": "X", "args": {}},
             ort_node(3010, 50, "Gemm", [[4, 64], [128]], [[4, 128]])]
    found = profiling.ort_calls(trace, skip_runs=1)
    assert [c["iteration"] for c in found] == [0, 0, 0, 0, 0, 1]
    table = profiling.iteration_table(found, walls_s=[1e-4, 1e-4])
    assert len(table["times_s"]) == 2 and table["ops"][0] == "Gemm" and table["times_s"][1][0] == pytest.approx(5e-5)


def test_the_profile_event_carries_the_table_only_when_given():
    rows = profiling.aggregate(calls(2))
    assert "per_iteration" not in profiling.profile_event("torch", 2, 0.1, rows, None)
    table = profiling.iteration_table(calls(2))
    assert profiling.profile_event("torch", 2, 0.1, rows, None, per_iteration=table)["per_iteration"] == table
