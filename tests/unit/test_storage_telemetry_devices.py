"""engines.block_device: a data directory → the block device whose counters carry its traffic (partition → disk,
dm/md → its members, loop → its backing file, tmpfs → no device and why)."""

from __future__ import annotations

import os
from pathlib import Path

from engines import block_device


def sysfs(root: Path) -> Path:
    """/sys/dev/block links into /sys/devices, as the kernel lays them out."""
    sys = root / "sys"
    devices = sys / "devices" / "pci0000:00" / "nvme" / "nvme0"
    part = devices / "nvme0n1" / "nvme0n1p2"
    part.mkdir(parents=True)
    (part / "partition").write_text("2\n")
    (devices / "nvme0n1" / "device").mkdir()
    virt = sys / "devices" / "virtual" / "block"
    for name in ("dm-0", "md0", "loop3"):
        (virt / name).mkdir(parents=True)
    (sys / "dev" / "block").mkdir(parents=True)
    (sys / "block").mkdir()
    for link, target in (("259:2", part), ("259:0", devices / "nvme0n1"), ("253:0", virt / "dm-0"),
                         ("9:0", virt / "md0"), ("7:3", virt / "loop3")):
        os.symlink(target, sys / "dev" / "block" / link)
    for name, target in (("nvme0n1", devices / "nvme0n1"), ("dm-0", virt / "dm-0"), ("md0", virt / "md0"),
                         ("loop3", virt / "loop3")):
        os.symlink(target, sys / "block" / name)
    (devices / "nvme0n1" / "device" / "model").write_text("Lab NVMe 2TB\n")
    (devices / "nvme0n1" / "queue").mkdir()
    (devices / "nvme0n1" / "queue" / "rotational").write_text("0\n")
    (virt / "dm-0" / "slaves").mkdir()
    os.symlink(virt / "md0", virt / "dm-0" / "slaves" / "md0")  # LVM over RAID over a partition
    (virt / "md0" / "slaves").mkdir()
    os.symlink(part, virt / "md0" / "slaves" / "nvme0n1p2")
    (virt / "loop3" / "loop").mkdir()
    return sys


def test_a_partition_is_counted_on_its_whole_disk(tmp_path):
    info = block_device.describe_dev(259, 2, str(sysfs(tmp_path)), str(tmp_path / "none"))
    assert (info["device"], info["disk"], info["kind"]) == ("nvme0n1p2", "nvme0n1", "NVMe")
    assert info["model"] == "Lab NVMe 2TB" and info["rotational"] is False
    assert block_device.label(info) == "nvme0n1 (NVMe, Lab NVMe 2TB, partition nvme0n1p2)"


def test_stacked_devices_name_the_physical_disks_below(tmp_path):
    sys = str(sysfs(tmp_path))
    info = block_device.describe_dev(253, 0, sys, str(tmp_path / "none"))
    assert info["disk"] == "dm-0" and info["kind"] == "device-mapper" and info["physical"] == ["nvme0n1"]
    assert "over nvme0n1" in block_device.label(info)


def test_a_loop_device_names_its_backing_file_and_that_files_device(tmp_path):
    sys = sysfs(tmp_path)
    backing = tmp_path / "disk.img"
    backing.write_bytes(b"\0" * 16)
    (sys / "devices" / "virtual" / "block" / "loop3" / "loop" / "backing_file").write_text(f"{backing}\n")
    info = block_device.describe_dev(7, 3, str(sys), str(tmp_path / "none"))
    assert info["disk"] == "loop3" and info["backing_file"] == str(backing)


def test_tmpfs_and_other_anonymous_devices_say_why_there_is_no_disk(tmp_path):
    mountinfo = tmp_path / "mountinfo"
    mountinfo.write_text("22 1 0:27 / /dev/shm rw,nosuid shared:2 - tmpfs tmpfs rw\n"
                         "40 1 0:45 / /mnt/lab rw shared:9 - nfs4 filer:/lab rw\n")
    shm = block_device.describe_dev(0, 27, str(tmp_path / "sys"), str(mountinfo))
    assert shm["disk"] is None and shm["fstype"] == "tmpfs" and "memory" in shm["reason"]
    nfs = block_device.describe_dev(0, 45, str(tmp_path / "sys"), str(mountinfo))
    assert nfs["disk"] is None and "nfs4" in nfs["reason"] and "filer:/lab" in nfs["reason"]


def test_this_machine_resolves_its_own_directories(tmp_path):
    here = block_device.describe(tmp_path)
    assert here["dev"] and (here["disk"] or here["reason"])
    missing = block_device.describe(tmp_path / "absent")
    assert missing["disk"] is None and "cannot stat" in missing["reason"]
