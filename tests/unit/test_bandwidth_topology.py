"""The bandwidth matrix over engines.topology.discover's own graph of a captured DGX-1-like tree (T's
gpu-switch-box fixture with its fake pynvml), GPUs through the fake torch: each GPU is found by its PCI address,
held against its Gen3 x16 path, NVLink pairs against their NVLinks, and a pair with no peer access is stated."""

import pytest

from engines.topology import discover
from engines.topology.bandwidth import measure_links
from tests.fixtures.topology.materialize import manifest, materialize
from tests.unit.test_bandwidth_fixtures import FakeTorch
from tests.unit.test_topology_nvml import _pcie_levels, fake_nvml


@pytest.fixture(scope="module")
def dgx(tmp_path_factory):
    spec = manifest("gpu-switch-box")
    nv = spec["nvml"]
    root = materialize("gpu-switch-box", tmp_path_factory.mktemp("dgx"))
    topology = discover(str(root), nvml=fake_nvml(spec["gpus"], nv["matrix"], nv["name"], nv["nvlink_version"],
                                                  levels=_pcie_levels(spec["gpus"])))
    gpus = spec["gpus"]
    devices = [f"cuda:{i}" for i in range(len(gpus))]
    rates = {(direction, variant, device): rate for device in devices
             for direction, variant, rate in (("h2d", "pinned", 11.5), ("h2d", "pageable", 6.0),
                                              ("d2h", "pinned", 12.5), ("d2h", "pageable", 5.5))}
    rates.update({("d2d", a, b): 45.0 for a in devices for b in devices if a != b})
    peers = {(i, j) for i, row in enumerate(nv["matrix"]) for j, cell in enumerate(row) if cell.startswith("NV")}
    torch = FakeTorch(rates, [int(bdf.split(":")[1], 16) for bdf in gpus], peers)
    result = measure_links(topology, quick=True, progress=None, torch=torch)
    return result, {entry["id"]: entry for entry in result["entries"]}


def test_every_gpu_is_placed_and_held_against_its_pcie_path(dgx):
    result, entries = dgx
    assert not [key for key in result["not_available"] if key.startswith("cuda:")]  # all 8 found by bus id
    far = entries["h2d:pci:0000:89:00.0:pinned"]  # GPU7, behind a switch on the second socket
    assert far["device"] == "cuda:7" and far["src"] == "numa1" and far["median_gbs"] == pytest.approx(11.5)
    assert far["link_label"] == "PCIe Gen3 x16" and far["theoretical_gbs"] == pytest.approx(15.754)
    assert far["efficiency"] == pytest.approx(11.5 / 15.754)
    assert far["link_ids"][0] == "pcie:0000:89:00.0" and "pcie:0000:86:00.0" in far["link_ids"]
    assert "NUMA node 1" in far["method"]  # its node, whose CPUs this worker may not use
    assert len([e for e in entries.values() if e["kind"] in ("h2d", "d2h")]) == 8 * 4


def test_nvlink_pairs_use_their_nvlinks_and_other_pairs_say_why_not(dgx):
    _, entries = dgx
    double = entries["d2d:pci:0000:03:00.0->pci:0000:08:00.0"]  # GPU0–GPU3: NV2
    assert double["link_ids"] == ["nvlink:pci:0000:03:00.0-pci:0000:08:00.0"] and double["theoretical_gbs"] == 50.0
    assert double["median_gbs"] == pytest.approx(45.0) and double["link_label"] == "NVLink"
    across = entries["d2d:pci:0000:03:00.0->pci:0000:84:00.0"]  # GPU0–GPU5: SYS, no peer access
    assert across["median_gbs"] is None and "peer access" in across["not_available"]
    assert len([e for e in entries.values() if e["kind"] == "d2d"]) == 8 * 7
