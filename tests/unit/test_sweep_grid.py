"""Sweep grids (console.sweep.grid): comma-separated axes parsed, each value checked on its own."""

from __future__ import annotations

import pytest

from console.sweep import SweepError, SweepGrid


@pytest.mark.parametrize(("texts", "words"), [
    ({"batch": "1,x,4"}, ["--batch", "'x'", "not a whole number", "'1,x,4'"]),
    ({"batch": ""}, ["--batch", "empty list"]),
    ({"batch": " , "}, ["--batch", "empty list"]),
    ({"batch": "1,,4"}, ["--batch", "empty value"]),
    ({"batch": "1,2,2"}, ["--batch", "2 appears twice"]),
    ({"batch": "0,1"}, ["--batch", "0", "≥ 1"]),
    ({"batch": "1.5"}, ["--batch", "'1.5'", "not a whole number"]),
    ({"threads": "1,-2"}, ["--threads", "-2"]),
    ({"precision": "fp32,fp64"}, ["--precision", "'fp64'", "allowed: fp32, fp16, bf16, int8"]),
    ({"precision": "bf16,bf16"}, ["--precision", "'bf16' appears twice"]),
    ({"engine": "torch,tensorrt"}, ["--engine", "'tensorrt'", "torch, onnxruntime"]),
    ({"qps": "10,fast"}, ["--qps", "'fast'", "not a number"]),
    ({"qps": "0"}, ["--qps", "> 0"]),
    ({}, ["grid is empty", "--batch"]),
    ({"batch": None}, ["grid is empty"]),
])
def test_bad_grids_are_refused_naming_the_option_and_the_value(texts, words):
    with pytest.raises(SweepError) as info:
        SweepGrid.parse(**texts)
    for word in words:
        assert word in str(info.value)


def test_parse_keeps_order_spaces_and_default_threads():
    grid = SweepGrid.parse(batch=" 8, 1 ,2", threads="default,2", precision="fp32, bf16", qps=None)
    assert grid.batch == [8, 1, 2] and grid.threads == [None, 2] and grid.precision == ["fp32", "bf16"]
    assert grid.to_dict() == {"precision": ["fp32", "bf16"], "threads": [None, 2], "batch": [8, 1, 2]}
    assert grid.size == 12 and grid.varying() == ["precision", "threads", "batch"]
    assert SweepGrid.from_dict(grid.to_dict()) == grid
    with pytest.raises(SweepError, match="not a sweep axis"):
        SweepGrid.parse(batchsize="1")


def test_a_grid_too_large_is_refused():
    with pytest.raises(SweepError, match="at most 512"):
        SweepGrid.parse(batch=",".join(str(i) for i in range(1, 101)), threads="1,2,3,4,5,6")
