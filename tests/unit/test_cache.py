"""The cache folder exported and quantized models live in (engines.cache)."""

import sys
from pathlib import Path

from engines import cache


def test_cache_dir_precedence(monkeypatch, tmp_path):
    monkeypatch.setenv("LABCONSOLE_CACHE", str(tmp_path / "explicit"))
    assert cache.cache_dir() == tmp_path / "explicit"
    monkeypatch.delenv("LABCONSOLE_CACHE")
    if sys.platform.startswith("linux"):
        monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
        assert cache.cache_dir() == tmp_path / "xdg" / "labconsole"
        monkeypatch.delenv("XDG_CACHE_HOME")
        assert cache.cache_dir() == Path.home() / ".cache" / "labconsole"


def test_atomic_write_leaves_no_temporary_files(monkeypatch, tmp_path):
    monkeypatch.setenv("LABCONSOLE_CACHE", str(tmp_path))
    target = cache.subdir("onnx") / "file.bin"
    cache.atomic_write_bytes(target, b"abc")
    cache.atomic_write_bytes(target, b"defg")
    assert target.read_bytes() == b"defg" and [p.name for p in target.parent.iterdir()] == ["file.bin"]
