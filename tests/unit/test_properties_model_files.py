"""Fuzzing model-file sniffing (engines.model_files.detect_format) with bytes written to files.

Whatever the bytes — noise, pickle heads, zip signatures, real zips with chosen members, a real ONNX model cut
or with bytes flipped — detect_format returns a format or raises ModelFileError, and never unpickles anything:
pickle's loaders are replaced by ones that fail the test, and a pickle whose loading would create a file is
among the inputs. Deterministic (derandomize) and bounded.
"""

import io
import os
import pickle
import zipfile
from pathlib import Path

import onnx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper

from engines.model_files import ModelFileError, UnsafeModelFile, detect_format

FUZZ = settings(derandomize=True, max_examples=250, deadline=None, database=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
FORMATS = {"onnx", "torchscript", "pt2"}
SUFFIXES = [".onnx", ".pt", ".pt2", ".jit", ".bin", ""]


class _Touch:
    """Unpickling this creates the file it names: proof that code ran."""

    def __init__(self, path):
        self.path = path

    def __reduce__(self):
        return (Path.touch, (Path(self.path),))


def _onnx_bytes() -> bytes:
    node = helper.make_node("Relu", ["x"], ["y"])
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()


ONNX = _onnx_bytes()
MEMBERS = ["archive_format", "models/m.json", "serialized_exported_program.json", "code/__torch__.py",
           "constants.pkl", "data.pkl", "data/0", "version", "byteorder", "README"]


def _zip(members: list[str], root: str, payload: bytes, compress: bool) -> bytes:
    buffer = io.BytesIO()
    method = zipfile.ZIP_DEFLATED if compress else zipfile.ZIP_STORED
    with zipfile.ZipFile(buffer, "w", method) as archive:
        for name in members:
            archive.writestr(f"{root}/{name}" if root else name, payload)
    return buffer.getvalue()


def _mutate(data: bytes, cut: int | None, flips: list[tuple[int, int]]) -> bytes:
    out = bytearray(data)
    for position, value in flips:
        if out:
            out[position % len(out)] = value
    return bytes(out[:cut] if cut is not None else out)


noise = st.binary(max_size=512)
heads = st.builds(lambda head, rest: head + rest,
                  st.sampled_from([b"PK\x03\x04", b"PK\x05\x06", b"\x80\x02", b"\x80\x05", b"(", b"]", b"}", b"c",
                                   b"\x08\x07\x12", b"\n", b"PK"]), noise)
zips = st.builds(_zip, st.lists(st.sampled_from(MEMBERS), unique=True, max_size=4),
                 st.sampled_from(["", "model", "a/b"]), st.binary(max_size=64), st.booleans())
mutations = st.tuples(st.none() | st.integers(0, 600), st.lists(st.tuples(st.integers(0, 10**6),
                                                                           st.integers(0, 255)), max_size=4))
mutated_zips = st.builds(lambda data, m: _mutate(data, *m), zips, mutations)
mutated_onnx = st.builds(lambda m: _mutate(ONNX, *m), mutations)
contents = noise | heads | zips | mutated_zips | mutated_onnx


@pytest.fixture
def no_unpickling(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("detect_format must never unpickle")

    for name in ("load", "loads", "Unpickler"):
        monkeypatch.setattr(pickle, name, refuse)


def _check(path: Path) -> None:
    try:
        found = detect_format(path)
    except ModelFileError as exc:
        assert path.name in str(exc), f"the message names the file: {exc}"
        return
    assert found in FORMATS


@FUZZ
@given(contents, st.sampled_from(SUFFIXES))
def test_any_bytes_are_a_format_or_a_model_file_error(tmp_path, no_unpickling, data, suffix):
    path = tmp_path / f"model{suffix}"
    path.write_bytes(data)
    _check(path)


@FUZZ
@given(st.sampled_from(SUFFIXES), st.integers(0, 5), st.sampled_from(["", "model"]), st.booleans())
def test_a_pickle_that_would_run_code_is_refused_and_never_loaded(tmp_path, suffix, protocol, root, zipped):
    marker = tmp_path / "ran"
    payload = pickle.dumps(_Touch(str(marker)), protocol=protocol)
    data = _zip(["data.pkl"], root, payload, False) if zipped else payload
    path = tmp_path / f"evil{suffix}"
    path.write_bytes(data)
    with pytest.raises(ModelFileError) as err:
        detect_format(path)
    if zipped or protocol >= 2:
        assert isinstance(err.value, UnsafeModelFile) and "never unpickles" in str(err.value)
    assert not marker.exists()


def test_the_fuzz_corpus_reaches_every_outcome(tmp_path):
    """The generated kinds of input cover each format and the refusals, so the fuzzing above is not vacuous."""
    cases = {"onnx": (ONNX, ".onnx"), "pt2": (_zip(["archive_format"], "m", b"", False), ".pt2"),
             "torchscript": (_zip(["code/__torch__.py"], "m", b"", False), ".pt")}
    for expected, (data, suffix) in cases.items():
        path = tmp_path / f"case{suffix}"
        path.write_bytes(data)
        assert detect_format(path) == expected
    onnx.load_from_string(ONNX)  # the sample is a real model
    for data in (_zip(["data.pkl"], "m", b"", False), b"\x80\x04junk."):
        path = tmp_path / "refused.pt"
        path.write_bytes(data)
        with pytest.raises(UnsafeModelFile):
            detect_format(path)
    assert not os.path.exists(tmp_path / "ran")
