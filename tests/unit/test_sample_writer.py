"""Sample files for the input-pipeline scenario: deterministic, decodable, and `labconsole make-data` writes them."""

import json
from pathlib import Path

import numpy as np
import pytest

from console.cli import main
from engines import datafiles, sample_writer
from engines.datafiles import InputLayout
from engines.sample_writer import SampleRequestError, check_request, write_samples

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


# ---- Refused before anything is allocated or created (issue 19, case 4)
@pytest.mark.parametrize("argv, message", [
    # 3.6 PiB per sample: numpy's _ArrayMemoryError traceback before the check, after the directory was made
    (["--shape", "100000x100000x100000"], "one 100000x100000x100000 float32 sample is 3.6 PiB"),
    # an InputError traceback from make_array before the check
    (["--shape", "3x4", "--dtype", "object"], "object is not numeric"),
    (["--shape", "3x4", "--dtype", "U5"], "is not numeric"),
    (["--shape", "3x4", "--dtype", "V8"], "is not numeric"),
    (["--shape", "3x4", "--dtype", "i4,i4"], "is not numeric"),
    (["--shape", "3x4", "--dtype", "complex64"], "is not numeric"),
    (["--shape", "3x4", "--dtype", "x" * 300], "not a numpy dtype"),
    (["--shape", "x".join(["1"] * 65)], "at most 64"),
    # 8 MiB of files on a disk with 1 MiB free (below): written until the disk filled before the check
    (["--shape", "1024x1024", "--count", "2"], "2 npy files of 4.0 MiB are 8.0 MiB, but"),
])
def test_make_data_refuses_what_cannot_be_written_before_creating_anything(tmp_path, capsys, monkeypatch, argv,
                                                                           message):
    monkeypatch.setattr(sample_writer, "_free_space", lambda directory: 1 << 20)  # never the real disk's fill
    assert main(["make-data", "--dir", str(tmp_path / "d"), *argv]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "d").exists()


def test_refusals_name_the_allowed_dtypes_and_the_sizes(tmp_path):
    with pytest.raises(SampleRequestError, match="use one of float16, float32.*bool"):
        check_request(tmp_path, InputLayout("x", (3,), "object"), 1)
    layout = InputLayout("x", (1024, 1024), "float32")  # 4 MiB a sample, 16 MiB of memory to build one
    with pytest.raises(SampleRequestError, match=r"4\.0 MiB and building it takes about 16\.0 MiB of memory, but "
                                                 r"this machine has 8\.0 MiB available"):
        check_request(tmp_path, layout, 1, available_memory=8 << 20, free_disk=1 << 40)
    with pytest.raises(SampleRequestError, match=r"10 npy files of 4\.0 MiB are 40\.0 MiB, .* has 20\.0 MiB free"):
        check_request(tmp_path, layout, 10, available_memory=1 << 40, free_disk=20 << 20)
    plan = check_request(tmp_path, layout, 10, "bin", available_memory=1 << 40, free_disk=40 << 20)
    assert plan.total_bytes == 40 << 20 and plan.file_bytes == 4 << 20


def test_the_planned_size_is_what_is_written_and_a_rerun_reuses_the_room(tmp_path):
    layout = InputLayout("x", (7, 5), "int16")
    plan = check_request(tmp_path / "d", layout, 3, "npy")
    written = write_samples(tmp_path / "d", layout, 3, "npy")
    assert written["bytes"] == plan.total_bytes
    # the same request again overwrites the same files: it needs no free space beyond theirs
    assert check_request(tmp_path / "d", layout, 3, "npy", free_disk=0).total_bytes == plan.total_bytes


def test_a_write_that_fails_part_way_leaves_no_truncated_file(tmp_path, monkeypatch):
    def full(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(np, "save", full)
    with pytest.raises(OSError):
        write_samples(tmp_path, LAYOUT, 2, "npy")
    assert list(tmp_path.iterdir()) == []
    # the command: a failure (exit 1) with the fix, not a usage error, and nothing half-written
    assert main(["make-data", "--dir", str(tmp_path / "d"), "--shape", "3x4", "--count", "2"]) == 1
    assert list((tmp_path / "d").iterdir()) == []


def test_a_path_the_os_refuses_is_a_usage_error_not_a_traceback(tmp_path, capsys):
    too_long = tmp_path / ("a" * 300) / "d"  # stat raised ENAMETOOLONG while the free space was looked up
    assert main(["make-data", "--dir", str(too_long), "--shape", "3", "--count", "1"]) == 2
    err = capsys.readouterr().err
    assert "File name too long" in err and len(err.strip().splitlines()) == 1
    assert main(["make-data", "--dir", str(tmp_path / "a\0b"), "--shape", "3", "--count", "1"]) == 2
    assert "NUL character" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs Linux procfs")
def test_a_filesystem_without_a_size_is_not_taken_for_a_full_disk():
    assert sample_writer._free_space(Path("/proc/none")) is None  # procfs: total 0, free 0
