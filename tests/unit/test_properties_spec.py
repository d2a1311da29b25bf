"""Property-based fuzzing of what the user types: specs, options, flat form values, shapes and NAME=VALUE pairs.

Each parser either returns a valid value or raises its documented error (SpecError, InputError — both
ValueErrors whose message names the field), never another exception; valid specs survive to_dict/from_dict and
a JSON round trip unchanged. Deterministic (derandomize) and bounded, so the file runs in seconds.
"""

import dataclasses
import json
import math

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from console.spec.build import build_spec, flag_for, label_for, spec_data
from engines import backends, catalog, scenarios
from engines.inputs import InputError, format_shape, parse_shape
from engines.options import SpecError, check_value, is_number
from engines.spec import RunSpec, spec_fields

FUZZ = settings(derandomize=True, max_examples=120, deadline=None, database=None,
                suppress_health_check=[HealthCheck.too_slow])
ROUND_TRIPS = settings(FUZZ, max_examples=80)

# ---- Strategies: plain JSON-like data, and values near what each field expects
scalars = (st.none() | st.booleans() | st.integers(-(10**6), 10**6) | st.integers() | st.floats()
           | st.text(max_size=12) | st.sampled_from(["", "1x3", "cpu", "cuda:0", "fp16", "server", "x.onnx"]))
json_like = st.recursive(scalars, lambda inner: st.lists(inner, max_size=4)
                         | st.dictionaries(st.text(max_size=8), inner, max_size=4), max_leaves=8)
names = st.text(min_size=1, max_size=10)
dims = st.lists(st.integers(1, 4096), min_size=1, max_size=5)

SPEC_FIELDS = [f.name for f in dataclasses.fields(RunSpec)]
SCENARIO_OPTIONS = sorted({f.name for i in scenarios.infos() for f in dataclasses.fields(i.options)})
ENGINE_OPTIONS = {i.name: [f.name for f in dataclasses.fields(i.options)] for i in backends.infos()}
FIELDS = spec_fields()
PATHS = [f.path for f in FIELDS]


def _plausible(name):
    """A value for a RunSpec field: often one it accepts, sometimes a near miss, sometimes anything."""
    near = {
        "model": st.sampled_from([*catalog.names(), "nope", "model.onnx", "dir/model.pt2", "weights.pth"]),
        "engine": st.sampled_from([*backends.names(), "tensorflow"]),
        "target": st.sampled_from(["cpu", "mps", "cuda", "cuda:0", "cuda:x", "gpu"]),
        "precision": st.sampled_from([*backends.precisions(), "fp8"]),
        "scenario": st.sampled_from([*scenarios.names(), "batch"]),
        "mode": st.sampled_from(["inference", "training", "serve"]),
        "batch": st.integers(-2, 70000),
        "duration_s": st.floats(-1, 1e6) | st.integers(0, 100),
        "iterations": st.none() | st.integers(-1, 10**10),
        "warmup_s": st.floats(-1, 4000),
        "threads": st.none() | st.integers(0, 5000),
        "model_params": st.dictionaries(st.sampled_from(["layers", "hidden", "rows", "bogus"]),
                                        st.integers(-1, 2_000_000) | scalars, max_size=2),
        "inputs": st.dictionaries(names, dims | json_like, max_size=2),
        "input_values": st.dictionaries(names, st.floats() | st.integers() | scalars, max_size=2),
        "engine_options": st.dictionaries(
            st.sampled_from([*backends.names(), "tensorrt"]),
            st.dictionaries(st.sampled_from(sorted({n for v in ENGINE_OPTIONS.values() for n in v} | {"junk"})),
                            json_like, max_size=2) | json_like, max_size=2),
        "scenario_options": st.dictionaries(st.sampled_from([*SCENARIO_OPTIONS, "junk"]),
                                            st.floats(0.1, 2e6) | json_like, max_size=3) | json_like,
        "generation": st.dictionaries(st.sampled_from(["prompt_tokens", "output_tokens", "junk"]),
                                      st.integers(-1, 2_000_000) | scalars, max_size=2) | json_like,
        "limits": st.dictionaries(st.sampled_from(["load_timeout_s", "stall_timeout_s", "junk"]),
                                  st.floats(-1, 1e6) | scalars, max_size=2) | json_like,
        "version": st.sampled_from([1, 2, 3, "2", None]),
    }.get(name, scalars)
    return near | json_like if name not in ("version",) else near


spec_dicts = st.dictionaries(st.sampled_from([*SPEC_FIELDS, "torch", "ort", "unknown_field"]),
                             st.just(None), max_size=5).flatmap(
    lambda keys: st.fixed_dictionaries({k: _plausible(k) for k in keys}))


_SCENARIO_OPTIONS_NEAR = {
    "server": st.fixed_dictionaries({"qps": st.floats(0.5, 1e5)}, optional={"latency_bound_ms": st.floats(0.1, 1e4)}),
    "multi-stream": st.fixed_dictionaries({}, optional={"streams": st.sampled_from([1, 2, 4, 8])}),
    "offline": st.fixed_dictionaries({}, optional={"concurrency": st.integers(1, 8)}),
}
valid_specs = st.sampled_from(sorted(scenarios.names())).flatmap(lambda scenario: st.fixed_dictionaries(
    {"model": st.sampled_from(catalog.names()), "scenario": st.just(scenario),
     "scenario_options": _SCENARIO_OPTIONS_NEAR.get(scenario, st.just({}))},
    optional={"engine": st.sampled_from(backends.names()), "batch": st.sampled_from([1, 2, 4, 8]),
              "duration_s": st.floats(0.1, 3600), "iterations": st.none() | st.integers(1, 10**6),
              "warmup_s": st.floats(0, 60), "threads": st.none() | st.integers(1, 64),
              "target": st.sampled_from(["cpu", "cuda:0", "mps"]), "name": st.text(max_size=12),
              "precision": st.sampled_from(backends.precisions()),
              "inputs": st.dictionaries(names, dims, max_size=2),
              "input_values": st.dictionaries(names, st.integers(-100, 10**6) | st.floats(-1e9, 1e9), max_size=2),
              "limits": st.fixed_dictionaries({}, optional={"stall_timeout_s": st.floats(1, 600)})}))


def _assert_documented(exc: BaseException, kind: type = SpecError) -> None:
    assert isinstance(exc, kind), f"{type(exc).__name__}: {exc}"
    assert str(exc).strip(), "the error must say what is wrong"
    if isinstance(exc, SpecError):
        assert exc.detail  # (the field may be the empty key the input named)


def _spec_or_error(build):
    try:
        return build()
    except Exception as exc:  # noqa: BLE001 — the property is about which exceptions come out
        _assert_documented(exc)
        return None


# ---- RunSpec.from_dict / validate
@FUZZ
@given(spec_dicts)
@example({"inputs": None})  # found by this test: validate() iterated it (AttributeError)
@example({"model_params": "layers=2"})
@example({"version": 1, "engine_options": "torch"})  # a version-1 spec: dict("torch") was a bare ValueError
@example({"version": 1, "engine_options": 5})
def test_any_spec_dict_validates_or_raises_spec_error(data):
    spec = _spec_or_error(lambda: RunSpec.from_dict(data).validate())
    if spec is not None:
        assert spec.scenario in scenarios.names() and spec.engine in backends.names()


@ROUND_TRIPS
@given(valid_specs | spec_dicts)
def test_valid_specs_round_trip_through_dicts_and_json(data):
    spec = _spec_or_error(lambda: RunSpec.from_dict(data).validate())
    if spec is None:
        return
    again = RunSpec.from_dict(spec.to_dict()).validate()
    assert again == spec and again.to_dict() == spec.to_dict()
    text = json.dumps(spec.to_dict())
    assert RunSpec.from_dict(json.loads(text)).validate().to_dict() == spec.to_dict()


@FUZZ
@given(json_like)
def test_a_spec_that_is_not_a_mapping_is_a_spec_error(data):
    _spec_or_error(lambda: RunSpec.from_dict(data).validate())


# ---- engines/options.py check_value
@FUZZ
@given(st.sampled_from(FIELDS), json_like | st.integers() | st.floats())
def test_check_value_accepts_only_its_kind_or_raises_spec_error(fld, value):
    try:
        check_value(fld, value)
    except Exception as exc:  # noqa: BLE001
        _assert_documented(exc)
        return
    if value is None and fld.optional:
        return
    if fld.kind == "bool":
        assert isinstance(value, bool)
    elif fld.kind == "int":
        assert isinstance(value, int) and not isinstance(value, bool)
        assert (fld.minimum if fld.minimum is not None else 1) <= value
        assert fld.maximum is None or value <= fld.maximum
    elif fld.kind == "float":
        assert is_number(value) and (fld.maximum is None or value <= fld.maximum)
    elif fld.kind == "choice":
        assert value in fld.choices
    elif fld.kind == "str":
        assert isinstance(value, str)
    elif fld.kind == "pairs":
        assert isinstance(value, dict)


@FUZZ
@given(st.integers() | st.floats(allow_nan=True))
def test_is_number_never_raises(value):
    assert is_number(value) == (not (isinstance(value, float) and not math.isfinite(value)))  # nan, ±inf: no


# ---- console/spec/build.py: the one builder from flat values
pair_items = st.lists(st.one_of(
    st.text(max_size=16),
    st.builds(lambda n, d: f"{n}={'x'.join(map(str, d))}", names, dims),
    st.builds(lambda n, v: f"{n}={v!r}", names, st.integers() | st.floats()),
), max_size=3)
flat_values = st.dictionaries(st.sampled_from([*PATHS, "nope", "engine_options"]), st.just(None),
                              max_size=4).flatmap(lambda keys: st.fixed_dictionaries({
                                  k: (pair_items | json_like) if k in ("inputs", "input_values", "model_params",
                                                                       "onnxruntime.provider_options")
                                  else (_plausible(k) if k in SPEC_FIELDS else json_like) for k in keys}))


@FUZZ
@given(flat_values)
def test_build_spec_from_any_flat_values_gives_a_spec_or_names_the_path(values):
    spec = _spec_or_error(lambda: build_spec(values))
    if spec is not None:
        assert isinstance(spec, RunSpec)


@FUZZ
@given(st.sampled_from(PATHS) | st.text(max_size=20))
def test_flag_and_label_for_any_path_are_text(path):
    assert isinstance(flag_for(path), str) and flag_for(path)
    assert isinstance(label_for(path), str)


# ---- shapes: "1x3x224x224"
@FUZZ
@given(st.text(max_size=24) | st.from_regex(r"\A[\[(]?[0-9 xX,*]{0,20}[\])]?\Z"))
def test_parse_shape_returns_whole_dims_or_raises_input_error(text):
    try:
        shape = parse_shape(text)
    except Exception as exc:  # noqa: BLE001
        _assert_documented(exc, InputError)
        assert "1x3x224x224" in str(exc)  # the fix: how to write a shape
        return
    assert shape and all(isinstance(d, int) and d >= 1 for d in shape)
    assert parse_shape(format_shape(shape)) == shape


@FUZZ
@given(st.lists(st.integers(1, 10**12), min_size=1, max_size=6), st.sampled_from(["x", "X", ",", "*", " x ", ", "]),
       st.sampled_from([("", ""), ("[", "]"), ("(", ")"), (" ", " ")]))
def test_shapes_round_trip_whatever_the_separator(shape, separator, brackets):
    text = brackets[0] + separator.join(map(str, shape)) + brackets[1]
    assert parse_shape(text) == shape
    assert parse_shape(format_shape(shape)) == shape


@pytest.mark.parametrize("text", ["1x²", "٣x4", "1x" + "9" * 5000, "0x3", "-1x3", "1xx3", "1.5x2"])
def test_odd_digits_and_huge_numbers_are_input_errors(text):
    # "²".isdigit() is True but int("²") fails; a 5000-digit number exceeds int()'s digit limit
    with pytest.raises(InputError, match="1x3x224x224"):
        parse_shape(text)


# ---- NAME=SHAPE and NAME=NUMBER pairs
@pytest.fixture(scope="module")
def model_file(tmp_path_factory):
    """Input shapes and values apply to model files only: a file validation accepts (it does not parse it)."""
    path = tmp_path_factory.mktemp("model") / "model.onnx"
    path.write_bytes(b"x")
    return {"model": str(path), "engine": "onnxruntime"}


pair_names = st.text(st.characters(blacklist_characters="="), min_size=1, max_size=10)


@FUZZ
@given(st.dictionaries(pair_names, st.lists(st.integers(1, 10**6), min_size=1, max_size=5), min_size=1,
                       max_size=3))
def test_input_shape_pairs_round_trip(model_file, shapes):
    items = [f"{name}={format_shape(shape)}" for name, shape in shapes.items()]
    assert spec_data({"inputs": items}) == {"inputs": shapes}
    assert build_spec({**model_file, "inputs": items}).inputs == shapes


@FUZZ
@given(st.dictionaries(pair_names, st.integers(-(10**18), 10**18) | st.floats(allow_nan=False, allow_infinity=False),
                       min_size=1, max_size=3))
def test_input_value_pairs_round_trip(model_file, values):
    items = [f"{name}={value!r}" for name, value in values.items()]
    parsed = spec_data({"input_values": items})["input_values"]
    assert parsed == values and all(type(parsed[k]) is type(v) for k, v in values.items())
    assert build_spec({**model_file, "input_values": items}).input_values == values


@FUZZ
@given(st.sampled_from(["inputs", "input_values", "model_params"]), st.lists(st.text(max_size=16), max_size=3))
def test_any_pair_text_parses_or_raises_spec_error_naming_the_field(path, items):
    try:
        data = spec_data({path: items})
    except Exception as exc:  # noqa: BLE001
        _assert_documented(exc)
        assert exc.field.startswith(path)
        return
    parsed = data.get(path, {})
    for item in items:
        name = item.partition("=")[0]
        assert name in parsed
