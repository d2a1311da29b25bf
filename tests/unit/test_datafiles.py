"""engines.datafiles: listing a data directory, reading sample files and decoding them to the model's input.

Every refusal names the file (or directory) and says what to do; nothing here is unpickled.
"""

import io
import os
import pickle

import numpy as np
import pytest

from engines import datafiles
from engines.datafiles import DataError, InputLayout

LAYOUT = InputLayout("features", (2, 3), "float32")


def write(path, data):
    path.write_bytes(data)
    return path


def npy(path, array, **kwargs):
    np.save(path, array, **kwargs)
    return path


# ---- listing
def test_files_are_listed_in_name_order_and_other_files_are_left_out(tmp_path):
    for name in ("b.npy", "a.f32", "c.bin", "notes.txt"):
        write(tmp_path / name, b"x")
    (tmp_path / "sub.npy").mkdir()
    assert [p.name for p in datafiles.list_files(tmp_path)] == ["a.f32", "b.npy", "c.bin"]


def test_a_missing_directory_says_how_to_make_one(tmp_path):
    with pytest.raises(DataError, match=r"does not exist.*labconsole make-data --dir .*missing"):
        datafiles.list_files(tmp_path / "missing")


def test_a_file_given_as_directory_is_refused(tmp_path):
    with pytest.raises(DataError, match="is a file, not a directory"):
        datafiles.list_files(write(tmp_path / "x.npy", b"x"))


def test_an_empty_directory_and_one_without_samples_are_refused(tmp_path):
    with pytest.raises(DataError, match=r"has no files ending in \.npy, \.f32, \.bin.*make-data"):
        datafiles.list_files(tmp_path)
    write(tmp_path / "readme.txt", b"x")
    with pytest.raises(DataError, match="has 1 other file"):
        datafiles.list_files(tmp_path)


def test_an_unreadable_directory_says_which_permission_to_give(tmp_path, monkeypatch):
    def denied(path):
        raise PermissionError(13, "Permission denied", str(path))

    monkeypatch.setattr(datafiles.os, "scandir", denied)
    with pytest.raises(DataError, match=r"cannot be read \(Permission denied\).*chmod u\+rx"):
        datafiles.list_files(tmp_path)


def test_an_unreadable_file_is_named(tmp_path, monkeypatch):
    bad = write(tmp_path / "b.npy", b"x")
    write(tmp_path / "a.npy", b"x")
    monkeypatch.setattr(datafiles.os, "access", lambda path, mode: str(path) != str(bad))
    with pytest.raises(DataError, match=f"sample file {bad} is not readable"):
        datafiles.list_files(tmp_path)


# ---- decoding
def test_npy_decodes_to_the_sample_shape_and_a_leading_one_is_dropped(tmp_path):
    sample = np.arange(6, dtype=np.float32).reshape(2, 3)
    path = npy(tmp_path / "s.npy", sample)
    assert np.array_equal(datafiles.decode(path, path.read_bytes(), LAYOUT), sample)
    path = npy(tmp_path / "t.npy", sample[None])
    assert datafiles.decode(path, path.read_bytes(), LAYOUT).shape == (2, 3)


def test_an_object_array_is_refused_without_unpickling(tmp_path):
    path = npy(tmp_path / "o.npy", np.array([{"a": 1}, None], dtype=object), allow_pickle=True)
    with pytest.raises(DataError, match=rf"{path} holds Python objects .*only unpickling could rebuild"):
        datafiles.decode(path, path.read_bytes(), LAYOUT)


def test_bytes_that_are_not_npy_are_refused(tmp_path):
    path = write(tmp_path / "g.npy", b"this is not numpy at all")
    with pytest.raises(DataError, match=rf"{path} is not an .npy file: .*NPY magic.*numpy.save"):
        datafiles.decode(path, path.read_bytes(), LAYOUT)


def _npz_bytes():
    buffer = io.BytesIO()
    np.savez(buffer, a=np.zeros(3))
    return buffer.getvalue()


def _npy_bytes(array, **kwargs):
    buffer = io.BytesIO()
    np.save(buffer, array, **kwargs)
    return buffer.getvalue()


# Issue 19, case 6: a text file named junk.npy was "Python objects, which only unpickling could rebuild"
@pytest.mark.parametrize("data, said", [
    (b"just some notes\n", "is not an .npy file: it does not start with the NPY magic .* it looks like text"),
    (pickle.dumps([1, 2]), "is not an .npy file: .* it looks like a Python pickle"),
    (_npz_bytes(), "is not an .npy file: .* it looks like a zip archive"),
    (bytes(range(256)), "is not an .npy file: .* it looks like binary data of another kind"),
    (b"\x93NUMPY\x09\x00\x10\x00{'descr': 1}\n", "has a bad .npy header: format version 9.0"),
    (b"\x93NUMPY\x01\x00\x10\x00{'descr': oops}\n", "has a bad .npy header"),
    (_npy_bytes(np.zeros((2, 3), np.float32))[:-5], r"is truncated: its header says 2x3 float32 \(24 bytes"),
    (_npy_bytes(np.array([1, None], dtype=object), allow_pickle=True), "holds Python objects"),
])
def test_a_refused_npy_says_what_the_file_is_not(tmp_path, data, said):
    path = write(tmp_path / "junk.npy", data)
    with pytest.raises(DataError, match=said) as caught:
        datafiles.decode(path, data, LAYOUT)
    if "objects" not in said:
        assert "unpickling" not in str(caught.value)


def test_an_empty_file_is_refused(tmp_path):
    path = write(tmp_path / "e.f32", b"")
    with pytest.raises(DataError, match=f"sample file {path} is empty"):
        datafiles.decode(path, b"", LAYOUT)


def test_raw_f32_decodes_and_a_wrong_count_or_a_torn_value_is_refused(tmp_path):
    sample = np.arange(6, dtype="<f4")
    path = write(tmp_path / "r.f32", sample.tobytes())
    assert np.array_equal(datafiles.decode(path, path.read_bytes(), LAYOUT), sample.reshape(2, 3))
    short = write(tmp_path / "s.f32", sample[:4].tobytes())
    with pytest.raises(DataError, match=r"holds 4 float32 values but input 'features' \(2x3 per sample"):
        datafiles.decode(short, short.read_bytes(), LAYOUT)
    torn = write(tmp_path / "t.f32", sample.tobytes()[:-1])
    with pytest.raises(DataError, match="not a whole number of 4-byte float32 values"):
        datafiles.decode(torn, torn.read_bytes(), LAYOUT)


def test_raw_bin_is_read_in_the_inputs_dtype(tmp_path):
    tokens = InputLayout("input_ids", (4,), "int64")
    path = write(tmp_path / "ids.bin", np.array([1, 2, 3, 4], dtype="<i8").tobytes())
    assert datafiles.decode(path, path.read_bytes(), tokens).tolist() == [1, 2, 3, 4]
    bf16 = InputLayout("x", (2,), "bfloat16")  # numpy has no bfloat16: raw files are float32, the engine casts
    path = write(tmp_path / "x.bin", np.array([1.5, 2.5], dtype="<f4").tobytes())
    assert datafiles.decode(path, path.read_bytes(), bf16).dtype == np.float32


def test_a_shape_that_does_not_fit_the_model_names_file_input_and_fix(tmp_path):
    path = npy(tmp_path / "w.npy", np.zeros((3, 2), dtype=np.float32))
    with pytest.raises(DataError, match=rf"{path} holds shape 3x2 but input 'features' \(2x3 per sample, float32\) "
                                        r"takes 2x3.*make-data --model"):
        datafiles.decode(path, path.read_bytes(), LAYOUT)


def test_floats_cannot_feed_token_ids_but_integers_can_feed_floats(tmp_path):
    tokens = InputLayout("input_ids", (2, 3), "int64")
    path = npy(tmp_path / "f.npy", np.zeros((2, 3), dtype=np.float32))
    with pytest.raises(DataError, match="holds float32 values but input 'input_ids'.*write int64 samples"):
        datafiles.decode(path, path.read_bytes(), tokens)
    path = npy(tmp_path / "u.npy", np.zeros((2, 3), dtype=np.uint8))
    assert datafiles.decode(path, path.read_bytes(), LAYOUT).dtype == np.uint8


def test_an_unknown_suffix_is_refused(tmp_path):
    path = write(tmp_path / "x.png", b"x")
    with pytest.raises(DataError, match="unknown type '.png'"):
        datafiles.decode(path, b"x", LAYOUT)


# ---- reading, layouts, batches
def test_read_file_returns_the_whole_file_cold_or_warm(tmp_path):
    path = write(tmp_path / "a.f32", bytes(range(256)) * 40)
    assert bytes(datafiles.read_file(path, cold=False)) == path.read_bytes()
    if hasattr(os, "posix_fadvise"):
        assert bytes(datafiles.read_file(path, cold=True)) == path.read_bytes()
    with pytest.raises(DataError, match="cannot be opened"):
        datafiles.read_file(tmp_path / "gone.f32", cold=False)


def test_memory_filesystems_and_platforms_without_fadvise_cannot_be_cold(tmp_path, monkeypatch):
    monkeypatch.setattr(datafiles, "filesystem_type", lambda directory: "tmpfs")
    cold, why = datafiles.can_drop_cache(tmp_path)
    assert not cold and "tmpfs" in why
    monkeypatch.delattr(datafiles.os, "posix_fadvise", raising=False)
    cold, why = datafiles.can_drop_cache(tmp_path)
    assert not cold and "posix_fadvise" in why


def test_layouts_come_from_the_engines_details_and_from_the_catalog():
    layout = datafiles.layout_from_details({"inputs": [{"name": "pixels", "shape": [8, 3, 32, 32],
                                                        "dtype": "float32"}]})
    assert layout == InputLayout("pixels", (3, 32, 32), "float32")
    assert datafiles.layout_for_catalog("mlp") == InputLayout("features", (512,), "float32")
    assert datafiles.layout_for_catalog("bert").dtype == "int64"
    with pytest.raises(DataError, match="did not report the model's inputs"):
        datafiles.layout_from_details({})
    with pytest.raises(DataError, match="unknown catalog model 'nope'"):
        datafiles.layout_for_catalog("nope")


def test_batches_take_consecutive_files_and_wrap_round():
    files = [f"f{i}" for i in range(5)]
    assert datafiles.batch_files(files, 0, 2) == ["f0", "f1"]
    assert datafiles.batch_files(files, 2, 2) == ["f4", "f0"]
    assert datafiles.batch_files(files, 1, 7) == ["f2", "f3", "f4", "f0", "f1", "f2", "f3"]
