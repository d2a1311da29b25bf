"""Sample files for the input-pipeline scenario: deterministic, decodable, and `labconsole make-data` writes them."""

import json

import numpy as np
import pytest

from console.cli import main
from engines import datafiles
from engines.datafiles import InputLayout
from engines.sample_writer import write_samples

LAYOUT = InputLayout("features", (6,), "float32")


@pytest.mark.parametrize("fmt", ["npy", "f32", "bin"])
def test_the_same_request_writes_the_same_bytes_and_they_decode(tmp_path, fmt):
    first = write_samples(tmp_path / "a", LAYOUT, 3, fmt)
    write_samples(tmp_path / "b", LAYOUT, 3, fmt)
    names = sorted(p.name for p in (tmp_path / "a").iterdir())
    assert names == [f"sample-00000{i}.{fmt}" for i in range(3)]
    for name in names:
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()
    decoded = [datafiles.decode(p, p.read_bytes(), LAYOUT) for p in datafiles.list_files(tmp_path / "a")]
    assert not np.array_equal(decoded[0], decoded[1])  # samples differ from each other
    assert first["files"] == 3 and first["bytes"] == sum(p.stat().st_size for p in (tmp_path / "a").iterdir())


def test_token_inputs_get_integer_samples(tmp_path):
    write_samples(tmp_path, datafiles.layout_for_catalog("bert"), 2, "bin")
    path = datafiles.list_files(tmp_path)[0]
    ids = datafiles.decode(path, path.read_bytes(), datafiles.layout_for_catalog("bert"))
    assert ids.dtype == np.int64 and ids.shape == (128,)


def test_bad_requests_are_refused(tmp_path):
    with pytest.raises(ValueError, match="unknown format"):
        write_samples(tmp_path, LAYOUT, 1, "png")
    with pytest.raises(ValueError, match="count must be ≥ 1"):
        write_samples(tmp_path, LAYOUT, 0)


def test_make_data_command_writes_a_directory_the_scenario_reads(tmp_path, capsys):
    target = tmp_path / "data"
    assert main(["make-data", "--dir", str(target), "--model", "mlp", "--count", "3", "--json"]) == 0
    written = json.loads(capsys.readouterr().out)
    assert written["files"] == 3 and written["input"] == {"name": "features", "sample_shape": [512],
                                                          "dtype": "float32"}
    assert len(datafiles.list_files(target)) == 3
    assert main(["make-data", "--dir", str(tmp_path / "s"), "--shape", "3x4", "--format", "f32", "--count", "2"]) == 0
    assert "wrote 2 f32 files" in capsys.readouterr().out


@pytest.mark.parametrize("argv, message", [
    (["--model", "mlp", "--shape", "3"], "either --model NAME"),
    ([], "either --model NAME"),
    (["--model", "nope"], "unknown catalog model 'nope'"),
    (["--shape", "3xa"], "bad shape"),
    (["--shape", "3", "--dtype", "floaty"], "--dtype 'floaty'"),
    (["--model", "mlp", "--count", "0"], "argument --count: must be a whole number from 1"),
])
def test_make_data_refuses_bad_options_with_the_fix(tmp_path, capsys, argv, message):
    assert main(["make-data", "--dir", str(tmp_path / "d"), *argv]) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "d").exists()
