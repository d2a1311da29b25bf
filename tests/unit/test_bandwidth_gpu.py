"""GPU copies of the bandwidth matrix (engines/topology/bandwidth_gpu.py through measure_links) driven by a fake of
the torch calls they make, whose copies advance a clock at chosen rates: the figures must come back as those rates,
against the right links, with peer-less pairs and unknown GPUs stated rather than measured through another path."""

import pytest

from engines.topology.bandwidth import measure_links
from engines.topology.bandwidth_gpu import bus_id
from tests.unit.test_bandwidth_fixtures import FakeTorch, switch_box

RATES = {("h2d", "pinned", "cuda:0"): 24.1, ("h2d", "pageable", "cuda:0"): 12.0,
         ("d2h", "pinned", "cuda:0"): 26.0, ("d2h", "pageable", "cuda:0"): 10.0,
         ("h2d", "pinned", "cuda:1"): 6.6, ("h2d", "pageable", "cuda:1"): 5.0,
         ("d2h", "pinned", "cuda:1"): 6.8, ("d2h", "pageable", "cuda:1"): 4.0,
         ("d2d", "cuda:0", "cuda:1"): 7.0, ("d2d", "cuda:1", "cuda:0"): 7.1}


def run(topo=None, buses=(3, 4), peers=((0, 1),)):
    torch = FakeTorch(RATES, list(buses), set(peers))
    seen = []
    result = measure_links(topo or switch_box(), quick=True, progress=seen.append, torch=torch)
    return result, {entry["id"]: entry for entry in result["entries"]}, torch, seen


def test_each_gpu_gets_pinned_and_pageable_copies_both_ways_at_the_rates_copied():
    result, entries, torch, seen = run()
    pinned = entries["h2d:pci:0000:03:00.0:pinned"]
    assert pinned["median_gbs"] == pytest.approx(24.1)
    assert pinned["src"] == "numa0" and pinned["dst"] == "pci:0000:03:00.0" and pinned["device"] == "cuda:0"
    assert pinned["theoretical_gbs"] == 31.5 and pinned["efficiency"] == pytest.approx(24.1 / 31.5)
    assert pinned["link_label"] == "PCIe Gen4 x16" and pinned["link_ids"][0] == "pcie:0000:03:00.0"
    assert "CUDA events" in pinned["method"] and "pinned" in pinned["method"]
    assert pinned["spread"]["repeats"] >= 3 and pinned["spread"]["interval_95"][0] == pytest.approx(24.1)
    assert entries["d2h:pci:0000:03:00.0:pageable"]["median_gbs"] == pytest.approx(10.0)
    assert entries["d2h:pci:0000:03:00.0:pageable"]["src"] == "pci:0000:03:00.0"
    slow = entries["h2d:pci:0000:04:00.0:pinned"]  # behind its Gen3 x8 link
    assert slow["theoretical_gbs"] == 7.9 and slow["link_label"] == "PCIe Gen3 x8"
    assert {kind for kind, *_ in torch.copies} == {"h2d", "d2h", "d2d"}
    assert torch.host_cache_emptied == 2 * 4  # before each host buffer: no pinned block reused from another GPU
    assert any("repeat" in text for text in seen)


def test_a_pair_without_peer_access_is_not_measured_through_the_host():
    _, entries, torch, _ = run()
    forward = entries["d2d:pci:0000:03:00.0->pci:0000:04:00.0"]
    assert forward["median_gbs"] == pytest.approx(7.0) and forward["variant"] == "peer"
    assert forward["theoretical_gbs"] == 7.9  # the two GPUs meet at the switch; cuda:1's x8 link is the limit
    back = entries["d2d:pci:0000:04:00.0->pci:0000:03:00.0"]
    assert back["median_gbs"] is None and back["spread"] is None and "peer access" in back["not_available"]
    assert ("d2d", "cuda:1", "cuda:0") not in torch.copies


def test_an_nvlink_pair_is_held_against_the_nvlink():
    _, entries, _, _ = run(switch_box(nvlink=True))
    forward = entries["d2d:pci:0000:03:00.0->pci:0000:04:00.0"]
    assert forward["link_ids"] == ["nvlink:pci:0000:03:00.0-pci:0000:04:00.0"] and forward["theoretical_gbs"] == 150.0


def test_a_gpu_torch_cannot_place_in_the_topology_is_measured_without_a_ceiling():
    result, entries, _, _ = run(buses=(3, None))
    unknown = entries["h2d:cuda:1:pinned"]
    assert unknown["median_gbs"] == pytest.approx(6.6)
    assert unknown["theoretical_gbs"] is None and unknown["efficiency"] is None and unknown["link_ids"] == []
    assert "not in the topology" in unknown["theoretical_not_available"]
    assert "cuda:1 links" in result["not_available"]


def test_no_gpu_means_no_copies_and_says_why():
    result, entries, _, _ = run(buses=())
    assert not [key for key in entries if key.startswith(("h2d", "d2h", "d2d"))]
    assert "no CUDA device" in result["not_available"]["gpu copies"]
    assert "2 GPU(s)" in result["not_available"]["gpu copies"]  # the topology lists two torch cannot use


def test_bus_id_is_the_pci_address_or_none():
    torch = FakeTorch(RATES, [0x3B, None])
    assert bus_id(torch, 0) == "0000:3b:00.0" and bus_id(torch, 1) is None
