"""Hostile archives and bytes (engines.model_files.archives, detect, onnx_model): a zip that declares an absurd
expansion is refused before any member is read, whichever reader opens it; an unrecognised file's error names
what it is not, its size and its sha256, never its bytes."""

import hashlib
import os
import zipfile

import pytest
import torch
from model_file_samples import sample_files, spec_for

from engines import model_files
from engines.model_files import ModelFileError, UnsafeModelFile, archives


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    return sample_files(tmp_path_factory)


@pytest.fixture
def reads(monkeypatch):
    """Every member any zipfile reader opens, and every torch.jit.load / torch.export.load call."""
    opened = []
    real_open = zipfile.ZipFile.open

    def spy_open(self, name, mode="r", *args, **kwargs):
        if mode == "r":  # reading a member, not writing the test's own archive
            opened.append(getattr(name, "filename", name))
        return real_open(self, name, mode, *args, **kwargs)

    monkeypatch.setattr(zipfile.ZipFile, "open", spy_open)
    monkeypatch.setattr(torch.jit, "load", lambda *a, **k: opened.append("torch.jit.load"))
    monkeypatch.setattr(torch.export, "load", lambda *a, **k: opened.append("torch.export.load"))
    return opened


def bomb(path, marker_member: str, size: int = 64 << 20):
    """A zip whose one large member is `size` zero bytes, deflated (about 1000:1), beside a real marker member."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as archive:
        archive.writestr(marker_member, b"")
        archive.writestr("archive/data/0", bytes(size))
    return path


@pytest.mark.parametrize("marker_member, suffix", [("archive/code/__torch__.py", ".pt"),
                                                  ("archive/archive_format", ".pt2")])
@pytest.mark.parametrize("reader", ["detect", "inspect", "load", "format's own reader"])
def test_a_zip_bomb_is_refused_before_any_member_is_read(tmp_path, reads, marker_member, suffix, reader):
    from engines.model_files import pt2, torchscript

    path = bomb(tmp_path / f"bomb{suffix}", marker_member)
    assert os.path.getsize(path) < (1 << 20)  # under 1 MiB on disk, 64 MiB declared
    own = pt2.check_pt2_archive if suffix == ".pt2" else torchscript.torchscript_signature
    call = {"detect": model_files.detect_format, "inspect": model_files.inspect,
            "load": lambda p: model_files.load_torch(spec_for(p, trust_code=True), "cpu"),
            "format's own reader": own}[reader]
    with pytest.raises(UnsafeModelFile) as refused:
        call(path)
    message = str(refused.value)
    assert "member 2 of the archive declares 64.0 MiB" in message and "the limit is 200:1" in message
    assert "refused before anything was expanded" in message and "data/0" not in message
    assert reads == []


def test_the_total_is_held_to_what_this_machine_can_hold(tmp_path, reads, monkeypatch):
    """Members under the ratio limit one by one, but more in all than the memory available (made small here)."""
    import numpy as np

    path = tmp_path / "wide.pt"
    noisy = bytearray(4 << 20)
    noisy[:: 64] = np.random.default_rng(0).integers(1, 256, len(noisy[::64]), dtype=np.uint8).tobytes()
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("archive/code/__torch__.py", b"")
        for index in range(4):
            archive.writestr(f"archive/data/{index}", bytes(noisy))
    monkeypatch.setattr(archives, "available_bytes", lambda: 1 << 20)
    with pytest.raises(UnsafeModelFile, match=r"declare 16\.0 MiB in all, more than this machine can hold"):
        model_files.detect_format(path)
    assert reads == []
    monkeypatch.setattr(archives, "available_bytes", lambda: 1 << 30)
    assert model_files.detect_format(path) == "torchscript"


def test_real_archives_pass_the_limits(files):
    for kind in ("pt2", "seq_pt2", "script", "trace", "scaled"):
        with archives.open_archive(files[kind]) as archive:
            assert archive.namelist()


def test_an_unrecognised_file_is_named_by_size_and_hash_never_by_its_bytes(tmp_path):
    path = tmp_path / "secret.pt"
    data = b"TOKEN=sk-live-1234 " + bytes(range(256)) * 8
    path.write_bytes(data)
    with pytest.raises(ModelFileError) as err:
        model_files.detect_format(path)
    message = str(err.value)
    assert "secret.pt is not a TorchScript or torch.export archive (no zip signature), nor a pickle, nor an ONNX "\
           "model" in message
    assert f"{len(data):,} bytes, sha256 {hashlib.sha256(data).hexdigest()[:12]}" in message
    assert data[:8].hex(" ") not in message and "TOKEN" not in message and "sk-live" not in message


def test_a_zip_that_is_neither_lists_no_member_names(tmp_path):
    other = tmp_path / "other.pt"
    with zipfile.ZipFile(other, "w") as archive:
        archive.writestr("other/leaked_secret_name.txt", "hello")
    with pytest.raises(ModelFileError) as err:
        model_files.detect_format(other)
    assert "neither TorchScript nor a torch.export program" in str(err.value) and "1 members" in str(err.value)
    assert "leaked_secret_name" not in str(err.value)
