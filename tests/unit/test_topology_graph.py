"""Topology discovery on captured/described sysfs trees: the right graph, localities, link rates and states."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from engines.topology import check_links_under_load, default_load, discover
from engines.topology.dot import to_dot
from engines.topology.pcie import gbs, parse_speed, parse_width
from engines.topology.sysfs import format_cpulist, parse_cpulist, parse_size
from engines.topology.text import render_tree
from tests.fixtures.topology.materialize import manifest, materialize

REPO = Path(__file__).resolve().parents[2]


def by_id(topology, node_id):
    return next(n for n in topology["nodes"] if n["id"] == node_id)


def link(topology, link_id):
    return next(x for x in topology["links"] if x["id"] == link_id)


def test_pcie_rates_follow_each_generations_encoding():
    assert gbs(2.5, 1) == pytest.approx(0.25)           # 8b/10b
    assert gbs(5.0, 16) == pytest.approx(8.0)
    assert gbs(8.0, 16) == pytest.approx(15.754, abs=1e-3)  # 128b/130b
    assert gbs(16.0, 16) == pytest.approx(31.508, abs=1e-3)
    assert gbs(64.0, 16) == pytest.approx(121.0)        # Gen6 FLIT: 242 of 256 bytes are data
    assert gbs(None, 16) is None
    assert parse_speed("16.0 GT/s PCIe") == 16.0 and parse_speed("8 GT/s") == 8.0 and parse_speed("Unknown") is None
    assert parse_width("16") == 16 and parse_width("0") is None and parse_width("255") is None


def test_sysfs_list_and_size_parsers():
    assert parse_cpulist("0-3,8,10-11\n") == [0, 1, 2, 3, 8, 10, 11]
    assert format_cpulist([0, 1, 2, 3, 8, 10, 11]) == "0-3,8,10-11"
    assert parse_size("32K") == 32768 and parse_size("20480K") == 20 << 20 and parse_size("junk") is None


def test_dual_socket_localities(tmp_path):
    topo = discover(str(materialize("dual-socket", tmp_path)), nvml=None)
    assert topo["schema"] == 1 and topo["source"] == "fixture:dual-socket" and topo["host"] == "dual-e5-2680"
    kinds = [n["kind"] for n in topo["nodes"]]
    assert kinds.count("package") == 2 and kinds.count("numa") == 2
    numa1 = by_id(topo, "numa1")
    assert numa1["parent"] == "package1"
    assert numa1["attrs"]["os_index"] == 1 and by_id(topo, "package1")["attrs"]["os_index"] == 1
    assert numa1["attrs"]["cpus"] == "8-15,24-31" and numa1["attrs"]["cores"] == 8 and numa1["attrs"]["smt"] == 2
    assert numa1["attrs"]["memory_bytes"] == 16777216 * 1024
    assert numa1["attrs"]["caches"] == {"L1d": 32768, "L1i": 32768, "L2": 262144, "L3": 20 << 20}
    assert numa1["attrs"]["cache_instances"]["L3"] == 1 and numa1["attrs"]["cache_instances"]["L2"] == 8
    assert numa1["attrs"]["distances"] == [21, 10]  # the SLIT row: remote first, local 10
    nvme = by_id(topo, "pci:0000:83:00.0")
    assert nvme["kind"] == "nvme" and nvme["attrs"]["numa_node"] == 1 and nvme["attrs"]["block"] == "nvme0n1"
    assert nvme["attrs"]["model"] == "INTEL SSDPEDMD400G4" and nvme["attrs"]["driver"] == "nvme"
    eth0 = by_id(topo, "pci:0000:02:00.0")
    assert eth0["kind"] == "nic" and eth0["attrs"]["numa_node"] == 0 and eth0["attrs"]["speed_mbps"] == 1000
    assert by_id(topo, "pci:0000:02:00.3")["attrs"]["speed_mbps"] is None  # down: -1 in sysfs, not a fake 0
    # the drive hangs under socket 1's host bridge, the NIC under socket 0's
    assert by_id(topo, "hostbridge:0000:80")["parent"] == "numa1"
    assert by_id(topo, "hostbridge:0000:00")["parent"] == "numa0"
    assert by_id(topo, "pci:0000:80:03.0")["kind"] == "pcie-root-port"
    nvme_link = link(topo, "pcie:0000:83:00.0")
    assert nvme_link["state"] == "at-max" and nvme_link["theoretical_gbs"] == pytest.approx(3.938, abs=1e-3)
    ib = link(topo, "pcie:0000:82:00.0")
    assert ib["state"] == "below-max-idle" and ib["current_gbs"] == pytest.approx(2.0) and "hwloc #653" in ib["note"]
    assert link(topo, "pcie:0000:80:03.0")["state"] == "unknown"  # root complex internal, not a wire
    assert not [x for x in topo["links"] if x["state"] == "low-under-load"]
    assert topo["gpu_matrix"] is None and "gpu_matrix" in topo["not_available"]
    json.dumps(topo)  # plain data


def test_gpu_box_tree_roles_and_trained_down_link(tmp_path):
    topo = discover(str(materialize("gpu-switch-box", tmp_path)), nvml=None)
    kinds = {}
    for n in topo["nodes"]:
        kinds.setdefault(n["kind"], []).append(n["id"])
    assert len(kinds["gpu"]) == 8 and len(kinds["pcie-switch"]) == 4 and len(kinds["pcie-root-port"]) == 5
    assert by_id(topo, "pci:0000:02:08.0")["attrs"]["port"] == "downstream"
    assert by_id(topo, "pci:0000:89:00.0")["attrs"]["numa_node"] == 1
    assert by_id(topo, "pci:0000:03:00.0")["attrs"]["numa_node"] == 0
    low = link(topo, "pcie:0000:89:00.0")
    assert low["state"] == "below-max-idle"
    assert low["current"] == {"speed_gts": 8.0, "width": 8} and low["max"] == {"speed_gts": 8.0, "width": 16}
    assert low["current_gbs"] == pytest.approx(7.877, abs=1e-3)
    assert link(topo, "pcie:0000:82:08.0")["note"].startswith("inside the PCIe switch")
    # no NVML: the matrix comes from the tree, with nvidia-smi's level names
    matrix = topo["gpu_matrix"]
    assert "sysfs" in matrix["source"]
    assert matrix["rows"][0] == ["X", "PIX", "PHB", "PHB", "SYS", "SYS", "SYS", "SYS"]
    assert matrix["rows"][6][7] == "PIX" and matrix["rows"][5][6] == "PHB"


def test_check_links_under_load_flags_only_links_that_stay_low(tmp_path):
    root = materialize("gpu-switch-box", tmp_path)
    topo = discover(str(root), nvml=None)
    under = manifest("gpu-switch-box")["under_load"]
    loaded = []

    class FakeLoad:
        """Writes the fixture's under-load readings while open (a GPU that trains up, one that does not)."""

        def __init__(self, lnk):
            self.bdf = lnk["id"].split(":", 1)[1]

        def __enter__(self):
            loaded.append(self.bdf)
            speed, width = under.get(self.bdf, (None, None))
            if speed:
                base = root / "sys/bus/pci/devices" / self.bdf
                (base / "current_link_speed").write_text(speed + "\n")
                (base / "current_link_width").write_text(f"{width}\n")
            return self

        def __exit__(self, *exc):
            return False

    check_links_under_load(topo, FakeLoad, root=str(root), hold_s=0.0)
    assert link(topo, "pcie:0000:03:00.0")["state"] == "recovered-under-load"
    flagged = link(topo, "pcie:0000:89:00.0")
    assert flagged["state"] == "low-under-load" and "FLAGGED" in flagged["note"]
    assert [x["id"] for x in topo["links"] if x["state"] == "low-under-load"] == \
        ["pcie:0000:85:00.0", "pcie:0000:89:00.0"]  # the drive's file never changes: it stays low too
    assert "pcie:0000:02:10.0" not in loaded and "0000:04:00.0" not in loaded  # at-max links are not loaded
    text = "\n".join(render_tree(topo))
    assert "2 link(s) flagged" in text and "low-under-load FLAGGED" in text
    assert 'color=red' in to_dot(topo)


def test_without_a_load_states_stay_idle_and_default_load_says_why(tmp_path):
    root = materialize("gpu-switch-box", tmp_path)
    topo = discover(str(root), nvml=None)
    check_links_under_load(topo, None, root=str(root))
    assert link(topo, "pcie:0000:89:00.0")["state"] == "below-max-idle"
    (root / "dev").mkdir(exist_ok=True)
    (root / "dev/nvme0n1").write_bytes(os.urandom(1 << 20))
    check_links_under_load(topo, default_load(topo, root=str(root)), root=str(root), hold_s=0.2)
    gpu = link(topo, "pcie:0000:89:00.0")
    assert gpu["state"] == "below-max-idle" and "not checked under load (a GPU link needs device copies" in gpu["note"]
    drive = link(topo, "pcie:0000:85:00.0")
    # The fixture's drive is a file: O_DIRECT either reads it (the sysfs reading stays low → flagged) or the
    # filesystem refuses O_DIRECT and the note says so; never silently "recovered".
    assert drive["state"] == "low-under-load" or "O_DIRECT" in drive["note"]


def test_nvme_load_reads_with_o_direct(tmp_path):
    from engines.topology.links_state import LoadUnavailable, nvme_read_load

    path = tmp_path / "blob"
    path.write_bytes(os.urandom(2 << 20))
    try:
        with nvme_read_load(str(path), chunk=1 << 16) as stats:
            import time
            time.sleep(0.2)
    except LoadUnavailable as exc:
        assert "O_DIRECT" in str(exc)
        pytest.skip(f"this filesystem refuses O_DIRECT: {exc}")
    assert stats["bytes"] > 2 << 20 and stats["error"] is None  # wrapped around at least once
    with pytest.raises(LoadUnavailable, match="cannot open"):
        with nvme_read_load(str(tmp_path / "missing")):
            pass


def test_vm_capture_matches_its_live_reading(tmp_path):
    topo = discover(str(materialize("vm", tmp_path)), nvml=None)
    assert by_id(topo, "numa0")["attrs"]["cpus"] == "0-1"
    assert by_id(topo, "machine")["attrs"]["cpu_model"] == "AMD EPYC"
    nic = by_id(topo, "pci:0000:00:03.0")
    assert nic["kind"] == "nic" and nic["attrs"]["ifname"] == "eth0" and nic["attrs"]["numa_node"] is None
    assert "-1" in nic["attrs"]["note"]
    disk = by_id(topo, "pci:0000:00:02.0")  # the virtio disk: not NVMe, but its block name is found
    assert disk["kind"] == "pcie-device" and disk["attrs"]["blocks"] == ["vda"]
    assert all(x["state"] == "unknown" for x in topo["links"])  # virtual bus: no link attributes, none invented


def test_bad_root_is_a_clear_error(tmp_path):
    with pytest.raises(NotADirectoryError, match="holding sys/ and proc/"):
        discover(str(tmp_path / "nope"), nvml=None)
    empty = discover(str(tmp_path), nvml=None)
    assert "pcie" in empty["not_available"] and "cpus" in empty["not_available"]


def _cli(*args):
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen")
    return subprocess.run([sys.executable, "-m", "console", "topology", *args], capture_output=True, text=True,
                          cwd=REPO, env=env, timeout=60)


def test_cli_json_dot_and_exit_codes(tmp_path):
    root = materialize("dual-socket", tmp_path)
    done = _cli("--root", str(root), "--json")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["schema"] == "labconsole.topology/1" and data["graph_schema"] == 1
    assert data["host"] == "dual-e5-2680" and {n["kind"] for n in data["nodes"]} >= {"nvme", "nic", "numa"}
    dot = _cli("--root", str(root), "--dot")
    assert dot.stdout.startswith("graph ") and '"pci:0000:83:00.0"' in dot.stdout
    text = _cli("--root", str(root))
    assert "NVMe nvme0n1" in text.stdout and "below-max-idle" in text.stdout
    bad = _cli("--root", str(tmp_path / "nothing"))
    assert bad.returncode == 2 and "holds no sys/" in bad.stderr


def test_live_json_agrees_with_lscpu_and_lspci():
    import shutil

    if not shutil.which("lscpu") or not shutil.which("lspci"):
        pytest.skip("lscpu or lspci is not installed (apt-get install util-linux pciutils)")
    if not os.path.isdir("/sys/bus/pci/devices"):
        pytest.skip("no /sys/bus/pci on this machine")
    done = _cli("--json")
    assert done.returncode in (0, 1), done.stderr
    topo = json.loads(done.stdout)
    fields = {f["field"].rstrip(":"): f["data"] for f in json.loads(
        subprocess.run(["lscpu", "-J"], capture_output=True, text=True, check=True).stdout)["lscpu"]}
    threads = sum(n["attrs"]["threads"] for n in topo["nodes"] if n["kind"] == "package")
    assert threads == int(fields["CPU(s)"])
    assert len([n for n in topo["nodes"] if n["kind"] == "package"]) == int(fields.get("Socket(s)", 1))
    assert len([n for n in topo["nodes"] if n["kind"] == "numa"]) == int(fields.get("NUMA node(s)", 1))
    assert by_id(topo, "machine")["attrs"]["cpu_model"] == fields["Model name"]
    lspci = {line.split()[0] for line in subprocess.run(["lspci", "-D"], capture_output=True, text=True,
                                                        check=True).stdout.splitlines() if line.strip()}
    assert {n["attrs"]["bdf"] for n in topo["nodes"] if "bdf" in n["attrs"]} == lspci


def test_capture_round_trip_reads_the_same_graph(tmp_path):
    from engines.topology.capture import capture
    from tests.fixtures.topology.materialize import write_tree

    if not os.path.isdir("/sys/devices/system/cpu"):
        pytest.skip("no /sys/devices/system/cpu on this machine")
    write_tree(capture("/"), tmp_path / "copy")
    live, copy = discover("/", nvml=None), discover(str(tmp_path / "copy"), nvml=None)

    def shape(topo):
        return ([(n["id"], n["kind"], n["parent"], {k: v for k, v in n["attrs"].items() if k != "host"})
                 for n in topo["nodes"] if n["kind"] != "machine"],
                [(x["id"], x["state"], x["current"], x["max"]) for x in topo["links"]])

    assert shape(copy) == shape(live)


def test_max_is_the_lower_end_and_gen6_says_how_it_counts():
    from engines.topology.pcie import link_for

    port = {"bdf": "0000:00:01.0", "parent": "hostbridge:0000:00", "class": 0x060400,
            "current": {"speed_gts": 8.0, "width": 16}, "max": {"speed_gts": 8.0, "width": 16}}
    card = {"bdf": "0000:01:00.0", "parent": "0000:00:01.0", "class": 0x030200,
            "current": {"speed_gts": 8.0, "width": 16}, "max": {"speed_gts": 16.0, "width": 16}}
    wire = link_for(card, port, "pcie-root-port")
    assert wire["max"] == {"speed_gts": 8.0, "width": 16} and "limited by the upstream port" in wire["note"]
    assert wire["theoretical_gbs"] == pytest.approx(15.754, abs=1e-3)
    gen6 = dict(card, current={"speed_gts": 64.0, "width": 16}, max={"speed_gts": 64.0, "width": 16})
    fast_port = dict(port, max={"speed_gts": 64.0, "width": 16})
    assert "FLIT" in link_for(gen6, fast_port, "pcie-root-port")["note"]


@pytest.mark.parametrize("name", ["vm", "dual-socket", "gpu-switch-box"])
def test_every_fixture_graph_keeps_the_contract(tmp_path, name):
    topo = discover(str(materialize(name, tmp_path)), nvml=None)
    ids = [n["id"] for n in topo["nodes"]]
    assert len(ids) == len(set(ids)) and ids[0] == "machine"
    assert all(n["parent"] in ids for n in topo["nodes"] if n["parent"] is not None)
    link_keys = {"id", "kind", "a", "b", "current", "max", "theoretical_gbs", "current_gbs", "state", "note"}
    for x in topo["links"]:
        assert set(x) >= link_keys and x["a"] in ids and x["b"] in ids, x
        assert x["state"] in ("at-max", "below-max-idle", "low-under-load", "recovered-under-load", "unknown")
        assert (x["theoretical_gbs"] is None) == (x["max"] is None or x["max"]["width"] is None), x
    for n in topo["nodes"]:
        if n["id"].startswith("pci:"):
            assert {"numa_node", "bdf", "vendor", "driver"} <= set(n["attrs"]), n
            assert n["attrs"]["numa_node"] is not None or n["attrs"]["note"], n  # None always says why
    assert {x["id"] for x in topo["links"] if x["kind"] == "pcie"} == {f"pcie:{i[4:]}" for i in ids
                                                                      if i.startswith("pci:")}


def test_cli_check_links_flags_a_drive_link_that_stays_low_and_exits_1(tmp_path):
    root = materialize("gpu-switch-box", tmp_path)
    idle = _cli("--root", str(root), "--check-links", "--json")  # no /dev/nvme0n1 in the tree: cannot load it
    assert idle.returncode == 0, idle.stderr
    drive = next(x for x in json.loads(idle.stdout)["links"] if x["id"] == "pcie:0000:85:00.0")
    assert drive["state"] == "below-max-idle" and "not checked under load (cannot read the drive" in drive["note"]
    (root / "dev").mkdir()
    (root / "dev/nvme0n1").write_bytes(os.urandom(1 << 20))
    loaded = _cli("--root", str(root), "--check-links")
    if "O_DIRECT reads of" in loaded.stdout or "with O_DIRECT" in loaded.stdout:
        pytest.skip("this filesystem refuses O_DIRECT")
    assert loaded.returncode == 1 and "FLAGGED" in loaded.stdout and "1 link(s) flagged" in loaded.stdout
    assert "load: O_DIRECT reads of" in loaded.stdout or "load: O_DIRECT reads of" in _cli("--root", str(root), "--check-links", "--json").stdout


def test_cli_cluster_prints_the_fleet_and_says_when_the_gatherer_is_missing(monkeypatch, capsys, tmp_path):
    import console.cluster.topology as fleet
    from console.cli import main

    seen = {}
    node_topology = discover(str(materialize("dual-socket", tmp_path)), nvml=None)

    def gather(address, timeout_s):
        seen.update(address=address, timeout_s=timeout_s)
        rows = [{"node_id": "n1", "address": "10.0.0.2", "is_head": True, "resources": {"CPU": 32}, "labels": {}},
                {"node_id": "n2", "address": "10.0.0.3", "is_head": False, "resources": {"CPU": 2}, "labels": {}}]
        answers = {"n1": {"host": "dual-e5-2680", "topology": node_topology}, "n2": {"error": "timed out after 5 s"}}
        return fleet.fleet_graph(address, rows, answers)  # engineer E's assembly, with one real node graph

    monkeypatch.setattr(fleet, "gather", gather)
    assert main(["topology", "--cluster", "head:6379", "--timeout", "5"]) == 0
    out = capsys.readouterr().out
    assert seen == {"address": "head:6379", "timeout_s": 5.0}
    assert "Package 1" in out and "NUMANode 1" in out and "NVMe nvme0n1" in out and "timed out after 5 s" in out
    monkeypatch.setitem(sys.modules, "console.cluster.topology", None)
    assert main(["topology", "--cluster", "head:6379"]) == 1
    assert "fleet topology is not available" in capsys.readouterr().err


def test_drive_read_path_falls_back_to_a_file_on_the_drives_filesystem(tmp_path):
    from engines.topology.links_state import LoadUnavailable, drive_read_path

    root = tmp_path / "root"
    (root / "sys/class/block/nvme0n1/nvme0n1p1").mkdir(parents=True)
    (root / "sys/class/block/nvme0n1/dev").write_text("259:0\n")
    (root / "sys/class/block/nvme0n1/nvme0n1p1/dev").write_text("259:1\n")
    (root / "proc/self").mkdir(parents=True)
    (root / "proc/self/mountinfo").write_text("30 1 259:1 / /data rw,relatime - ext4 /dev/nvme0n1p1 rw\n")
    (root / "data/sub").mkdir(parents=True)
    (root / "data/small").write_bytes(b"x" * 100)
    (root / "data/sub/big").write_bytes(b"x" * 4096)
    assert drive_read_path("nvme0n1", root=str(root), min_bytes=1024) == str(root / "data/sub/big")
    with pytest.raises(LoadUnavailable, match="no readable file of"):
        drive_read_path("nvme0n1", root=str(root), min_bytes=1 << 20)
    (root / "dev").mkdir()
    (root / "dev/nvme0n1").write_bytes(b"x" * 4096)  # the device node itself, when it opens, wins
    try:
        assert drive_read_path("nvme0n1", root=str(root), min_bytes=1024) == str(root / "dev/nvme0n1")
    except AssertionError:
        pytest.skip("this filesystem refuses O_DIRECT opens")


def test_an_accelerator_is_its_own_kind_and_other_functions_carry_their_class_name():
    from engines.topology.devices import classify

    def fn(cls: int, vendor: str = "0x1da3") -> dict:
        return {"bdf": "0000:17:00.0", "class": cls, "vendor": vendor, "device": "0x1020"}

    kind, label, attrs = classify(fn(0x120000), {}, {})
    assert kind == "accelerator" and label == "Habana accelerator [1da3:1020]" and attrs["name"] == label
    assert classify(fn(0x030200, "0x10de"), {}, {})[0] == "gpu"
    kind, label, _ = classify(fn(0xFFFF00, "0x1af4"), {}, {})
    assert kind == "pcie-device" and label == "Unassigned class [1af4:1020]"
    assert classify(fn(0x018000, "0x1af4"), {}, {})[1:] == ("Mass storage controller [1af4:1020]",
                                                            {"vendor_name": "Red Hat (virtio)"})
    assert classify(fn(0x0B4000, "0x1af4"), {}, {})[1] == "Class 0b40 [1af4:1020]"  # a class not in the table


def test_a_captured_tree_never_gets_the_live_machines_nvml(tmp_path, monkeypatch):
    """`topology --root DIR` describes DIR: GPUs and NVLinks of the machine running it must not be merged in."""
    import engines.topology.nvml as nvml_mod

    monkeypatch.setattr(nvml_mod, "load_pynvml", lambda *_: pytest.fail("the live NVML was loaded"))
    topo = discover(str(materialize("gpu-switch-box", tmp_path)))
    assert "captured tree" in topo["not_available"]["nvml"]


def test_a_link_that_cannot_be_read_under_load_is_unknown_not_flagged(tmp_path):
    root = materialize("gpu-switch-box", tmp_path)
    topo = discover(str(root), nvml=None)

    class Unreadable:
        """The device's speed file vanishes while loaded (a driver that hides it, a function being reset)."""

        def __init__(self, lnk):
            self.base = root / "sys/bus/pci/devices" / lnk["id"].split(":", 1)[1]

        def __enter__(self):
            (self.base / "current_link_speed").unlink(missing_ok=True)
            return self

        def __exit__(self, *exc):
            return False

    check_links_under_load(topo, Unreadable, root=str(root), hold_s=0.0)
    checked = link(topo, "pcie:0000:89:00.0")
    assert checked["state"] == "unknown" and "could not be read" in checked["note"]
    assert not [x for x in topo["links"] if x["state"] == "low-under-load"]
