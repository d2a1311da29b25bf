"""The Ray fleet level of the topology (console.cluster.topology.gather) on a real Ray cluster on this machine:
a head that takes no runs and two fake nodes (lab-a, lab-b; tests/lab_cluster.py).

Each node's discovery runs in a task pinned to that node, so what a node reports must come from the node: the
stand-in discoveries below read the node's own environment (LABCONSOLE_HOSTNAME, set per node) and would put the
wrong host in the graph if the task ran elsewhere. They travel to the nodes pickled by value (this module cannot
be imported there). The real engines.topology.discover runs too, on every node.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from lab_cluster import lab_cluster  # noqa: E402 — before Ray: it reads the token once

ray = pytest.importorskip("ray", reason="the cluster extra is not installed (pip install 'lab-console[cluster]')")

from console.cluster.topology import fleet_graph, gather  # noqa: E402

pytest.importorskip("ray.cloudpickle").register_pickle_by_value(sys.modules[__name__])


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    with lab_cluster(str(tmp_path_factory.mktemp("ray"))) as made:
        yield made


def _node_graph() -> dict:
    """A two-node stand-in graph of the machine the task runs on: a machine root and a GPU behind a PCIe link."""
    here = os.environ.get("LABCONSOLE_HOSTNAME") or "head"
    return {"schema": 1, "host": here, "source": "live",
            "nodes": [{"id": "machine", "kind": "machine", "label": here, "parent": None, "attrs": {"host": here}},
                      {"id": "pci:0000:01:00.0", "kind": "gpu", "label": "GPU", "parent": "machine",
                       "attrs": {"numa_node": 0, "bdf": "0000:01:00.0", "vendor": "0x10de", "driver": "nvidia"}}],
            "links": [{"id": "pcie:0000:01:00.0", "kind": "pcie", "a": "machine", "b": "pci:0000:01:00.0",
                       "current": {"speed_gts": 16.0, "width": 16}, "max": {"speed_gts": 16.0, "width": 16},
                       "theoretical_gbs": 31.5, "current_gbs": 31.5, "state": "at-max", "note": ""}],
            "gpu_matrix": {"gpus": ["GPU0"], "rows": [["X"]]}, "not_available": {"nvlink": f"none on {here}"}}


def _fails_on_lab_b_and_hangs_on_the_head() -> dict:
    here = os.environ.get("LABCONSOLE_HOSTNAME")
    if here == "lab-b":
        raise PermissionError("cannot read /sys/bus/pci/devices on lab-b")
    if here is None:  # the head
        time.sleep(60)
    return _node_graph()


def _discovery_here() -> bool:
    try:
        return callable(importlib.import_module("engines.topology").discover)
    except (ImportError, AttributeError):
        return False


def _by_id(graph: dict) -> dict:
    return {node["id"]: node for node in graph["nodes"]}


def test_each_node_describes_itself_under_the_fleet_root(lab):
    graph = gather(lab["address"], timeout_s=45, discover=_node_graph)
    nodes = _by_id(graph)
    assert nodes["fleet"]["kind"] == "fleet" and nodes["fleet"]["parent"] is None
    members = {n["attrs"]["host"]: n for n in graph["nodes"] if n["kind"] == "cluster-node"}
    assert len(members) == 3 and {"lab-a", "lab-b"} <= set(members)  # the head is a machine of the fleet too
    for host in ("lab-a", "lab-b"):
        member = members[host]
        assert member["id"] == f"cluster-node:{host}" and member["parent"] == "fleet"
        assert member["attrs"]["resources"]["CPU"] == 1 and member["attrs"]["ip"] == "127.0.0.1"
        assert member["attrs"]["not_available"] is None and member["attrs"]["gpu_matrix"]["rows"] == [["X"]]
        # the node's own subtree, ids prefixed, rooted at its cluster-node, read on that node (its own host name)
        machine = nodes[f"{host}/machine"]
        assert machine["parent"] == f"cluster-node:{host}" and machine["attrs"]["host"] == host
        assert member["attrs"]["reported_host"] == host
        assert nodes[f"{host}/pci:0000:01:00.0"]["parent"] == f"{host}/machine"
        pcie = next(link for link in graph["links"] if link["id"] == f"{host}/pcie:0000:01:00.0")
        assert (pcie["a"], pcie["b"], pcie["theoretical_gbs"]) == (f"{host}/machine", f"{host}/pci:0000:01:00.0",
                                                                  31.5)
        cluster = next(link for link in graph["links"] if link["id"] == f"cluster:{host}")
        assert (cluster["kind"], cluster["a"], cluster["b"]) == ("cluster", "fleet", f"cluster-node:{host}")
        assert cluster["theoretical_gbs"] is None  # the network is not measured: no made-up figure
        assert graph["not_available"][f"{host}/nvlink"] == f"none on {host}"
    assert len({n["id"] for n in graph["nodes"]}) == len(graph["nodes"])  # three copies, no clash


def test_a_failing_node_and_a_silent_node_stay_in_the_graph_with_the_reason(lab):
    started = time.monotonic()
    graph = gather(lab["address"], timeout_s=8, discover=_fails_on_lab_b_and_hangs_on_the_head)
    assert time.monotonic() - started < 30  # the head's hung task is cancelled, not waited for
    members = {n["attrs"]["host"]: n for n in graph["nodes"] if n["kind"] == "cluster-node"}
    assert members["lab-a"]["attrs"]["not_available"] is None and "lab-a/machine" in _by_id(graph)
    failed = members["lab-b"]["attrs"]["not_available"]
    assert failed.startswith("PermissionError") and "/sys/bus/pci/devices" in failed
    assert graph["not_available"]["lab-b"] == failed
    assert not any(n["id"].startswith("lab-b/") for n in graph["nodes"])
    (head,) = [n for n in members.values() if n["attrs"]["head"]]
    assert "did not answer within 8 s" in head["attrs"]["not_available"]


def test_the_real_discovery_runs_on_every_node(lab):
    graph = gather(lab["address"], timeout_s=45)
    members = {n["attrs"]["host"]: n for n in graph["nodes"] if n["kind"] == "cluster-node"}
    if not _discovery_here():  # the nodes run this checkout: the same answer there
        assert "no topology discovery" in members["lab-a"]["attrs"]["not_available"]
        return
    for host in ("lab-a", "lab-b"):
        assert members[host]["attrs"]["not_available"] is None, members[host]["attrs"]["not_available"]
        own = [n for n in graph["nodes"] if n["id"].startswith(f"{host}/")]
        roots = [n for n in own if n["parent"] == f"cluster-node:{host}"]
        assert [n["kind"] for n in roots] == ["machine"]
        assert all(n["parent"].startswith(f"{host}/") for n in own if n not in roots)
        assert any(n["kind"] == "numa" for n in own)


def test_two_nodes_with_one_host_name_get_distinct_ids():
    nodes = [{"node_id": f"{c * 12}", "labels": {"labconsole/host": "gpu-box"}, "resources": {"CPU": 8.0},
              "address": f"10.0.0.{i}", "is_head": i == 1} for i, c in ((1, "a"), (2, "b"))]
    graph = fleet_graph("10.0.0.1:6379", nodes, {"a" * 12: {"host": "gpu-box", "topology": {
        "nodes": [{"id": "machine", "kind": "machine", "label": "m", "parent": None, "attrs": {}}], "links": []}}})
    ids = [n["id"] for n in graph["nodes"]]
    assert ids == ["fleet", "cluster-node:gpu-box-aaaaaa", "gpu-box-aaaaaa/machine", "cluster-node:gpu-box-bbbbbb"]
    assert graph["not_available"] == {"gpu-box-bbbbbb": "no answer was recorded for this node"}


def test_the_topology_command_shows_the_fleet(lab, capsys):
    from console.cli import main

    assert main(["topology", "--cluster", lab["address"], "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["schema"] == "labconsole.topology/1" and document["source"] == f"cluster:{lab['address']}"
    hosts = {n["attrs"]["host"] for n in document["nodes"] if n["kind"] == "cluster-node"}
    assert {"lab-a", "lab-b"} <= hosts
    assert main(["topology", "--cluster", lab["address"]]) == 0
    tree = capsys.readouterr().out
    assert "lab-a" in tree and "lab-b" in tree
