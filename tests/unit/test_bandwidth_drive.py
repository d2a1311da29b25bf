"""A drive to host memory (engines/topology/bandwidth_drive.py): which topology node holds a directory, read from a
captured-shape sysfs tree, and a real O_DIRECT read of this machine's disk; a directory in memory (tmpfs, which
accepts O_DIRECT since Linux 6.6) is no drive, and the entry says so instead of measuring memory."""

import os
from pathlib import Path

import pytest

from engines.machine.errors import MachineError
from engines.topology.bandwidth import measure_links
from engines.topology.bandwidth_drive import drive_node
from engines.topology.bandwidth_paths import Graph
from tests.unit.test_bandwidth_fixtures import FakeTorch, switch_box

NVME_DIR = "devices/pci0000:00/0000:00:02.0/0000:05:00.0/nvme/nvme0"


def fake_sysfs(root: Path, directory: Path) -> Path:
    """sys/dev/block/MAJ:MIN of `directory`'s device → an NVMe namespace under PCI function 0000:05:00.0."""
    sys = root / "sys"
    namespace = sys / NVME_DIR / "nvme0n1"
    namespace.mkdir(parents=True)
    (namespace / "device").symlink_to("..")  # the controller: …/nvme/nvme0, below its PCI function
    dev = os.stat(directory).st_dev
    (sys / "dev" / "block").mkdir(parents=True)
    (sys / "dev" / "block" / f"{os.major(dev)}:{os.minor(dev)}").symlink_to(f"../../{NVME_DIR}/nvme0n1")
    (sys / "block").mkdir()
    (sys / "block" / "nvme0n1").symlink_to(f"../{NVME_DIR}/nvme0n1")
    return sys


def test_the_drive_is_found_by_its_block_name(tmp_path):
    sys = fake_sysfs(tmp_path / "root", tmp_path)
    node, disk, why = drive_node(str(tmp_path), Graph(switch_box()).nodes, str(sys), str(tmp_path / "none"))
    assert node == "pci:0000:05:00.0" and why == "" and disk.startswith("nvme0n1 (NVMe")


def test_the_drive_is_found_by_its_pci_function_when_the_node_has_no_block_name(tmp_path):
    sys = fake_sysfs(tmp_path / "root", tmp_path)
    topo = switch_box()
    for node in topo["nodes"]:
        node["attrs"].pop("block", None)
    assert drive_node(str(tmp_path), Graph(topo).nodes, str(sys), str(tmp_path / "none"))[0] == "pci:0000:05:00.0"
    topo["nodes"] = [node for node in topo["nodes"] if node["id"] != "pci:0000:05:00.0"]
    node, _, why = drive_node(str(tmp_path), Graph(topo).nodes, str(sys), str(tmp_path / "none"))
    assert node is None and "0000:05:00.0" in why and "does not list" in why


def test_an_o_direct_read_of_this_machines_disk(tmp_path):
    result = measure_links(switch_box(), quick=True, progress=None, storage_dir=str(tmp_path), torch=FakeTorch({}, []))
    drive = next(entry for entry in result["entries"] if entry["kind"] == "drive-read")
    if drive["not_available"] and "O_DIRECT" in drive["not_available"]:
        pytest.skip(f"this file system refuses O_DIRECT: {drive['not_available']}")
    assert drive["median_gbs"] > 0 and drive["variant"] == "o_direct" and drive["dst"] == "numa0"
    assert "O_DIRECT" in drive["method"] and drive["spread"]["repeats"] >= 3
    assert not list(tmp_path.iterdir())  # the test file is gone
    if drive["src"] is None:  # this machine's disk is not the fixture's NVMe
        assert result["not_available"]["drive-read node"]
        assert drive["theoretical_gbs"] is None and drive["theoretical_not_available"]


def test_a_directory_in_memory_is_no_drive_and_the_entry_says_so():
    base = Path("/dev/shm")
    if not base.is_dir() or not os.access(base, os.W_OK):
        pytest.skip("/dev/shm is not a writable tmpfs here")
    import tempfile

    with tempfile.TemporaryDirectory(dir=base) as directory:
        result = measure_links(switch_box(), quick=True, progress=None, storage_dir=directory,
                               torch=FakeTorch({}, []))
        drive = next(entry for entry in result["entries"] if entry["kind"] == "drive-read")
        assert drive["median_gbs"] is None and drive["spread"] is None  # tmpfs takes O_DIRECT since Linux 6.6
        assert "no drive to read" in drive["not_available"] and "memory" in drive["not_available"]
        assert not os.listdir(directory)


def test_no_directory_and_a_bad_directory(tmp_path):
    result = measure_links(switch_box(), quick=True, progress=None, torch=FakeTorch({}, []))
    assert "--storage DIR" in result["not_available"]["drive-read"]
    with pytest.raises(MachineError, match="does not exist"):
        measure_links(switch_box(), quick=True, progress=None, storage_dir=str(tmp_path / "gone"))
