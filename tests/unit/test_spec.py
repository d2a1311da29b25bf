import json

import pytest

from engines.spec import RunLimits, RunSpec, SpecError


def test_defaults_validate_and_round_trip_through_json():
    spec = RunSpec(model="cnn", batch=4, duration_s=2.5, iterations=100, name="x").validate()
    again = RunSpec.from_dict(json.loads(json.dumps(spec.to_dict())))
    assert again == spec
    assert isinstance(again.limits, RunLimits)


@pytest.mark.parametrize(
    ("change", "field", "words"),
    [
        ({"model": "resnet9000"}, "model", "allowed: mlp, cnn"),
        ({"engine": "tensorflow"}, "engine", "allowed: torch"),
        ({"target": "tpu"}, "target", "cpu, cuda:N or mps"),
        ({"target": "cuda:x"}, "target", "cuda:N"),
        ({"batch": 0}, "batch", "from 1 to"),
        ({"batch": 2.5}, "batch", "whole number"),
        ({"batch": True}, "batch", "whole number"),
        ({"duration_s": 0}, "duration_s", "> 0"),
        ({"duration_s": -1}, "duration_s", "> 0"),
        ({"duration_s": float("nan")}, "duration_s", "> 0"),
        ({"iterations": 0}, "iterations", "from 1"),
        ({"warmup_s": -0.5}, "warmup_s", "≥ 0"),
        ({"threads": 0}, "threads", "from 1"),
        ({"scenario": "burst"}, "scenario", "single-stream"),
        ({"limits": RunLimits(stall_timeout_s=0)}, "limits.stall_timeout_s", "> 0"),
    ],
)
def test_invalid_fields_are_named_with_what_is_allowed(change, field, words):
    with pytest.raises(SpecError) as info:
        RunSpec(**change).validate()
    assert info.value.field == field
    assert words in str(info.value)


def test_unknown_keys_are_refused_not_ignored():
    with pytest.raises(SpecError) as info:
        RunSpec.from_dict({"model": "mlp", "batchsize": 8})
    assert info.value.field == "batchsize"
    with pytest.raises(SpecError):
        RunSpec.from_dict({"limits": {"stall": 3}})


def test_label_is_short_and_readable():
    assert RunSpec(model="mlp", batch=8).label() == "mlp · torch · cpu · b8"
