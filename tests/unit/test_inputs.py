"""Declared model inputs → concrete shapes and deterministic arrays, with errors that say what to give."""

import numpy as np
import pytest

from engines.inputs import (
    InputError,
    make_array,
    parse_shape,
    resolve_inputs,
    resolve_shape,
)


def test_parse_shape_accepts_common_spellings():
    assert parse_shape("1x3x224x224") == [1, 3, 224, 224]
    assert parse_shape(" 2 X 128 ") == [2, 128]
    assert parse_shape("4,16") == [4, 16]
    assert parse_shape("[8]") == [8]


@pytest.mark.parametrize("text", ["", "1x", "1xax3", "0x3", "-1x3", "1.5x2"])
def test_parse_shape_errors_show_the_expected_form(text):
    with pytest.raises(InputError, match="1x3x224x224"):
        parse_shape(text)


def test_first_dynamic_dim_is_the_batch():
    assert resolve_shape("x", ["batch", 3, 224, 224], 4, {}) == [4, 3, 224, 224]
    assert resolve_shape("x", [None, 8], 2, {}) == [2, 8]
    assert resolve_shape("x", [5, 8], 2, {}) == [5, 8]  # fully static: the batch does not apply


def test_other_dynamic_dims_need_the_user():
    with pytest.raises(InputError) as err:
        resolve_shape("x", ["batch", "seq"], 1, {})
    message = str(err.value)
    assert "input 'x' has dynamic dims ['seq']" in message and "--input x=1x128" in message


def test_the_suggested_shape_uses_the_model_files_defaults_as_the_resolution_does():
    """The suggestion in the error and the resolution fill dims by the same rules (they were two copies, and the
    suggestion ignored the model file's defaults: it offered 128 for a dim the file says is 64)."""
    assert resolve_shape("x", ["batch", "seq"], 2, {}, defaults={"seq": 64}) == [2, 64]
    with pytest.raises(InputError) as err:
        resolve_shape("x", ["batch", "seq", "feat"], 1, {}, defaults={"seq": 64})
    assert "dynamic dims ['feat']" in str(err.value) and "--input x=1x64x128" in str(err.value)
    with pytest.raises(InputError) as err:
        resolve_shape("x", ["batch", "seq", 8], 1, {"x": [1, 64, 9]}, defaults={"seq": 64})
    assert "--input x=1x64x8" in str(err.value)


def test_user_shape_wins_and_must_fit():
    assert resolve_shape("x", ["batch", "seq"], 1, {"x": [2, 77]}) == [2, 77]
    with pytest.raises(InputError) as err:
        resolve_shape("x", ["batch", 3, 32, 32], 1, {"x": [1, 3, 32]})
    assert "rank 3 instead of 4" in str(err.value) and "[batch, 3, 32, 32]" in str(err.value)
    assert "1x3x32" in str(err.value) and "--input x=1x3x32x32" in str(err.value)
    with pytest.raises(InputError, match=r"dim 1 must be 3, got 4"):
        resolve_shape("x", ["batch", 3, 32, 32], 1, {"x": [1, 4, 32, 32]})


def test_shared_symbols_follow_one_user_shape():
    declared = [{"name": "input_ids", "dtype": "int64", "shape": ["batch", "seq"]},
                {"name": "attention_mask", "dtype": "int64", "shape": ["batch", "seq"]}]
    arrays, resolved = resolve_inputs(declared, 3, {"input_ids": [3, 16]})
    assert arrays["input_ids"].shape == (3, 16) and arrays["attention_mask"].shape == (3, 16)
    assert [r["shape"] for r in resolved] == [[3, 16], [3, 16]]
    assert np.all(arrays["attention_mask"] == 1)  # masks attend everywhere
    _, resolved = resolve_inputs(declared, 1, {"input_ids": [1, 16], "attention_mask": [1, 8]})
    assert "dim 'seq' is 8 here but 16" in resolved[1]["warnings"][0]  # a warning: ONNX Runtime decides


def test_scalars_take_a_value_or_fail_clearly():
    declared = [{"name": "audio", "dtype": "float32", "shape": ["batch", 400]},
                {"name": "sample_rate", "dtype": "int64", "shape": []}]
    arrays, _ = resolve_inputs(declared, 1, {}, {"sample_rate": 16000})
    assert arrays["sample_rate"].shape == () and int(arrays["sample_rate"]) == 16000
    assert arrays["sample_rate"].dtype == np.int64
    with pytest.raises(InputError) as err:
        resolve_inputs(declared, 1)
    assert "input 'sample_rate' is a scalar" in str(err.value)
    assert "--input-value sample_rate=" in str(err.value)


def test_unknown_input_names_are_errors():
    declared = [{"name": "x", "dtype": "float32", "shape": ["batch", 4]}]
    with pytest.raises(InputError, match="no input 'y'; its inputs are x"):
        resolve_inputs(declared, 1, {"y": [1, 4]})
    with pytest.raises(InputError, match="--input-value z"):
        resolve_inputs(declared, 1, {}, {"z": 3})


def test_arrays_are_deterministic_and_typed():
    a = make_array("x", [2, 3], "float32", seed=0)
    assert a.dtype == np.float32 and a.shape == (2, 3)
    assert np.array_equal(a, make_array("x", [2, 3], "float32", seed=0))
    assert not np.array_equal(a, make_array("y", [2, 3], "float32", seed=0))  # per-name streams
    assert not np.array_equal(a, make_array("x", [2, 3], "float32", seed=1))
    ids = make_array("input_ids", [2, 64], "int64")
    assert ids.dtype == np.int64 and ids.min() >= 0 and ids.max() < 100
    assert make_array("flags", [100], "bool").dtype == bool
    assert np.all(make_array("token_type_ids", [1, 8], "int64") == 0)
    assert make_array("position_ids", [2, 5], "int64")[1].tolist() == [0, 1, 2, 3, 4]
    assert make_array("h", [4], "float16").dtype == np.float16
    with pytest.raises(InputError, match="cannot generate"):
        make_array("s", [1], np.dtype("U4"))


def test_resolved_details_are_plain():
    declared = [{"name": "x", "dtype": "float32", "shape": [None, 4]}]
    _, resolved = resolve_inputs(declared, 3)
    assert resolved == [{"name": "x", "dtype": "float32", "shape": [3, 4], "declared": [None, 4]}]
