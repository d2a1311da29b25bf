"""NVML side of topology through a fake pynvml: GPU index ↔ bdf, NVLink counts, the nvidia-smi topo -m matrix."""

from __future__ import annotations

import types
from types import SimpleNamespace

import pytest

from engines.topology import discover
from tests.fixtures.topology.materialize import manifest, materialize

LEVEL = {"PIX": 10, "PXB": 20, "PHB": 30, "NODE": 40, "SYS": 50}


class NVMLError(Exception):
    pass


def fake_nvml(gpus: list[str], matrix: list[list[str]], name: str, version: int, *, levels: list[list[str]] | None,
              no_nvlink: bool = False) -> types.ModuleType:
    """NVLinks from the NV# cells (each GPU lists its links to each peer, as NVML does from both ends)."""
    m = types.ModuleType("pynvml")
    m.calls = []
    links = {i: [gpus[j] for j, cell in enumerate(row) if cell.startswith("NV") for _ in range(int(cell[2:]))]
             for i, row in enumerate(matrix)}
    m.nvmlInit = lambda: m.calls.append("init")
    m.nvmlShutdown = lambda: m.calls.append("shutdown")
    m.nvmlDeviceGetCount = lambda: len(gpus)
    m.nvmlDeviceGetHandleByIndex = lambda i: i
    m.nvmlDeviceGetName = lambda h: name.encode()
    m.nvmlDeviceGetPciInfo = lambda h: SimpleNamespace(busId=("0000" + gpus[h].upper()).encode())

    def state(h, link):
        if no_nvlink or link >= 6:
            raise NVMLError("NotSupported")
        return 1 if link < len(links[h]) else 0

    m.nvmlDeviceGetNvLinkState = state
    m.nvmlDeviceGetNvLinkRemotePciInfo = lambda h, link: SimpleNamespace(busId="0000" + links[h][link])
    m.nvmlDeviceGetNvLinkVersion = lambda h, link: version

    def ancestor(a, b):
        if levels is None:
            raise NVMLError("NotSupported")
        return LEVEL[levels[a][b]]

    m.nvmlDeviceGetTopologyCommonAncestor = ancestor
    return m


@pytest.fixture
def box(tmp_path):
    return materialize("gpu-switch-box", tmp_path), manifest("gpu-switch-box")


def _pcie_levels(gpus):
    """The fake's PCIe levels: same switch PIX, same socket PHB, across sockets SYS (the fixture's tree)."""
    switch = [0, 0, 1, 1, 2, 2, 3, 3]
    return [["X" if i == j else "PIX" if switch[i] == switch[j] else "PHB" if i // 4 == j // 4 else "SYS"
             for j in range(len(gpus))] for i in range(len(gpus))]


def test_nvml_names_gpus_and_reproduces_the_dgx1_matrix(box):
    root, spec = box
    nv = spec["nvml"]
    fake = fake_nvml(spec["gpus"], nv["matrix"], nv["name"], nv["nvlink_version"], levels=_pcie_levels(spec["gpus"]))
    topo = discover(str(root), nvml=fake)
    assert fake.calls[0] == "init" and fake.calls[-1] == "shutdown"
    gpu7 = next(n for n in topo["nodes"] if n["id"] == "pci:0000:89:00.0")
    assert gpu7["attrs"]["index"] == 7 and gpu7["attrs"]["name"] == "Tesla V100-SXM2-32GB"
    assert gpu7["label"].startswith("GPU7")
    assert topo["gpu_matrix"]["rows"] == nv["matrix"]
    assert topo["gpu_matrix"]["gpus"][0].startswith("GPU0") and "NVML" in topo["gpu_matrix"]["source"]
    nvlinks = {x["id"]: x for x in topo["links"] if x["kind"] == "nvlink"}
    pair = nvlinks["nvlink:pci:0000:03:00.0-pci:0000:07:00.0"]  # GPU0–GPU2: NV1 on a DGX-1
    assert pair["current"]["width"] == 1 and pair["theoretical_gbs"] == 25.0
    double = nvlinks["nvlink:pci:0000:03:00.0-pci:0000:08:00.0"]  # GPU0–GPU3: NV2
    assert double["current"]["width"] == 2 and double["theoretical_gbs"] == 50.0
    assert len(nvlinks) == 16  # 8 GPUs × 6 links / 2 ends, in 16 GPU pairs (24 links)
    assert sum(x["current"]["width"] for x in nvlinks.values()) == 24
    assert "nvml" not in topo["not_available"]


def test_without_nvlink_the_matrix_shows_pcie_levels_from_nvml(box):
    root, spec = box
    levels = _pcie_levels(spec["gpus"])
    fake = fake_nvml(spec["gpus"], spec["nvml"]["matrix"], "V100", 2, levels=levels, no_nvlink=True)
    topo = discover(str(root), nvml=fake)
    assert not [x for x in topo["links"] if x["kind"] == "nvlink"]
    assert topo["gpu_matrix"]["rows"] == levels
    # and the tree-computed matrix (NVML without the ancestor call) agrees with NVML's levels
    fallback = fake_nvml(spec["gpus"], spec["nvml"]["matrix"], "V100", 2, levels=None, no_nvlink=True)
    again = discover(str(root), nvml=fallback)
    assert again["gpu_matrix"]["rows"] == levels and "sysfs" in again["gpu_matrix"]["source"]
    assert "TopologyCommonAncestor" in again["not_available"]["nvml_partial"]


def test_nvml_that_cannot_start_is_not_available_with_why(box):
    root, _ = box
    broken = types.ModuleType("pynvml")

    def init():
        raise NVMLError("Driver Not Loaded")

    broken.nvmlInit = init
    topo = discover(str(root), nvml=broken)
    assert "Driver Not Loaded" in topo["not_available"]["nvml"]
    assert len([n for n in topo["nodes"] if n["kind"] == "gpu"]) == 8  # sysfs still shows every GPU
    assert topo["gpu_matrix"]["rows"][0][1] == "PIX"


def test_gpus_on_nvswitches_are_nv18_to_each_other(box):
    """HGX H100 style: each GPU's 18 links go to NVSwitches (not on this fixture's PCI bus), none GPU to GPU."""
    root, spec = box
    gpus = spec["gpus"]
    switches = ["0000:f1:00.0", "0000:f2:00.0", "0000:f3:00.0", "0000:f4:00.0"]
    fake = fake_nvml(gpus, [["X"] * len(gpus)] * len(gpus), "NVIDIA H100 80GB HBM3", 6,
                     levels=_pcie_levels(gpus))
    fake.nvmlDeviceGetNvLinkState = lambda h, link: 1 if link < 18 else (_ for _ in ()).throw(NVMLError("NS"))
    fake.nvmlDeviceGetNvLinkRemotePciInfo = lambda h, link: SimpleNamespace(busId="0000" + switches[link % 4])
    topo = discover(str(root), nvml=fake)
    rows = topo["gpu_matrix"]["rows"]
    assert all(cell == "NV18" for i, row in enumerate(rows) for j, cell in enumerate(row) if i != j)
    switch_nodes = [n for n in topo["nodes"] if n["attrs"].get("nvswitch")]
    assert len(switch_nodes) == 4 and all(n["label"].startswith("NVSwitch") for n in switch_nodes)
    to_switch = [x for x in topo["links"] if x["kind"] == "nvlink" and x["a"] == "pci:0000:03:00.0"]
    assert sorted(x["current"]["width"] for x in to_switch) == [4, 4, 5, 5]  # 18 links over 4 switches
    assert sum(x["theoretical_gbs"] for x in to_switch) == pytest.approx(18 * 25.0)
    assert all("NVLink 4.0" in x["note"] for x in to_switch)
    ids = {n["id"] for n in topo["nodes"]}
    assert all(x["a"] in ids and x["b"] in ids for x in topo["links"])  # no link to a node that is not there


def test_nvml_version_codes_are_not_generations():
    """nvmlDeviceGetNvLinkVersion answers nvmlNvlinkVersion_t codes (nvml.h): 4 is NVLink 3.0, 6 is 4.0, 7 is 5.0."""
    from engines.topology.nvml import nvlink_rate

    assert nvlink_rate(2, "Tesla V100-SXM2-32GB") == ("2.0", 25.0)
    assert nvlink_rate(4, "NVIDIA A100-SXM4-80GB") == ("3.0", 25.0)
    assert nvlink_rate(6, "NVIDIA H100 80GB HBM3") == ("4.0", 25.0)
    assert nvlink_rate(7, "NVIDIA B200") == ("5.0", 50.0)
    assert nvlink_rate(7, "NVIDIA H200") == ("4.0", 25.0)  # a driver answering 5.0 for Hopper's NVLink 4
    assert nvlink_rate(9, "next") == (None, None) and nvlink_rate(None) == (None, None)
