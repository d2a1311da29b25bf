"""Where spilled KV blocks go (engines.kvcache.block_store): .npy data files, fsync'd and read cold; host RAM."""

import os
from pathlib import Path

import numpy as np
import pytest

from engines.kvcache import block_store
from engines.kvcache.block_store import DirectoryStore, RamStore


@pytest.mark.parametrize("dtype", ["float32", "float16", "int16"])
def test_a_block_round_trips_through_a_plain_npy_file(tmp_path, dtype):
    store = DirectoryStore(str(tmp_path))
    block = (np.arange(2 * 2 * 1 * 2 * 8 * 4) % 251).astype(dtype).reshape(2, 2, 1, 2, 8, 4)
    store.put("abc", block)
    path = store.path / "abc.npy"
    assert store.path.parent == tmp_path and store.path.name.startswith("labconsole-kv-")
    assert np.array_equal(np.load(path, allow_pickle=False), block)  # data: loads with pickling refused
    assert store.bytes_written == path.stat().st_size and len(store.write_ns) == 1
    assert np.array_equal(store.get("abc"), block)
    assert store.bytes_read == path.stat().st_size and len(store.read_ns) == 1
    store.close()
    assert not store.path.exists()


def test_an_object_array_is_refused_rather_than_pickled(tmp_path):
    store = DirectoryStore(str(tmp_path))
    with pytest.raises(ValueError, match="pickle"):
        store.put("x", np.array([{"a": 1}], dtype=object))
    store.close()


def test_each_write_is_fsynced_inside_the_timed_span(tmp_path, monkeypatch):
    synced = []
    real = os.fsync
    monkeypatch.setattr(block_store.os, "fsync", lambda fd: synced.append(fd) or real(fd))
    store = DirectoryStore(str(tmp_path))
    store.put("a", np.zeros(16, np.float32))
    store.put("b", np.zeros(16, np.float32))
    assert len(synced) == 2 and len(store.write_ns) == 2
    store.close()


def test_reads_are_cold_where_the_os_can_drop_and_tell(tmp_path):
    store = DirectoryStore(str(tmp_path))
    if store.filesystem in ("tmpfs", "ramfs", "overlay") or block_store._libc() is None:
        store.close()
        pytest.skip(f"the page cache cannot be dropped or read here ({store.filesystem})")
    for key in "abc":
        store.put(key, np.ones(4096, np.float32))
    for _ in range(2):
        for key in "abc":
            store.get(key)
    state, reason = store.describe()["read_cache_state"], store.describe()["read_cache_reason"]
    assert store.reads == {"cold": 6, "warm": 0, "unknown": 0}, reason
    assert state == "cold" and "mincore" in reason
    open(store.path / "a.npy", "rb").read()  # a plain read fills the cache: the check sees it
    assert block_store._cached_state(store.path / "a.npy") == "warm"
    store.close()


def test_the_read_state_says_what_it_saw():
    assert block_store._read_state({"cold": 0, "warm": 0, "unknown": 0}, "ext4")[0] == "n/a"
    state, reason = block_store._read_state({"cold": 0, "warm": 3, "unknown": 0}, "tmpfs")
    assert state == "warm" and "tmpfs" in reason
    assert block_store._read_state({"cold": 1, "warm": 2, "unknown": 0}, "ext4") == (
        "mixed", "1 cold, 2 warm, 0 unknown of 3 block reads")


def test_an_unwritable_directory_says_so_with_the_fix(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    with pytest.raises(RuntimeError, match="Fix:.*--kv-offload ram"):
        DirectoryStore(str(blocker / "inside"))


def test_ram_keeps_private_copies():
    store = RamStore()
    block = np.ones(8, np.float32)
    store.put("a", block)
    block[:] = 5
    out = store.get("a")
    assert np.all(out == 1) and store.bytes_written == store.bytes_read == 32
    out[:] = 7
    assert np.all(store.get("a") == 1)
    assert store.describe()["target"] == "ram" and store.describe()["path"] is None


def test_a_dropped_store_removes_its_folder(tmp_path):
    store = DirectoryStore(str(tmp_path))
    folder = Path(store.path)
    store.put("a", np.zeros(4, np.float32))
    del store  # a failed run never reaches close(): the finalizer cleans up
    assert not folder.exists()
