"""The feed benchmark on real files with real reader processes (short trials): tmpfs is limited by the readers
and says so, a warm data set cannot pass even when AU is met, bad input names the fix; the CLI module and
`make-data --workload`."""

from __future__ import annotations

import argparse
import json

import numpy as np
import pytest

from console.cli import main as cli_main
from console.cli import storage_feed
from engines.storage import dataset, feed, workloads
from engines.storage.errors import StorageError
from tests.storage_devices import Unavailable, tmpfs_dir

CONTRACT = {"kind", "label", "passed", "status_reason", "cache_state", "method", "figures", "latency_ns"}
MINE = {"workload", "accelerators", "readers", "au_per_accelerator", "steps", "find_max", "limited_by",
        "read_latency_ms"}


def _data(directory, sample_bytes, files):
    dataset.write(directory, workloads.custom(sample_bytes, 1, 0.01), files, fmt="bin")
    return str(directory)


def test_tmpfs_is_limited_by_the_readers_and_cannot_pass():
    try:
        context = tmpfs_dir()
        directory = context.__enter__()
    except Unavailable as exc:
        pytest.skip(str(exc))
    try:
        # one reader copying 8 MB samples from memory cannot keep up with a 1 ms step: its CPU is the limit
        options = {"data_dir": _data(directory, 8_000_000, 4), "workload": "custom", "sample_bytes": 8_000_000,
                   "batch": 1, "compute_ms": 1, "readers": 1, "find_max": True, "duration_s": 0.6}
        events = []
        result = feed.run(options, events.append)
    finally:
        context.__exit__(None, None, None)
    assert CONTRACT | MINE <= set(result)
    assert result["find_max"]["max_passing"] == 0 and result["find_max"]["series"][0][0] == 1
    assert result["limited_by"] == "readers", result["trials"]
    assert "more reader processes" in result["lever"] or "more CPU cores" in result["lever"]
    assert result["cache_state"] == "warm" and result["passed"] is False
    assert "tmpfs" in result["status_reason"]
    assert result["figures"]["reader_busy_percent"] >= 80
    assert events and events[-1]["fraction"] == 1.0
    json.dumps(result)  # JSON-able


def test_a_warm_data_set_cannot_pass_even_when_au_is_met(tmp_path):
    options = {"data_dir": _data(tmp_path, 100_000, 4), "workload": "custom", "sample_bytes": 100_000,
               "batch": 2, "compute_ms": 20, "readers": 2, "accelerators": 2, "cold": False, "duration_s": 0.5}
    result = feed.run(options)
    assert result["figures"]["au_percent"] >= 90  # the storage kept up …
    assert result["cache_state"] == "warm" and result["passed"] is False  # … but from the page cache
    assert result["status_reason"].startswith("warm data set, cannot pass")
    assert len(result["au_per_accelerator"]) == 2
    assert all(n >= 2 for n in result["steps"]["measured_per_accelerator"])
    assert result["latency_ns"] and all(len(pair) == 2 for pair in result["latency_ns"])
    assert result["read_latency_ms"]["p50"] is not None


def test_bad_input_names_the_fix(tmp_path):
    base = {"workload": "custom", "sample_bytes": 1000, "batch": 1, "compute_ms": 1, "duration_s": 0.2}
    with pytest.raises(StorageError, match="does not exist"):
        feed.run({**base, "data_dir": str(tmp_path / "missing")})
    with pytest.raises(StorageError, match="make-data .* --workload unet3d"):
        feed.run({**base, "data_dir": str(tmp_path)})
    data = _data(tmp_path / "d", 1000, 2)
    with pytest.raises(StorageError, match="--readers 2 or fewer"):
        feed.run({**base, "data_dir": data, "readers": 3})
    with pytest.raises(StorageError, match="unknown --format"):
        feed.run({**base, "data_dir": data, "format": "parquet"})
    (tmp_path / "d" / "fake.npy").write_bytes(b"not numpy at all")
    with pytest.raises(StorageError, match="not an .npy file"):
        feed.run({**base, "data_dir": data, "format": "npy", "readers": 1})


def _args(*argv):
    parser = argparse.ArgumentParser()
    storage_feed.add_arguments(parser)
    return parser.parse_args(list(argv))


def test_cli_options_and_summary(tmp_path):
    options = storage_feed.options_from(_args("--data-dir", str(tmp_path), "--workload", "cosmoflow", "--gpu",
                                              "a100", "--find-max", "--readers", "2", "--duration", "1"))
    assert options["find_max"] and options["accelerators"] is None and options["gpu"] == "a100"
    assert options["cold"] is True and options["duration_s"] == 1.0
    with pytest.raises(StorageError, match="--compute-ms"):
        storage_feed.options_from(_args("--data-dir", "x", "--workload", "custom", "--sample-bytes", "9",
                                        "--batch", "1"))
    with pytest.raises(StorageError, match="--workload custom"):
        storage_feed.options_from(_args("--data-dir", "x", "--batch", "4"))
    with pytest.raises(SystemExit):
        _args("--data-dir", "x", "--find-max", "--accelerators", "3")
    data = _data(tmp_path / "d", 50_000, 2)
    options = storage_feed.options_from(_args("--data-dir", data, "--workload", "custom", "--sample-bytes",
                                              "50000", "--batch", "1", "--compute-ms", "10", "--readers", "1",
                                              "--duration", "0.3", "--warm"))
    lines = storage_feed.text_lines(feed.run(options))
    text = "\n".join(lines)
    assert "verdict: FAIL" in text and "warm" in text and "limited by:" in text and "p50" in text


def test_make_data_writes_workload_shaped_files(tmp_path, capsys):
    code = cli_main(["make-data", "--workload", "resnet50", "--dir", str(tmp_path), "--files", "2", "--scale",
                     "0.001"])
    assert code == 0
    out = capsys.readouterr().out
    assert "resnet50" in out and "scaled" in out
    files = sorted(tmp_path.glob("resnet50-*.npy"))
    assert len(files) == 2
    array = np.load(files[0])
    assert array.shape == (1251, round(114_660 * 0.001)) and array.dtype == np.uint8
    assert cli_main(["make-data", "--workload", "unet3d", "--dir", str(tmp_path), "--files", "10000000"]) == 2
    assert "--scale" in capsys.readouterr().err
    assert cli_main(["make-data", "--model", "mlp", "--dir", str(tmp_path), "--files", "3"]) == 2


def test_a_real_model_replaces_the_emulated_step_and_checks_it(tmp_path):
    pytest.importorskip("torch")
    options = storage_feed.options_from(_args("--data-dir", _data(tmp_path, 100_000, 2), "--workload", "custom",
                                              "--sample-bytes", "100000", "--batch", "4", "--model", "mlp",
                                              "--accelerators", "1", "--readers", "1", "--duration", "0.4"))
    assert "compute_ms" not in options and options["model"] == "mlp"
    result = feed.run(options)
    check = result["model_check"]
    assert check["model"] == "mlp" and check["device"] == "cpu" and check["batch"] == 4
    assert check["step_ms_alone"] > 0 and check["step_ms_in_trial"] > 0
    assert 0 < check["au_real_percent"] <= 100 and 0 < check["au_emulated_percent"] <= 100
    assert result["figures"]["emulated_au_percent"] == check["au_emulated_percent"]
    assert result["workload"]["compute_s"] == pytest.approx(check["step_ms_alone"] / 1e3)
    assert "real mlp forward pass" in result["method"] and "Emulation check" in result["method"]
    assert any(line.startswith("  real model: mlp") for line in storage_feed.text_lines(result))
    with pytest.raises(StorageError, match="--accelerators N"):
        storage_feed.options_from(_args("--data-dir", "x", "--model", "mlp", "--find-max"))
    with pytest.raises(StorageError, match="unknown catalog model"):
        feed.run({**options, "model": "nope"})
