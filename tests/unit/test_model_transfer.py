"""A model file sent to a node by content hash (console.cluster.model_transfer), with a stand-in for Ray's object
store: what the node keeps, what it refuses, and that a file it holds is not fetched again."""

from __future__ import annotations

import hashlib
import stat

import pytest

from console.cluster import ClusterError
from console.cluster.model_transfer import offer, receive


class FakeStore:
    """ray.put / ray.get over a dict, counting gets (a get is a transfer to the node)."""

    def __init__(self):
        self.objects, self.gets = {}, 0

    def put(self, data):
        ref = f"ref-{len(self.objects)}"
        self.objects[ref] = data
        return ref

    def get(self, ref):
        self.gets += 1
        return self.objects[ref]


@pytest.fixture
def model(tmp_path):
    path = tmp_path / "console" / "model.onnx"
    path.parent.mkdir()
    path.write_bytes(b"\x08\x07" + bytes(range(256)) * 40)
    return path


def test_the_node_keeps_a_checked_read_only_copy_under_the_files_hash(model, tmp_path):
    store = FakeStore()
    offered = offer(store, model)
    assert offered["sha256"] == hashlib.sha256(model.read_bytes()).hexdigest()
    assert offered["size"] == model.stat().st_size and offered["name"] == "model.onnx"
    copy = receive(store, offered, tmp_path / "node")
    assert copy == tmp_path / "node" / "received-models" / offered["sha256"] / "model.onnx"
    assert copy.read_bytes() == model.read_bytes()
    assert not copy.stat().st_mode & (stat.S_IWUSR | stat.S_IXUSR)  # data: neither writable nor executable
    assert store.gets == 1
    assert receive(store, offered, tmp_path / "node") == copy and store.gets == 1  # held already: not sent again


def test_a_damaged_transfer_is_refused_and_nothing_is_kept(model, tmp_path):
    store = FakeStore()
    offered = offer(store, model)
    store.objects[offered["ref"]] = b"tampered" + model.read_bytes()[8:]
    with pytest.raises(ValueError, match="arrived damaged"):
        receive(store, offered, tmp_path / "node")
    assert not list((tmp_path / "node").rglob("model.onnx"))


def test_a_name_is_never_a_path_on_the_node(model, tmp_path):
    store = FakeStore()
    offered = {**offer(store, model), "name": "../../escape.onnx"}
    copy = receive(store, offered, tmp_path / "node")
    assert copy.name == "escape.onnx" and copy.parent.name == offered["sha256"]
    assert not (tmp_path / "escape.onnx").exists()


@pytest.mark.parametrize("bad", [{"sha256": "x" * 64}, {"sha256": "../" + "a" * 61}, {"size": -1}])
def test_an_offer_with_a_bad_hash_or_size_is_refused_before_anything_is_fetched(model, tmp_path, bad):
    store = FakeStore()
    offered = {**offer(store, model), **bad}
    with pytest.raises(ValueError):
        receive(store, offered, tmp_path / "node")
    assert store.gets == 0 and not (tmp_path / "node").exists()


def test_the_console_refuses_to_send_a_file_over_the_limit_or_a_directory(model, tmp_path):
    with pytest.raises(ClusterError, match="over the .* GiB a run may send; copy it to the node"):
        offer(FakeStore(), model, limit_bytes=100)
    with pytest.raises(ClusterError, match="is not a file here"):
        offer(FakeStore(), tmp_path)
