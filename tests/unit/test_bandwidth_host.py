"""Host memory per NUMA pair (engines/topology/bandwidth_host.py, bandwidth_membind.py): pages are placed and the
placement is checked with the kernel, the copy moves the bytes it counts, and pairs this machine cannot measure
(a node that is not there, CPUs the worker may not use, one NUMA node) are stated, not faked."""

import os
import platform
from pathlib import Path

import numpy
import pytest

from engines.machine.errors import Unavailable
from engines.topology.bandwidth import measure_links
from engines.topology.bandwidth_host import NodeCopy
from engines.topology.bandwidth_membind import allocate_on_node, pages_on_node
from engines.topology.sysfs import parse_cpulist
from tests.unit.test_bandwidth_fixtures import FakeTorch, switch_box, two_numa

MIB = 1024 ** 2
linux_numa = pytest.mark.skipif(platform.system() != "Linux" or platform.machine() not in ("x86_64", "aarch64"),
                                reason="set_mempolicy/move_pages are Linux syscalls with known numbers here")
ONE_NODE = not Path("/sys/devices/system/node/node1").exists()


def test_parse_cpulist_reads_the_kernel_format_and_names_a_bad_piece():
    assert parse_cpulist("0-3,8,10-11") == [0, 1, 2, 3, 8, 10, 11]
    assert parse_cpulist("") == []
    with pytest.raises(ValueError, match="'x'"):
        parse_cpulist("0,x")
    with pytest.raises(ValueError, match="backwards"):
        parse_cpulist("5-2")


@linux_numa
def test_pages_are_placed_on_the_node_and_the_kernel_says_so():
    cpus = sorted(os.sched_getaffinity(0))
    buffer, how = allocate_on_node(4 * MIB, 0, cpus)
    share, why = pages_on_node(buffer, 0)
    assert share == 1.0, why
    assert "pinned to node 0" in how and "MPOL_BIND" in how
    if ONE_NODE:
        assert pages_on_node(buffer, 1)[0] == 0.0


def test_the_copy_moves_every_byte_it_counts():
    copy = NodeCopy(sorted(os.sched_getaffinity(0)), 0, sorted(os.sched_getaffinity(0)), 2 * MIB, 0.001)
    try:
        source = numpy.frombuffer(copy._a_buf, dtype=numpy.float64)
        target = numpy.frombuffer(copy._c_buf, dtype=numpy.float64)
        source[:] = numpy.arange(source.size)
        target[:] = -1
        copy._pool.round()
        assert numpy.array_equal(source, target)  # every thread's slice, none left out
        assert copy.bytes_per_call == 2 * copy.array_bytes and copy.array_bytes >= 2 * MIB - 8 * copy.threads
        assert copy.once() > 0
    finally:
        copy.close()


def test_one_buffer_placed_elsewhere_is_refused_even_when_the_other_could_not_be_checked(monkeypatch):
    import engines.topology.bandwidth_host as host

    answers = iter([(None, "move_pages refused"), (0.5, "")])
    monkeypatch.setattr(host, "pages_on_node", lambda *_: next(answers))
    cpus = sorted(os.sched_getaffinity(0))
    with pytest.raises(Unavailable, match="only 50% of the sampled pages landed on node 0"):
        NodeCopy(cpus, 0, cpus, MIB, 0.001)


def test_a_reader_without_cpus_is_unavailable():
    with pytest.raises(Unavailable, match="no CPU of the reading node"):
        NodeCopy([], 0, [0], MIB, 0.001)


def test_one_numa_node_gives_the_local_figure_and_states_the_remote_one():
    result = measure_links(switch_box(), quick=True, progress=None, torch=_no_cuda())
    local = [entry for entry in result["entries"] if entry["kind"] == "host-memory"]
    assert [entry["id"] for entry in local] == ["host-memory:numa0->numa0"]
    entry = local[0]
    assert entry["variant"] == "local" and entry["median_gbs"] > 0 and entry["link_ids"] == ["mem:numa0"]
    assert entry["spread"]["repeats"] >= 3 and entry["spread"]["interval_95"][0] <= entry["median_gbs"]
    assert entry["theoretical_gbs"] is None and entry["efficiency"] is None
    assert "DIMM" in entry["theoretical_not_available"]
    assert "STREAM Copy" in entry["method"] and "quick size" in entry["method"]
    assert "one NUMA node" in result["not_available"]["host-memory remote"]


@pytest.mark.skipif(not ONE_NODE, reason="this machine has a node 1: the pair would be measured for real")
def test_pairs_this_machine_cannot_measure_are_stated_not_faked():
    result = measure_links(two_numa(), quick=True, progress=None, torch=_no_cuda())
    entries = {entry["id"]: entry for entry in result["entries"]}
    assert set(entries) == {f"host-memory:numa{a}->numa{b}" for a in (0, 1) for b in (0, 1)}
    assert entries["host-memory:numa0->numa0"]["median_gbs"] > 0
    remote = entries["host-memory:numa0->numa1"]  # node 1 does not exist: its pages land on node 0
    assert remote["variant"] == "remote" and remote["median_gbs"] is None
    assert "landed on node 1" in remote["not_available"]
    for memory in (0, 1):  # node 1's CPUs 64-127 are not this worker's
        assert "no CPU of the reading node" in entries[f"host-memory:numa1->numa{memory}"]["not_available"]


def test_a_topology_without_numa_nodes_says_so():
    topo = switch_box()
    topo["nodes"] = [node for node in topo["nodes"] if node["kind"] != "numa"]
    result = measure_links(topo, quick=True, progress=None, torch=_no_cuda())
    assert not [entry for entry in result["entries"] if entry["kind"] == "host-memory"]
    assert "no NUMA node" in result["not_available"]["host-memory"]


def _no_cuda():
    return FakeTorch({}, [])


def test_the_arrays_outgrow_the_nodes_whole_last_level_cache_not_one_slice():
    """An EPYC node has 8–12 L3 slices: 4× one slice would leave the 'memory' arrays partly in the caches."""
    from engines.topology.bandwidth import _llc

    node = {"attrs": {"caches": {"L2": 1 << 20, "L3": 32 << 20}, "cache_instances": {"L2": 16, "L3": 8}}}
    assert _llc(node) == 256 << 20
    assert _llc({"attrs": {"caches": {"L3": 32 << 20}}}) == 32 << 20  # one slice when the count is not known
