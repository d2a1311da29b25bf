"""Cold start decomposition (engines.storage.coldstart): stages per read mode for ONNX, .pt2 and safetensors, the
O_DIRECT fallback with its reason, and hostile files refused before anything runs (markers never appear)."""

from __future__ import annotations

import argparse
import errno
import os
import pickle

import pytest
import torch
from model_file_samples import Marker, rewrite_zip, sample_files
from safetensors.torch import save_file

from console.cli import storage_coldstart as cli
from engines.storage import coldstart, coldstart_read
from engines.storage.coldstart_options import validate
from engines.storage.errors import StorageError

STAGE_KEYS = {"mode", "used", "read_s", "deserialize_s", "to_device_s", "first_inference_s", "total_s", "read_note",
              "cache_state", "cache_note", "to_device_note", "first_inference_note"}


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    made = dict(sample_files(tmp_path_factory))
    weights = made["root"] / "tiny.safetensors"
    save_file({k: v.contiguous() for k, v in made["model"].state_dict().items()}, weights)
    made["safetensors"] = weights
    return made


def _run(path, **options):
    return coldstart.run({"file": str(path), **options}, lambda _update: None)


@pytest.mark.parametrize("kind", ["onnx", "pt2"])
def test_a_graph_file_decomposes_into_four_stages_per_mode(files, kind):
    result = _run(files[kind])
    assert result["kind"] == "coldstart" and result["passed"] is None and result["file"]["format"] == kind
    assert [s["mode"] for s in result["stages"]] == ["mmap", "buffered", "direct"]
    for stage in result["stages"]:
        assert set(stage) >= STAGE_KEYS
        assert stage["read_s"] > 0 and stage["deserialize_s"] > 0 and stage["first_inference_s"] > 0
        assert stage["to_device_s"] is None and stage["to_device_note"].startswith("cpu — no copy")
        assert stage["total_s"] == pytest.approx(stage["read_s"] + stage["deserialize_s"] + stage["first_inference_s"])
        assert stage["cache_state"] in ("cold", "warm")
        assert result["figures"][f"{stage['mode']}_read_s"] == stage["read_s"]
    assert result["warmup_s"] > 0 and result["file"]["bytes"] == os.path.getsize(files[kind])


def test_safetensors_has_no_inference_and_says_why(files):
    result = _run(files["safetensors"], modes="buffered")
    (stage,) = result["stages"]
    assert result["file"]["format"] == "safetensors" and stage["deserialize_s"] > 0
    assert stage["first_inference_s"] is None and stage["first_inference_note"].startswith("not applicable (weights only")
    assert result["figures"]["buffered_first_inference_s"] is None


def test_o_direct_refused_by_the_file_system_falls_back_with_the_reason(files, monkeypatch):
    real_open = os.open

    def refusing(path, flags, *args, **kwargs):
        if flags & getattr(os, "O_DIRECT", 0):
            raise OSError(errno.EINVAL, "Invalid argument")
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(coldstart_read.os, "open", refusing)
    result = _run(files["safetensors"], modes="direct")
    (stage,) = result["stages"]
    assert stage["mode"] == "direct" and stage["used"] == "buffered"
    assert "refused O_DIRECT" in stage["read_note"] and "refused O_DIRECT" in result["status_reason"]


def test_every_mode_returns_the_files_bytes(files):
    expected = files["onnx"].read_bytes()
    for mode in coldstart_read.MODES:
        data, info = coldstart_read.read(files["onnx"], mode)
        assert bytes(data) == expected, mode


def test_a_pickle_is_refused_and_never_runs(files, tmp_path):
    marker = tmp_path / "pickle_ran"
    evil = tmp_path / "weights.safetensors"  # the name claims data; the bytes are a pickle
    evil.write_bytes(pickle.dumps(Marker(marker)))
    saved = tmp_path / "saved.pt"
    torch.save(Marker(marker), saved)
    for path in (evil, saved):
        with pytest.raises(StorageError, match="pickled Python object"):
            _run(path)
    assert not marker.exists()


def test_a_pt2_carrying_a_pickle_is_refused_and_never_runs(files, tmp_path):
    marker = tmp_path / "pt2_pickle_ran"
    evil = tmp_path / "evil.pt2"
    rewrite_zip(files["pt2"], evil, {"sample_inputs/model.pt": pickle.dumps(Marker(marker))})
    with pytest.raises(StorageError):
        _run(evil)
    assert not marker.exists()


def test_torchscript_is_refused_without_trust(files):
    with pytest.raises(StorageError, match="TorchScript is code") as err:
        _run(files["script"])
    assert "--trust-code" in str(err.value)


def test_a_file_changed_after_its_checks_is_refused(files, monkeypatch):
    from engines.storage import coldstart_formats

    real = coldstart_formats.identify
    monkeypatch.setattr(coldstart_formats, "identify", lambda path, trust: {**real(path, trust), "sha256": "0" * 64})
    with pytest.raises(StorageError, match="changed between its safety checks and the timed read"):
        _run(files["safetensors"], modes="buffered")


def test_random_bytes_are_not_a_model(tmp_path):
    junk = tmp_path / "junk.safetensors"
    junk.write_bytes(os.urandom(4096))
    with pytest.raises(StorageError, match="junk.safetensors"):
        _run(junk)


@pytest.mark.parametrize(("options", "needle"), [
    ({}, "no model file"),
    ({"file": "/no/such/model.onnx"}, "does not exist"),
    ({"modes": "mmap,zip"}, "unknown read mode"),
    ({"device": "tpu"}, "unknown device"),
])
def test_bad_options_are_refused_with_a_fix(files, options, needle):
    with pytest.raises(StorageError) as err:
        validate({"file": str(files["onnx"]), **options} if "file" not in options and options else options)
    assert needle in str(err.value) and err.value.fix


def test_cli_flags_and_summary(files):
    parser = argparse.ArgumentParser()
    cli.add_arguments(parser)
    options = cli.options_from(parser.parse_args(["--file", str(files["onnx"]), "--modes", "buffered,mmap"]))
    assert options["modes"] == ["buffered", "mmap"] and options["trust_code"] is False
    text = "\n".join(cli.text_lines(coldstart.run(options, lambda _update: None)))
    assert "first inference" in text and "buffered" in text and "cpu — no copy" in text and "method:" in text


def test_rounds_alternate_the_modes_and_keep_the_median(files):
    result = _run(files["safetensors"], modes="mmap,buffered", rounds=3)
    for stage in result["stages"]:
        totals = sorted(r["total_s"] for r in stage["rounds"])
        assert len(totals) == 3 and stage["total_s"] == totals[1]
    assert "median of 3 rounds" in "\n".join(cli.text_lines(result))
    with pytest.raises(StorageError, match="--rounds"):
        validate({"file": str(files["onnx"]), "rounds": 10})
