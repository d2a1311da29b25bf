"""Which links a transfer crosses and what they promise (engines/topology/bandwidth_paths.py), on contract-shaped
topology dicts: the slowest physical link sets the ceiling, hops without a readable link do not count, an NVLink
pair bypasses PCIe, and a path with nothing to read says so instead of guessing."""

import pytest

from engines.topology.bandwidth_paths import Graph, ceiling, link_label
from tests.unit.test_bandwidth_fixtures import switch_box, two_numa

GPU0, GPU1, NVME = "pci:0000:03:00.0", "pci:0000:04:00.0", "pci:0000:05:00.0"


def ids(links):
    return [link["id"] for link in links]


def test_a_gpu_behind_a_switch_crosses_its_own_link_the_switch_hop_and_the_root_link():
    graph = Graph(switch_box())
    path = graph.device_to_host(GPU0)
    assert ids(path) == ["pcie:0000:03:00.0", "pcie:0000:02:00.0", "pcie:0000:01:00.0", "pcie:0000:00:01.0"]
    assert ceiling(path, "cuda:0") == (31.5, "")
    assert link_label(path[0]) == "PCIe Gen4 x16"


def test_the_slowest_link_sets_the_ceiling():
    graph = Graph(switch_box())
    path = graph.device_to_host(GPU1)  # its own link trained to Gen3 x8 under a Gen4 x16 root link
    assert ceiling(path, "cuda:1") == (7.9, "")
    assert link_label(path[0]) == "PCIe Gen3 x8"


def test_two_gpus_under_one_switch_meet_at_the_switch_not_the_root():
    links, how = Graph(switch_box()).between(GPU0, GPU1)
    assert how == "pcie"
    assert ids(links) == ["pcie:0000:03:00.0", "pcie:0000:02:00.0", "pcie:0000:02:01.0", "pcie:0000:04:00.0"]
    assert ceiling(links, "pair")[0] == 7.9


def test_an_nvlink_pair_uses_the_nvlink():
    links, how = Graph(switch_box(nvlink=True)).between(GPU1, GPU0)
    assert how == "nvlink" and ids(links) == ["nvlink:pci:0000:03:00.0-pci:0000:04:00.0"]
    assert ceiling(links, "pair") == (150.0, "") and link_label(links[0]) == "NVLink"


def test_a_path_with_no_readable_link_has_no_ceiling_and_says_why():
    topo = switch_box()
    for link in topo["links"]:
        if link["id"] == "pcie:0000:05:00.0":
            link.update(current=None, max=None, theoretical_gbs=None, note="a virtual PCI bus, as in a VM")
    value, why = ceiling(Graph(topo).device_to_host(NVME), "the drive")
    assert value is None and "pcie:0000:05:00.0" in why and "virtual" in why
    assert ceiling([], "cuda:7") == (None, "the topology shows no link for cuda:7")


def test_a_physical_link_without_a_rate_is_named_not_skipped():
    links = [{"id": "pcie:x", "kind": "pcie", "current": {"speed_gts": 16.0, "width": None},
              "max": {"speed_gts": 16.0, "width": None}, "theoretical_gbs": None, "note": "width unreadable"}]
    value, why = ceiling(links, "x")
    assert value is None and "pcie:x" in why and "width unreadable" in why


def test_numa_lookups_and_bus_ids():
    graph = Graph(two_numa())
    assert [index for index, _ in graph.numa_nodes()] == [0, 1]
    assert graph.numa_id(1) == "numa1" and graph.numa_id(5) is None
    box = Graph(switch_box())
    assert box.by_bdf("0000:04:00.0") == GPU1 and box.by_bdf("0000:99:00.0") is None and box.by_bdf(None) is None
    assert box.numa_of(GPU1) == 0 and box.numa_of("pci:nope") is None


def test_a_malformed_topology_is_refused_with_the_fix():
    with pytest.raises(ValueError, match="discover"):
        Graph({"nodes": "x"})
    with pytest.raises(ValueError, match="without an id"):
        Graph({"nodes": [{"kind": "gpu"}], "links": []})


def test_gpus_on_nvswitches_go_through_their_switch_links_and_the_smaller_gpu_sum_is_the_ceiling():
    """HGX/DGX: no GPU↔GPU NVLink, each GPU's links go to NVSwitches; a peer copy is not a PCIe copy."""
    topology = switch_box()
    for switch in ("pci:0000:f1:00.0", "pci:0000:f2:00.0"):
        topology["nodes"].append({"id": switch, "kind": "pcie-device", "label": "NVSwitch", "parent": "machine",
                                  "attrs": {"nvswitch": True}})
    for gpu, switch, gbs in ((GPU0, "f1", 100.0), (GPU0, "f2", 100.0), (GPU1, "f1", 100.0), (GPU1, "f2", 50.0)):
        topology["links"].append({"id": f"nvlink:{gpu}-{switch}", "kind": "nvlink", "a": gpu,
                                  "b": f"pci:0000:{switch}:00.0", "theoretical_gbs": gbs, "state": "unknown"})
    links, how = Graph(topology).between(GPU0, GPU1)
    assert how == "nvswitch" and len(links) == 4
    assert ceiling(links, "pair") == (150.0, "")  # GPU1's 100 + 50, not the 350 of all four, not PCIe's 7.9


def test_eight_gpus_share_the_matrix_budget():
    from engines.topology.bandwidth import FULL, _Matrix, planned_paths

    topology = switch_box()
    for index in range(6):  # 8 GPUs in all
        topology["nodes"].append({"id": f"pci:0000:{0x40 + index:02x}:00.0", "kind": "gpu", "label": "GPU",
                                  "parent": "machine", "attrs": {}})
    graph = Graph(topology)
    assert len(graph.of_kind("gpu")) == 8
    planned = planned_paths(graph)
    assert planned == len(graph.numa_nodes()) ** 2 + 32 + 56 + 1
    matrix = _Matrix(FULL, lambda _text: None, planned)
    assert matrix.cap_s == pytest.approx(FULL.budget_s / planned) and matrix.cap_s < FULL.cap_s
    assert _Matrix(FULL, lambda _text: None, 3).cap_s == FULL.cap_s  # a small machine keeps the full cap
