"""Topology dicts of the contract's shape (docs/topology.md) for the bandwidth-matrix tests, and a fake of the torch
calls engines/topology/bandwidth_gpu.py makes.

The PCIe-switch box is laid out as nvidia-smi topo -m shows a 2-GPU server with both GPUs behind one PLX/Broadcom
switch (PIX between them): root port 0000:00:01.0 (Gen4 x16) → switch upstream 0000:01:00.0 → downstream ports
0000:02:00.0 / 0000:02:01.0 → GPUs 0000:03:00.0 / 0000:04:00.0; an NVMe drive on its own root port (Gen4 x4). The
hop inside the switch has no link attributes, as engines.topology.pcie reports it.
"""

from __future__ import annotations

import contextlib
import os
from types import SimpleNamespace

CPUS = ",".join(str(cpu) for cpu in sorted(os.sched_getaffinity(0)))  # NUMA 0 holds this machine's CPUs


def _pcie(child: str, parent: str, speed: float | None, width: int | None, gbs: float | None, note: str = "") -> dict:
    top = {"speed_gts": speed, "width": width} if speed else None
    return {"id": f"pcie:{child}", "kind": "pcie", "a": parent, "b": f"pci:{child}", "current": top, "max": top,
            "theoretical_gbs": gbs, "current_gbs": gbs, "state": "at-max" if speed else "unknown", "note": note}


def _node(node_id: str, kind: str, parent: str | None, **attrs) -> dict:
    return {"id": node_id, "kind": kind, "label": node_id, "parent": parent, "attrs": attrs}


def switch_box(nvlink: bool = False) -> dict:
    nodes = [
        _node("machine", "machine", None),
        _node("package0", "package", "machine"),
        _node("numa0", "numa", "package0", cpus=CPUS, caches={"L3": 32 * 1024 ** 2}),
        _node("hostbridge:0000:00", "host-bridge", "numa0", numa_node=0),
        _node("pci:0000:00:01.0", "pcie-root-port", "hostbridge:0000:00", bdf="0000:00:01.0", numa_node=0),
        _node("pci:0000:01:00.0", "pcie-switch", "pci:0000:00:01.0", bdf="0000:01:00.0", numa_node=0),
        _node("pci:0000:02:00.0", "pcie-bridge", "pci:0000:01:00.0", bdf="0000:02:00.0", numa_node=0),
        _node("pci:0000:02:01.0", "pcie-bridge", "pci:0000:01:00.0", bdf="0000:02:01.0", numa_node=0),
        _node("pci:0000:03:00.0", "gpu", "pci:0000:02:00.0", bdf="0000:03:00.0", numa_node=0, index=0, name="H100"),
        _node("pci:0000:04:00.0", "gpu", "pci:0000:02:01.0", bdf="0000:04:00.0", numa_node=0, index=1, name="H100"),
        _node("pci:0000:00:02.0", "pcie-root-port", "hostbridge:0000:00", bdf="0000:00:02.0", numa_node=0),
        _node("pci:0000:05:00.0", "nvme", "pci:0000:00:02.0", bdf="0000:05:00.0", numa_node=0, block="nvme0n1"),
    ]
    links = [
        {"id": "mem:numa0", "kind": "memory", "a": "package0", "b": "numa0", "current": None, "max": None,
         "theoretical_gbs": None, "current_gbs": None, "state": "unknown", "note": ""},
        _pcie("0000:00:01.0", "hostbridge:0000:00", None, None, None, "no link attributes in sysfs"),
        _pcie("0000:01:00.0", "pci:0000:00:01.0", 16.0, 16, 31.5),
        _pcie("0000:02:00.0", "pci:0000:01:00.0", None, None, None, "inside the PCIe switch"),
        _pcie("0000:02:01.0", "pci:0000:01:00.0", None, None, None, "inside the PCIe switch"),
        _pcie("0000:03:00.0", "pci:0000:02:00.0", 16.0, 16, 31.5),
        _pcie("0000:04:00.0", "pci:0000:02:01.0", 8.0, 8, 7.9),  # trained down: Gen3 x8
        _pcie("0000:00:02.0", "hostbridge:0000:00", None, None, None, "no link attributes in sysfs"),
        _pcie("0000:05:00.0", "pci:0000:00:02.0", 16.0, 4, 7.9),
    ]
    if nvlink:
        links.append({"id": "nvlink:pci:0000:03:00.0-pci:0000:04:00.0", "kind": "nvlink", "a": "pci:0000:03:00.0",
                      "b": "pci:0000:04:00.0", "current": None, "max": None, "theoretical_gbs": 150.0,
                      "current_gbs": None, "state": "unknown", "note": "6 NVLinks"})
    return {"schema": 1, "host": "box", "source": "fixture:switch-box", "nodes": nodes, "links": links,
            "gpu_matrix": None, "not_available": {}}


def two_numa(second_cpus: str = "64-127") -> dict:
    """A dual-socket layout whose second node's CPUs are not this machine's."""
    topo = {"schema": 1, "host": "dual", "source": "fixture:dual", "gpu_matrix": None, "not_available": {},
            "nodes": [_node("machine", "machine", None),
                      _node("numa0", "numa", "machine", cpus=CPUS, caches={"L3": 32 * 1024 ** 2}),
                      _node("numa1", "numa", "machine", cpus=second_cpus, caches={"L3": 32 * 1024 ** 2})],
            "links": []}
    return topo


# ---- a fake of the torch calls bandwidth_gpu makes: copies advance a clock by bytes ÷ a chosen rate
class FakeTensor:
    def __init__(self, torch: FakeTorch, size: int, device: str, pinned: bool = False, written: bool = False):
        self.torch, self.size, self.device, self.pinned, self.written = torch, size, device, pinned, written

    def pin_memory(self) -> FakeTensor:
        return FakeTensor(self.torch, self.size, self.device, True, written=True)  # a copy: every page written

    def copy_(self, src: FakeTensor, non_blocking: bool = False) -> FakeTensor:
        # an untouched pageable host buffer reads the kernel's zero page: a copy from it is not the link's figure
        assert src.device != "cpu" or src.written, "copied from a host buffer that was never written"
        if src.device == "cpu":
            key = ("h2d", "pinned" if src.pinned else "pageable", self.device)
        elif self.device == "cpu":
            key = ("d2h", "pinned" if self.pinned else "pageable", src.device)
        else:
            key = ("d2d", src.device, self.device)
        self.torch.copies.append(key)
        self.torch.clock += src.size / (self.torch.rates[key] * 1e9)
        return self


class FakeEvent:
    def __init__(self, torch: FakeTorch, enable_timing: bool = False):
        assert enable_timing, "bandwidth_gpu must ask for timing events"
        self.torch, self.at = torch, None

    def record(self) -> None:
        self.at = self.torch.clock

    def synchronize(self) -> None:
        assert self.at is not None

    def elapsed_time(self, end: FakeEvent) -> float:
        return (end.at - self.at) * 1e3  # milliseconds, as CUDA reports


class FakeCuda:
    def __init__(self, torch: FakeTorch, buses: list[int | None], peers: set[tuple[int, int]]):
        self.torch, self.buses, self.peers = torch, buses, peers

    def is_available(self) -> bool:
        return bool(self.buses)

    def device_count(self) -> int:
        return len(self.buses)

    def get_device_properties(self, index: int):
        bus = self.buses[index]
        if bus is None:
            return SimpleNamespace(name="GPU")
        return SimpleNamespace(name="GPU", pci_domain_id=0, pci_bus_id=bus, pci_device_id=0)

    def can_device_access_peer(self, a: int, b: int) -> bool:
        return (a, b) in self.peers

    def Event(self, enable_timing: bool = False) -> FakeEvent:  # noqa: N802 — torch's name
        return FakeEvent(self.torch, enable_timing)

    @contextlib.contextmanager
    def device(self, index: int):
        yield

    def synchronize(self, index: int | None = None) -> None:
        pass


class FakeTorch:
    uint8 = "uint8"
    __version__ = "fake"

    def __init__(self, rates: dict, buses: list[int | None], peers: set[tuple[int, int]] = frozenset()):
        self.rates, self.clock, self.copies, self.host_cache_emptied = rates, 0.0, [], 0
        self.cuda = FakeCuda(self, buses, set(peers))
        self._C = SimpleNamespace(_host_emptyCache=self._empty_host_cache)

    def _empty_host_cache(self) -> None:
        self.host_cache_emptied += 1

    def empty(self, size: int, dtype=None, device: str = "cpu") -> FakeTensor:
        return FakeTensor(self, size, device)

    def ones(self, size: int, dtype=None, device: str = "cpu") -> FakeTensor:
        return FakeTensor(self, size, device, written=True)


def test_fixture_topologies_are_coherent_graphs():
    """Every link joins two listed nodes and every parent exists: the other bandwidth tests rely on it."""
    for topo in (switch_box(), switch_box(nvlink=True), two_numa()):
        ids = {node["id"] for node in topo["nodes"]}
        assert all(node["parent"] in ids for node in topo["nodes"] if node["parent"] is not None)
        assert all(link["a"] in ids and link["b"] in ids for link in topo["links"])
        assert len({link["id"] for link in topo["links"]}) == len(topo["links"])
